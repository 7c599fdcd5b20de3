"""Write requests queue on the event loop, not in the thread pool.

Were writers to wait for their database's write lock inside pool threads, enough of them would
fill the pool, and work that the holder still needs a thread for could never run: a deadlock.
So each waits here, as a coroutine, on an asyncio lock per database; only the holder enters the
pool, where the database's own lock (`write_transaction`) is then free in this process. Other
processes still serialise on the database's lock itself.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import ParamSpec, TypeVar

from fastapi.concurrency import run_in_threadpool
from sqlalchemy import Engine

P = ParamSpec("P")
T = TypeVar("T")

# asyncio locks belong to one event loop: keep one set per loop (a server has one; test
# clients may start several).
_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def _gate(engine: Engine) -> asyncio.Lock:
    per_loop = _gates.setdefault(asyncio.get_running_loop(), {})
    key = engine.url.render_as_string(hide_password=False)
    gate = per_loop.get(key)
    if gate is None:
        gate = per_loop[key] = asyncio.Lock()
    return gate


@asynccontextmanager
async def write_turn(engine: Engine) -> AsyncIterator[None]:
    """This process's turn to write `engine`'s database: queued for on the loop, held for the
    block (in which the holder begins its `write_transaction`)."""
    async with _gate(engine):
        yield


async def run_writing(engine: Engine, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run `work` (which opens its own write transactions on `engine`) in the thread pool,
    after queueing on the loop like any writer of that database."""
    async with _gate(engine):
        return await run_in_threadpool(work, *args, **kwargs)
