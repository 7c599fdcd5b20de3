"""A request's transaction on a sandbox's database (app.api.transactions says when a route's
thread begins and ends it)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from sqlalchemy import Connection, Engine

from app.storage.database import write_transaction


def request_transaction(engine: Engine, write: bool) -> AbstractContextManager[Connection]:
    """The transaction, to begin: committed when its block ends, rolled back when it raises.
    One that may write holds the database's write lock (one writer at a time, across threads
    and processes); a read sees one consistent snapshot and never waits."""
    return write_transaction(engine) if write else engine.begin()
