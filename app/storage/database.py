"""Engines, and bringing a database to the current schema (platform migrations, sObject tables).

What differs between back ends (connection setup, how a transaction begins and takes the write
lock, extensions) is the back end's (app.storage.backends); this module says when it happens.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, inspect

from app.config import REPO_ROOT
from app.storage.backends import backend_for, backend_for_url
from app.storage.backends.common import SEARCH_PATH_OPTION, WRITE_OPTION
from app.storage.backends.python_functions import great_circle_distance, to_local_time
from app.storage.backends.sqlite import memory_engine
from app.storage.search_index import create_search_index, drop_search_index, search_index_exists
from app.storage.tables import TableSet

# SQL functions a back end may run in Python, importable from here as they always were.
__all__ = ["great_circle_distance", "to_local_time"]


def create_db_engine(
    url: str, *, must_exist: bool = False, template: str | None = None, **pool: Any
) -> Engine:
    """An engine on `url`, set up by the back end its scheme names. With `must_exist`, a
    database that is gone (its sandbox was deleted) fails to open instead of being made anew,
    empty. With `template`, the database is a copy-on-write sandbox over that template."""
    return backend_for_url(url).create_engine(url, must_exist=must_exist, template=template, **pool)


def database_key(engine: Engine) -> str:
    """Names one sandbox's database: its URL, and on a shared pool the schema path too."""
    path = engine.get_execution_options().get(SEARCH_PATH_OPTION, "")
    return f"{engine.url.render_as_string(hide_password=False)}#{path}"


_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()


def _process_write_lock(engine: Engine) -> threading.Lock:
    """One lock per database in this process, taken before the database's own write lock, so
    that waiting writers queue here (woken at once) instead of polling SQLite's busy handler
    or holding pooled connections while they wait."""
    key = database_key(engine)
    with _process_locks_guard:
        return _process_locks.setdefault(key, threading.Lock())


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that writes: one at a time per database, across threads and processes
    (SQLite: BEGIN IMMEDIATE; PostgreSQL: a transaction-scoped advisory lock). Committed when
    the block ends, rolled back when it raises.

    Serialising writers is what makes id allocation, upsert matching and reset race-free;
    readers never wait for it (WAL on SQLite, MVCC on PostgreSQL)."""
    with _process_write_lock(engine), engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            backend_for(conn.dialect.name).lock_writes(conn, database_key(engine))
            yield conn


def restrict_to_owner(engine: Engine) -> None:
    """Make a database's files readable by their owner only (0600), whatever mode they had:
    the platform database holds the sessions. A server keeps its own access rules."""
    backend_for(engine.dialect.name).restrict_to_owner(engine)


def migrate_platform(engine: Engine) -> None:
    """Run Alembic to head on the platform tables."""
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    with engine.begin() as connection:
        backend_for(engine.dialect.name).prepare_database(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def data_tables_exist(engine: Engine, tables: TableSet) -> bool:
    existing = set(inspect(engine).get_table_names())
    if not all(table.name in existing for _, table in tables.items()):
        return False
    # A database seeded before the search index existed is rebuilt like one with no tables.
    with engine.connect() as connection:
        return search_index_exists(connection, tables)


def recreate_data_tables(engine: Engine, tables: TableSet) -> None:
    with engine.begin() as connection:
        drop_search_index(connection, tables)
        tables.metadata.drop_all(connection)
        tables.metadata.create_all(connection)
        create_search_index(connection, tables)


@contextmanager
def platform_transaction(engine: Engine) -> Iterator[Connection]:
    """A short write transaction on the platform database, run within one thread-pool call.

    SQLite: its own file, whose writers serialise on its write lock (never held across an
    await, so waiting for it in a pool thread cannot starve the pool). PostgreSQL: the server's
    database, where row locks suffice and the sandbox write lock is not taken."""
    if backend_for(engine.dialect.name).one_writer:
        with write_transaction(engine) as conn:
            yield conn
    else:
        with engine.begin() as conn:
            yield conn


def memory_database(tables: TableSet, rows: dict[str, list[dict[str, Any]]]) -> Engine:
    """A private in-memory database holding `tables` filled with `rows` (by object name):
    computed rows the SOQL compiler reads like any table's (the Tooling API's). Its one
    connection is shared: its users take turns."""
    engine = memory_engine()
    with engine.begin() as connection:
        tables.metadata.create_all(connection)
        for name, table in tables.items():
            if rows.get(name):
                connection.execute(table.insert(), rows[name])
    return engine
