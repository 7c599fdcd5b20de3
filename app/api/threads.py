"""The request threads: where a request's synchronous work (its route in its transaction, a
session lookup) runs, off the event loop.

A plain executor, not anyio's `to_thread` (Starlette's `run_in_threadpool`): each anyio trip
looks up the running library, the loop's limiter and a cancel scope, in Python, on the event
loop; under load that came to a fifth of the loop's time on a small query. Here a trip is a
submit and a wake-up. As with anyio, a request cancelled while its work runs waits for the
work to end, so nothing it holds (a lease, a connection, a write turn) is let go under it.

Other thread work (the flusher, FastAPI's own synchronous dependencies, composite threads)
stays on anyio's pool, whose limiter the lifespan sizes to the same count.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_THREADS = 4


class RequestThreads:
    """A fixed number of threads, shared by every app of this process (the lifespan sizes it)."""

    def __init__(self, count: int = DEFAULT_THREADS) -> None:
        self._count = count
        self._executor: ThreadPoolExecutor | None = None

    def resize(self, count: int) -> None:
        """Run at most `count` pieces of work at once from now on (work already submitted
        finishes on the threads it has)."""
        if count == self._count:
            return
        old, self._executor, self._count = self._executor, None, count
        if old is not None:
            old.shutdown(wait=False)

    def _pool(self) -> ThreadPoolExecutor:
        executor = self._executor
        if executor is None:
            executor = self._executor = ThreadPoolExecutor(
                self._count, thread_name_prefix="localforce-request"
            )
        return executor

    async def run(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`work(*args, **kwargs)` on a request thread; its result, or what it raised."""
        submitted: Future[T] = self._pool().submit(work, *args, **kwargs)
        try:
            return await asyncio.wrap_future(submitted)
        except asyncio.CancelledError:
            # Cancelled before it started: it never will. Started: wait for it to end.
            if not submitted.cancel():
                await _ended(submitted)
            raise


async def _ended(submitted: Future[T]) -> None:
    """Once `submitted` has ended, however often the waiting task is cancelled meanwhile."""
    while not submitted.done():
        try:
            await asyncio.wrap_future(submitted)
        except asyncio.CancelledError:
            continue
        except Exception:  # its outcome is not this caller's any more
            return


REQUEST_THREADS = RequestThreads()


async def run_in_request_thread(work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    return await REQUEST_THREADS.run(work, *args, **kwargs)
