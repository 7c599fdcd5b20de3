"""Engines, and bringing a database to the current schema (platform migrations, sObject tables)."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text

from app.config import REPO_ROOT
from app.storage.search_index import (
    WILDCARD_FUNCTION,
    create_search_index,
    drop_search_index,
    search_index_exists,
    wildcard_match,
)
from app.storage.tables import TableSet


def to_local_time(value: str | None, zone: str) -> str | None:
    """SQLite has no time zones: convertTimezone() calls this Python function instead."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value).replace(tzinfo=UTC).astimezone(ZoneInfo(zone))
    return moment.replace(tzinfo=None).isoformat(sep=" ")


def great_circle_distance(
    lat1: float | None, lon1: float | None, lat2: float, lon2: float, radius: float
) -> float | None:
    """Haversine distance on a sphere of `radius`: SOQL's DISTANCE() on SQLite, which has no
    trigonometry of its own. Null when the record has no location."""
    if lat1 is None or lon1 is None:
        return None
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    half_dphi = math.radians(lat2 - lat1) / 2
    half_dlambda = math.radians(lon2 - lon1) / 2
    chord = math.sin(half_dphi) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(half_dlambda) ** 2
    return 2 * radius * math.asin(min(1.0, math.sqrt(chord)))


def _sqlite_pragmas(dbapi_connection: Any, connection_record: Any) -> None:
    dbapi_connection.create_function("lf_to_local", 2, to_local_time, deterministic=True)
    dbapi_connection.create_function("lf_distance", 5, great_circle_distance, deterministic=True)
    dbapi_connection.create_function(WILDCARD_FUNCTION, 2, wildcard_match, deterministic=True)
    cursor = dbapi_connection.cursor()
    # WAL lets readers run while a request writes; NORMAL sync is safe with WAL.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
    # pysqlite's own transaction handling opens a transaction only before the first write, so
    # a read-then-write request read outside any transaction. Switch it off: every transaction
    # begins with our BEGIN (see _sqlite_begin), reads included.
    dbapi_connection.isolation_level = None


# A connection with this execution option is a write transaction: it takes the database's
# write lock before its first statement (see write_transaction).
WRITE_OPTION = "localforce_write"
# On a PostgreSQL engine shared by sandboxes, the schemas a transaction reads through, first
# to last (see _postgres_begin).
SEARCH_PATH_OPTION = "localforce_search_path"
# PostgreSQL's extensions (citext) live in this schema, which holds no tables.
EXTENSION_SCHEMA = "localforce_ext"
# What a copy-on-write SQLite sandbox calls its attached template.
TEMPLATE_ALIAS = "tpl"


def _sqlite_begin(conn: Connection) -> None:
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


# A copy-on-write SQLite sandbox's connections keep their prepared statements, and a statement
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


def _postgres_search_path(dbapi_connection: Any, connection_record: Any) -> None:
    # Extensions live in a schema of their own (no tables), appended to every connection's
    # path: citext's operators must resolve wherever a sandbox's tables live.
    cursor = dbapi_connection.cursor()
    cursor.execute(
        "SELECT set_config('search_path', current_setting('search_path') || %s, false)",
        (f", {EXTENSION_SCHEMA}",),
    )
    cursor.close()
    dbapi_connection.commit()


def _postgres_begin(conn: Connection) -> None:
    path = conn.get_execution_options().get(SEARCH_PATH_OPTION)
    if path:
        # The sandbox of this transaction: its schema, then its template's (one shared pool
        # serves every sandbox, so the path is set per transaction).
        conn.exec_driver_sql(f"SET LOCAL search_path TO {path}, {EXTENSION_SCHEMA}")


def create_db_engine(
    url: str, *, must_exist: bool = False, template: str | None = None, **pool: Any
) -> Engine:
    """An engine on `url`. With `must_exist`, a SQLite file that is gone (its sandbox was
    deleted) fails to open instead of being made anew, empty. With `template` (SQLite), the
    file is a copy-on-write sandbox over that template, attached read-only."""
    if url.startswith("sqlite"):
        connect_args: dict[str, Any] = {"check_same_thread": False, "timeout": 30}
        path = make_url(url).database
        if (must_exist or template) and path:
            url = f"sqlite:///file:{path}?mode={'rw' if must_exist else 'rwc'}&uri=true"
        engine = create_engine(url, connect_args=connect_args)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        if template is not None:
            event.listen(engine, "connect", _attach_template(make_url(template).database or ""))
            event.listen(engine, "begin", _see_own_tables)
            event.listen(engine, "before_cursor_execute", _tag_schema_generation, retval=True)
        return engine
    engine = create_engine(url, pool_pre_ping=True, **pool)
    event.listen(engine, "connect", _postgres_search_path)
    event.listen(engine, "begin", _postgres_begin)
    return engine


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
            if conn.dialect.name == "postgresql":
                # Advisory locks are per database, and sandboxes share one: the key names
                # the sandbox.
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
                    {"key": database_key(engine)},
                )
            yield conn


# SQLite's companions of a database file (it creates them with the database file's mode).
_SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")


def restrict_to_owner(engine: Engine) -> None:
    """Make a SQLite database's files readable by their owner only (0600), whatever mode they
    had: the platform database holds the sessions. Other back ends keep their own access."""
    if engine.dialect.name != "sqlite" or not engine.url.database:
        return
    path = engine.url.database.removeprefix("file:").partition("?")[0]
    for suffix in _SQLITE_COMPANIONS:
        companion = Path(path + suffix)
        if companion.exists():
            companion.chmod(0o600)


def migrate_platform(engine: Engine) -> None:
    """Run Alembic to head on the platform tables."""
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            ensure_extensions(connection)
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def ensure_extensions(connection: Connection) -> None:
    """citext in EXTENSION_SCHEMA (moved there if an earlier version installed it elsewhere)."""
    schema = EXTENSION_SCHEMA
    connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
    current = connection.execute(
        text(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'citext'"
        )
    ).scalar_one_or_none()
    if current is None:
        connection.execute(text(f"CREATE EXTENSION IF NOT EXISTS citext WITH SCHEMA {schema}"))
    elif current != schema:
        connection.execute(text(f"ALTER EXTENSION citext SET SCHEMA {schema}"))


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
    if engine.dialect.name == "sqlite":
        with write_transaction(engine) as conn:
            yield conn
    else:
        with engine.begin() as conn:
            yield conn
