"""The SQLite back end: the embedded default. A database is a file; a copy-on-write sandbox is
a small file of its own tables with its template's file attached read-only.

Text compares case-insensitively by the NOCASE collation; the functions SQLite lacks (time
zones, trigonometry, wildcard words) are Python functions registered on every connection; the
search index is FTS5; a write transaction takes the file's write lock when it begins.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, Text, create_engine, event, make_url
from sqlalchemy.dialects import sqlite
from sqlalchemy.types import TypeEngine

from app.storage.backends.common import WRITE_OPTION, DateField
from app.storage.backends.python_functions import (
    great_circle_distance,
    to_local_time,
    wildcard_match,
)

# What a copy-on-write sandbox calls its attached template.
TEMPLATE_ALIAS = "tpl"
# The SQL names of the Python functions registered on every connection.
TO_LOCAL_FUNCTION = "lf_to_local"
DISTANCE_FUNCTION = "lf_distance"
WILDCARD_FUNCTION = "lf_sosl_wildcard"
# A database file's companions (SQLite creates them with the database file's mode).
_COMPANIONS = ("", "-wal", "-shm", "-journal")


# -- connections and transactions ------------------------------------------------------------


def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
    dbapi_connection.create_function(TO_LOCAL_FUNCTION, 2, to_local_time, deterministic=True)
    dbapi_connection.create_function(
        DISTANCE_FUNCTION, 5, great_circle_distance, deterministic=True
    )
    dbapi_connection.create_function(WILDCARD_FUNCTION, 2, wildcard_match, deterministic=True)
    cursor = dbapi_connection.cursor()
    # WAL lets readers run while a request writes; NORMAL sync is safe with WAL.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
    # pysqlite's own transaction handling opens a transaction only before the first write, so
    # a read-then-write request read outside any transaction. Switch it off: every transaction
    # begins with our BEGIN (see _begin), reads included.
    dbapi_connection.isolation_level = None


def _begin(conn: Connection) -> None:
    # IMMEDIATE takes the write lock at once (waiting for it up to the busy timeout): a
    # deferred transaction that read and then wrote would fail outright had another writer
    # committed in between.
    immediate = conn.get_execution_options().get(WRITE_OPTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _attach_template(path: str) -> Callable[[Any, Any], None]:
    """A connect hook that attaches a copy-on-write sandbox's template, read-only and
    immutable (a template never changes while a sandbox uses it), as `tpl`. Unqualified names
    resolve to the sandbox's own tables first, then to the template's."""
    uri = f"file:{path}?mode=ro&immutable=1"

    def attach(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.execute(f"ATTACH DATABASE ? AS {TEMPLATE_ALIAS}", (uri,))

    return attach


# A copy-on-write sandbox's connections keep their prepared statements, and a statement
# resolves each unqualified name once, when prepared: after a table is copied into the sandbox,
# one prepared before would go on reading the template's. So every statement's text carries the
# connection's schema generation, which moves whenever the sandbox's schema may have changed;
# a statement prepared under another schema is never reused.
_SCHEMA_SEEN = "localforce_schema_seen"
_SCHEMA_GENERATION = "localforce_schema_generation"


def _see_own_tables(conn: Connection) -> None:
    # Reading the sandbox's own schema first makes SQLite check it is current (another
    # connection may have copied a table in since): names then resolve as this snapshot has it.
    conn.exec_driver_sql("SELECT 1 FROM main.sqlite_master LIMIT 0").close()
    version = conn.exec_driver_sql("PRAGMA main.schema_version").scalar()
    if version != conn.info.get(_SCHEMA_SEEN):
        _new_generation(conn, seen=version)


def schema_changed(conn: Connection) -> None:
    """This connection changed the sandbox's schema (copied a table in): statements it prepared
    before are not reused, nor, after a rollback, those it prepares now."""
    _new_generation(conn, seen=None)  # None: the next transaction starts a generation too


def _new_generation(conn: Connection, seen: object) -> None:
    conn.info[_SCHEMA_SEEN] = seen
    conn.info[_SCHEMA_GENERATION] = conn.info.get(_SCHEMA_GENERATION, 0) + 1


def _tag_schema_generation(
    conn: Connection,
    cursor: Any,
    statement: str,
    parameters: Any,
    context: Any,
    executemany: bool,
) -> tuple[str, Any]:
    return f"{statement} /* schema {conn.info.get(_SCHEMA_GENERATION, 0)} */", parameters


def _engine(url: str, must_exist: bool, template: str | None) -> Engine:
    connect_args: dict[str, Any] = {"check_same_thread": False, "timeout": 30}
    path = make_url(url).database
    if (must_exist or template) and path:
        url = f"sqlite:///file:{path}?mode={'rw' if must_exist else 'rwc'}&uri=true"
    engine = create_engine(url, connect_args=connect_args)
    event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _begin)
    if template is not None:
        event.listen(engine, "connect", _attach_template(make_url(template).database or ""))
        event.listen(engine, "begin", _see_own_tables)
        event.listen(engine, "before_cursor_execute", _tag_schema_generation, retval=True)
    return engine


# -- SOQL functions --------------------------------------------------------------------------

_STRFTIME = {
    DateField.YEAR: "%Y",
    DateField.MONTH: "%m",
    DateField.DAY: "%d",
    DateField.DAY_OF_YEAR: "%j",
    DateField.HOUR: "%H",
    DateField.DAY_OF_WEEK: "%w",
}


# -- the back end --------------------------------------------------------------------------------


class SqliteBackend:
    name = "sqlite"
    # One writer at a time per file: short platform writes queue for the write lock up front.
    one_writer = True
    # Every SQLite transaction reads one snapshot already.
    snapshot_isolation: str | None = None

    def create_engine(
        self, url: str, *, must_exist: bool = False, template: str | None = None, **pool: Any
    ) -> Engine:
        # No pool settings: a file's connections are cheap, and a sandbox has its own engine.
        return _engine(url, must_exist, template)

    def lock_writes(self, conn: Connection, key: str) -> None:
        """Nothing: BEGIN IMMEDIATE took the file's write lock (see _begin)."""

    def prepare_database(self, conn: Connection) -> None:
        """Nothing: SQLite needs no extension."""

    def restrict_to_owner(self, engine: Engine) -> None:
        if not engine.url.database:
            return
        path = engine.url.database.removeprefix("file:").partition("?")[0]
        for suffix in _COMPANIONS:
            companion = Path(path + suffix)
            if companion.exists():
                companion.chmod(0o600)

    def settle_template(self, url: str) -> None:
        # Sandboxes attach a template read-only and immutable, which a WAL file beside it
        # would contradict: leave it in rollback-journal mode, checkpointed.
        with closing(sqlite3.connect(make_url(url).database or "", isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=DELETE")

    def case_insensitive_text(self) -> TypeEngine[str]:
        return Text(collation="NOCASE")

    def insert(self, table: Any) -> sqlite.Insert:
        return sqlite.insert(table)

    def date_field(self, field: DateField, value: str) -> str:
        return f"CAST(strftime('{_STRFTIME[field]}', {value}) AS INTEGER)"

    def modulo(self, dividend: str, divisor: str) -> str:
        return f"(({dividend}) % {divisor})"

    def day_only(self, value: str) -> str:
        return f"date({value})"

    def to_local(self, value: str, zone: str) -> str:
        return f"{TO_LOCAL_FUNCTION}({value}, {zone})"

    def distance(self, lat1: str, lon1: str, lat2: str, lon2: str, radius: str) -> str:
        return f"{DISTANCE_FUNCTION}({lat1}, {lon1}, {lat2}, {lon2}, {radius})"


SQLITE = SqliteBackend()
