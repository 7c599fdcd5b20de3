"""The request's transaction: begun and ended by the thread that runs its route.

A route's `conn` dependency (deps.ConnectionDep) hands out a PendingTransaction, not a
connection. The route is wrapped (`in_request_transaction`, applied by routing.SalesforceRouter)
so that one trip to the thread pool begins the transaction, runs the route and commits or rolls
back. So a pooled connection is only ever held by a thread that is using it: were connections
taken on one pool thread and used on another, threads waiting for a connection could fill the
pool while the requests holding connections waited for a thread to finish on, a deadlock. And a
request makes one trip to the pool, not three.

A request that may write first queues for its database's write turn on the event loop
(write_gate), and holds it until its transaction has ended.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import (
    AbstractContextManager,
    ExitStack,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError, OperationalError

from app.api.threads import run_in_request_thread
from app.api.write_gate import write_turn
from app.errors import InvalidSession
from app.sandbox.transactions import request_transaction

T = TypeVar("T")


@dataclass(frozen=True)
class PendingTransaction:
    """A request's transaction on a sandbox's database, not yet begun."""

    engine: Engine
    write: bool

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """The transaction: committed when the block ends, rolled back when it raises. One that
        may write holds the database's write lock; a read sees one consistent snapshot and
        never waits."""
        opening = request_transaction(self.engine, self.write)
        with ExitStack() as stack:
            try:
                conn = stack.enter_context(opening)
            except DBAPIError as error:
                # Its storage is gone: deleted (maybe by another worker) since the token was read.
                if error.connection_invalidated or isinstance(error, OperationalError):
                    raise InvalidSession() from None
                raise
            yield conn


Transaction = PendingTransaction | Connection  # a connection: a composite's, lent to a subrequest


def opened(transaction: Transaction) -> AbstractContextManager[Connection]:
    """The connection of a transaction: begun now if pending, or one already open (a composite
    subrequest's, lent by its composite), which its owner ends."""
    if isinstance(transaction, PendingTransaction):
        return transaction.begin()
    return nullcontext(transaction)


@asynccontextmanager
async def turn_for(transaction: Transaction | None) -> AsyncIterator[None]:
    """The write turn of a pending transaction that may write, held for the block."""
    if isinstance(transaction, PendingTransaction) and transaction.write:
        async with write_turn(transaction.engine):
            yield
    else:
        yield


def in_request_transaction(endpoint: Callable[..., T]) -> Callable[..., Any]:
    """A synchronous route, run as described above: its write turn taken on the loop, then one
    trip to the pool that begins its transaction, runs it and ends the transaction. Async
    routes are left as they are: they begin theirs where they run the work (see
    Subrequests.run)."""
    if inspect.iscoroutinefunction(endpoint):
        return endpoint

    @functools.wraps(endpoint)
    async def run(**kwargs: Any) -> T:
        # A request has one transaction, however many parameters name it.
        pending = next((v for v in kwargs.values() if isinstance(v, PendingTransaction)), None)
        async with turn_for(pending):
            return await run_in_request_thread(_run_in_transactions, endpoint, kwargs)

    return run


def _run_in_transactions(endpoint: Callable[..., T], kwargs: dict[str, Any]) -> T:
    with ExitStack() as stack:
        for name, value in kwargs.items():
            if isinstance(value, PendingTransaction):
                kwargs[name] = stack.enter_context(value.begin())
        return endpoint(**kwargs)
