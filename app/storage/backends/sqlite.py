"""The SQLite back end: the embedded default. A database is a file; a copy-on-write sandbox is
a small file of its own tables with its template's file attached read-only.

Text compares ignoring case by its key (text_key.py): SQLite's upper() for ASCII text, else a
Python function. The functions SQLite lacks (the key of other text, time zones, trigonometry,
wildcard words) are Python functions registered on every connection, which no schema object
(index, trigger, view) calls: the file stays one any SQLite tool can check and edit (keyed
fields store their keys in columns, app.storage.text_keys). The search index is FTS5; a write
transaction takes the file's write lock when it begins.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, closing, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    ColumnElement,
    Connection,
    Engine,
    Select,
    String,
    Table,
    Text,
    bindparam,
    column,
    create_engine,
    event,
    func,
    make_url,
    select,
    table,
    text,
)
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine.processors import str_to_datetime
from sqlalchemy.pool import StaticPool
from sqlalchemy.sql.expression import TableClause
from sqlalchemy.types import TypeEngine

from app.metadata.values import format_datetime
from app.storage.backends.common import (
    OVERLAY_OPTION,
    OWN_TABLES,
    WRITE_OPTION,
    DateField,
    Overlay,
    WireDatetimes,
    clone_name,
)
from app.storage.backends.python_functions import (
    great_circle_distance,
    to_local_time,
    wildcard_match,
)
from app.storage.backends.text_key import sql_text_key
from app.storage.search_spec import FieldGroup, SearchSpec

# What a copy-on-write sandbox calls its attached template.
TEMPLATE_ALIAS = "tpl"
# The page cache each sandbox connection keeps of its template, in KiB (SQLite's default is
# 2,000 per database). The template is immutable and sits in the OS page cache, so a page read
# again costs a copy, not a disk read: a small cache reads as fast (sandbox / full-org median
# 1.02 in bench.query_latency) and keeps hundreds of pooled sandboxes' memory bounded (256 that
# had each scanned 22,000 rows: 886 MB RSS with the default, 425 MB with this).
TEMPLATE_CACHE_KIB = 256
# The SQL names of the Python functions registered on every connection.
TO_LOCAL_FUNCTION = "lf_to_local"
DISTANCE_FUNCTION = "lf_distance"
WILDCARD_FUNCTION = "lf_sosl_wildcard"
TEXT_KEY_FUNCTION = "lf_text_key"
# The column an expression index of a text key (as text_key() spells it) is on.
_KEYED_COLUMN = re.compile(TEXT_KEY_FUNCTION + r'\("((?:[^"]|"")+)"\) END\)$')
# A database file's companions (SQLite creates them with the database file's mode).
_COMPANIONS = ("", "-wal", "-shm", "-journal")


# -- connections and transactions ------------------------------------------------------------


def _register_functions(dbapi_connection: Any, connection_record: Any) -> None:
    dbapi_connection.create_function(TO_LOCAL_FUNCTION, 2, to_local_time, deterministic=True)
    dbapi_connection.create_function(
        DISTANCE_FUNCTION, 5, great_circle_distance, deterministic=True
    )
    dbapi_connection.create_function(WILDCARD_FUNCTION, 2, wildcard_match, deterministic=True)
    dbapi_connection.create_function(TEXT_KEY_FUNCTION, 1, sql_text_key, deterministic=True)


def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
    _register_functions(dbapi_connection, connection_record)
    cursor = dbapi_connection.cursor()
    # WAL lets readers run while a request writes; NORMAL sync is safe with WAL.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
    # pysqlite's own transaction handling opens a transaction only before the first write, so
    # a read-then-write request read outside any transaction. Switch it off: every transaction
    # begins with our BEGIN (see _begin), reads included.
    dbapi_connection.isolation_level = None


def driver_connection(conn: Connection) -> Any:
    """The sqlite3 connection under a SQLAlchemy one."""
    return conn.connection.dbapi_connection


def _begin(conn: Connection) -> None:
    # IMMEDIATE takes the write lock at once (waiting for it up to the busy timeout): a
    # deferred transaction that read and then wrote would fail outright had another writer
    # committed in between.
    immediate = conn.get_execution_options().get(WRITE_OPTION, False)
    # On the driver's connection: a statement through SQLAlchemy costs more than the BEGIN.
    driver_connection(conn).execute("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _attach_template(path: str) -> Callable[[Any, Any], None]:
    """A connect hook that attaches a copy-on-write sandbox's template, read-only and
    immutable (a template never changes while a sandbox uses it), as `tpl`. Unqualified names
    resolve to the sandbox's own tables first, then to the template's."""
    uri = f"file:{path}?mode=ro&immutable=1"

    def attach(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.execute(f"ATTACH DATABASE ? AS {TEMPLATE_ALIAS}", (uri,))
        dbapi_connection.execute(f"PRAGMA {TEMPLATE_ALIAS}.cache_size = -{TEMPLATE_CACHE_KIB}")

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
    driver = driver_connection(conn)
    driver.execute("SELECT 1 FROM main.sqlite_master LIMIT 0").close()
    version = driver.execute("PRAGMA main.schema_version").fetchone()[0]
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


def memory_engine() -> Engine:
    """A private in-memory database on one connection (its users take turns): what the
    Tooling API's rows are queried in, with the SOQL functions registered."""
    engine = create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )
    event.listen(engine, "connect", _register_functions)
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


# -- the search index: FTS5 --------------------------------------------------------------------

# bm25 column weights, in the same proportions as PostgreSQL's default ts_rank weights for its
# four groups (1.0, 0.4, 0.2, 0.1): a match in a name counts ten times one in a body.
BM25_WEIGHTS = {FieldGroup.NAME: 10.0, FieldGroup.EMAIL: 4.0, FieldGroup.PHONE: 2.0}
DEFAULT_BM25_WEIGHT = 1.0
FTS5_TOKENIZER = "porter unicode61 remove_diacritics 0"


def _fts_name(spec: SearchSpec) -> str:
    return f"{spec.table}_fts"


def _quote(connection: Connection, name: str) -> str:
    return connection.dialect.identifier_preparer.quote(name)


def _fts_table(spec: SearchSpec) -> TableClause:
    """The FTS5 table as a FROM: `rowid`, `rank`, the hidden column named like the table (the
    left side of MATCH) and the indexed fields."""
    name = _fts_name(spec)
    return table(
        name, column("rowid"), column("rank"), column(name), *(column(n) for n in spec.names())
    )


def _content_rowids(spec: SearchSpec) -> TableClause:
    """The data table seen through its rowid, which the FTS5 rows point at."""
    return table(spec.table, column("rowid"), column("Id"))


def _index_ddl(connection: Connection, spec: SearchSpec) -> list[str]:
    """One FTS5 external-content table over the searched fields, porter-stemmed, kept in sync
    by triggers on the data table; ranked by bm25 with the weights stored as its `rank`."""
    q = _quote
    fts, content = q(connection, _fts_name(spec)), q(connection, spec.table)
    names = [q(connection, name) for name in spec.names()]
    columns = ", ".join(names)
    new_values = ", ".join(f"new.{name}" for name in names)
    old_values = ", ".join(f"old.{name}" for name in names)
    insert_new = f"INSERT INTO {fts}(rowid, {columns}) VALUES (new.rowid, {new_values});"
    delete_old = (
        f"INSERT INTO {fts}({fts}, rowid, {columns}) VALUES ('delete', old.rowid, {old_values});"
    )
    weights = ", ".join(
        str(BM25_WEIGHTS.get(field.group, DEFAULT_BM25_WEIGHT)) for field in spec.fields
    )
    trigger = _fts_name(spec)
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({columns}, content='{spec.table}', "
        f"content_rowid='rowid', tokenize='{FTS5_TOKENIZER}')",
        f"INSERT INTO {fts}({fts}, rank) VALUES ('rank', 'bm25({weights})')",
        f"CREATE TRIGGER {q(connection, trigger + '_ai')} AFTER INSERT ON {content} "
        f"BEGIN {insert_new} END",
        f"CREATE TRIGGER {q(connection, trigger + '_ad')} AFTER DELETE ON {content} "
        f"BEGIN {delete_old} END",
        # Only a change to an indexed field reindexes: a soft delete (IsDeleted) does not.
        f"CREATE TRIGGER {q(connection, trigger + '_au')} AFTER UPDATE OF {columns} ON {content} "
        f"BEGIN {delete_old} {insert_new} END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


class Fts5Syntax:
    """An FTS5 query: quoted phrases, AND/OR/NOT, and a column filter when the search is
    limited to some fields (IN NAME/EMAIL/PHONE/SIDEBAR FIELDS)."""

    def __init__(self, columns: tuple[str, ...] | None) -> None:
        self.columns = columns

    def phrase(self, words: Sequence[str]) -> str:
        return '"' + " ".join(words) + '"'

    def all_of(self, parts: Sequence[str]) -> str:
        return "(" + " AND ".join(parts) + ")"

    def any_of(self, parts: Sequence[str]) -> str:
        return "(" + " OR ".join(parts) + ")"

    def but_not(self, left: str, right: str) -> str:
        return f"({left} NOT {right})"

    def query(self, body: str) -> str:
        if self.columns is None:
            return body
        return "{" + " ".join(self.columns) + "} : " + body


# -- copy-on-write sandboxes -------------------------------------------------------------------


def _copy_table(conn: Connection, overlay: Overlay, table: Table) -> None:
    """Replay the template's DDL for the table (its indexes, its FTS5 index and triggers) in
    the sandbox's file, with the rows under the same rowids (scan order, and the search index's
    row addresses, stay as they were)."""
    name, fts = table.name, f"{table.name}_fts"
    source = overlay.template
    ddl = conn.execute(
        text(
            f"SELECT type, tbl_name, sql FROM {source}.sqlite_master "
            "WHERE tbl_name IN (:t, :fts) AND sql IS NOT NULL ORDER BY rowid"
        ),
        {"t": name, "fts": fts},
    ).all()
    schema = [sql for kind, owner, sql in ddl if owner == name and kind in ("table", "index")]
    search = [sql for kind, owner, sql in ddl if owner == fts and kind == "table"]
    triggers = [sql for kind, owner, sql in ddl if owner == name and kind == "trigger"]
    for sql in schema:
        conn.exec_driver_sql(sql)
    columns = ", ".join(["rowid", *(_quote(conn, c.name) for c in table.columns)])
    conn.exec_driver_sql(
        f"INSERT INTO {overlay.local}.{name} ({columns}) SELECT {columns} FROM {source}.{name}"
    )
    for sql in search:
        conn.exec_driver_sql(sql)
        # The ranking configuration (bm25 weights) is data of the index, not DDL.
        conn.exec_driver_sql(
            f"INSERT INTO {overlay.local}.{fts}({fts}, rank) "
            f"SELECT 'rank', v FROM {source}.{fts}_config WHERE k = 'rank'"
        )
        conn.exec_driver_sql(f"INSERT INTO {overlay.local}.{fts}({fts}) VALUES ('rebuild')")
    for sql in triggers:  # last: the copied rows are indexed by the rebuild, not one by one
        conn.exec_driver_sql(sql)
    schema_changed(conn)  # this transaction's next statements must see the copy


class SqliteCopies:
    """Templates are files under `templates_root` (shared: a template is fixed by its org and
    seed); clones are files under `clones_root`, this server's own. A clone is copy-on-write: a
    small file of its own tables, with its template attached read-only (`app.storage.overlay`).

    A copy is named by its path relative to the data directory (`sandboxes/template-....db`),
    which the platform database records: a data directory copied or moved elsewhere then names
    its own files, never those of the directory it came from."""

    def __init__(self, data_dir: Path, templates_root: Path, clones_root: Path) -> None:
        self.data_dir = data_dir
        self.templates_root = templates_root
        # Made by the first clone: a server writes nothing before it checks its data directory.
        self.clones_root = clones_root

    def _path(self, name: str) -> Path:
        return self.data_dir / name

    def _name(self, path: Path) -> str:
        return path.relative_to(self.data_dir).as_posix()

    def database_url(self, name: str) -> str:
        return f"sqlite:///{self._path(name)}"

    def template_url(self, key: str) -> str:
        return self._name(self.templates_root / f"template-{key}.db")

    def list_templates(self) -> list[str]:
        return [self._name(path) for path in sorted(self.templates_root.glob("template-*.db"))]

    def list_clones(self) -> list[str]:
        return [self._name(path) for path in sorted(self.clones_root.glob("copy-*.db"))]

    def exists(self, url: str) -> bool:
        return self._path(url).exists()

    def create_empty(self, url: str) -> None:
        self._path(url).parent.mkdir(parents=True, exist_ok=True)  # SQLite makes the file

    def clone(self, source_url: str) -> str:
        """A new sandbox file holding only the tables every sandbox writes, made from the
        template's own DDL, with the template's id sequences. The template must exist: one
        dropped meanwhile fails to attach instead of being cloned as an empty database."""
        self.clones_root.mkdir(parents=True, exist_ok=True)
        target = self.clones_root / f"copy-{clone_name()}.db"
        template = f"file:{self._path(source_url)}?mode=ro&immutable=1"
        own = ", ".join(f"'{name}'" for name in OWN_TABLES)
        with closing(sqlite3.connect(f"file:{target}", uri=True, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"ATTACH DATABASE ? AS {TEMPLATE_ALIAS}", (template,))
            db.execute("BEGIN")
            ddl = db.execute(
                f"SELECT sql FROM {TEMPLATE_ALIAS}.sqlite_master WHERE tbl_name IN ({own}) "
                "AND sql IS NOT NULL ORDER BY rowid"
            ).fetchall()
            for (sql,) in ddl:
                db.execute(sql)
            db.execute(
                f"INSERT INTO main.lf_id_sequence SELECT * FROM {TEMPLATE_ALIAS}.lf_id_sequence"
            )
            db.execute("COMMIT")
        return self._name(target)

    def drop(self, url: str) -> None:
        path = self._path(url)
        for suffix in _COMPANIONS:
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    def storage_of(self, url: str) -> str:
        """What a copy's name names on disk: its file."""
        return str(self._path(url))

    def engine_for(self, url: str, template: str) -> Engine:
        if not template:  # the server's own database, seeded in full
            return _engine(self.database_url(url), must_exist=True, template=None)
        engine = _engine(
            self.database_url(url), must_exist=True, template=self.database_url(template)
        )
        return engine.execution_options(
            **{OVERLAY_OPTION: Overlay(local="main", template=TEMPLATE_ALIAS)}
        )

    def release(self, engine: Engine) -> None:
        engine.dispose()  # each sandbox has an engine of its own

    def close(self) -> None:
        """Nothing: every engine is a sandbox's, released with it."""

    def upgrade_storage(self, upgrade: Callable[[Connection], object]) -> None:
        """Each template and clone is a file the platform migrations never open: `upgrade` runs
        on each, alone (a clone without its template attached), in the journal mode the file
        has (a template stays out of WAL), before any sandbox attaches it."""
        for name in [*self.list_templates(), *self.list_clones()]:
            engine = create_engine(self.database_url(name))
            event.listen(engine, "connect", _register_functions)
            try:
                with engine.begin() as conn:
                    upgrade(conn)
            finally:
                engine.dispose()


# -- the back end --------------------------------------------------------------------------------


def _datetime_wire_text(stored: str | None) -> str | None:
    """A DateTime column's stored text, which SQLAlchemy writes `2020-12-22 11:00:00.000000`
    (naive UTC), as the wire writes it, `2020-12-22T11:00:00.000+0000`."""
    if stored is None:
        return None
    if len(stored) == 26 and stored[10] == " " and stored[19] == ".":
        return f"{stored[:10]}T{stored[11:23]}+0000"
    return format_datetime(str_to_datetime(stored))  # another form: read as SQLAlchemy reads it


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

    def read_only_engine(self, url: str) -> Engine | None:
        """An engine that reads the file and writes nothing beside it; None if there is none."""
        path = (make_url(url).database or "").removeprefix("file:")  # a path, or a URI's
        if not path or not Path(path).exists():
            return None
        # mode=ro alone makes a WAL database's -wal and -shm files, and leaves them. With no
        # -wal file no connection is open, so nothing changes the file while it is read as
        # immutable, which makes none; with one, mode=ro reads through the files already there.
        immutable = "" if Path(f"{path}-wal").exists() else "&immutable=1"
        return create_engine(f"sqlite:///file:{path}?mode=ro{immutable}&uri=true")

    def lock_writes(self, conn: Connection, key: str) -> None:
        """Nothing: BEGIN IMMEDIATE took the file's write lock (see _begin)."""

    def first_start(self, engine: Engine) -> AbstractContextManager[None]:
        """Nothing: a SQLite file has one host, whose workers start once it has seeded."""
        return nullcontext()

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

    def text_key_indexes(self, conn: Connection, table: str, schema: str | None) -> dict[str, str]:
        catalog = f"{_quote(conn, schema)}.sqlite_master" if schema else "sqlite_master"
        statement = text(
            f"SELECT name, sql FROM {catalog} WHERE type = 'index' AND tbl_name = :t "
            f"AND sql LIKE '%{TEXT_KEY_FUNCTION}(%'"
        )
        found = {}
        for name, sql in conn.execute(statement, {"t": table}):
            keyed = _KEYED_COLUMN.search(sql)
            if keyed is not None:
                found[str(name)] = keyed.group(1).replace('""', '"')
        return found

    def case_insensitive_text(self) -> TypeEngine[str]:
        return Text(collation="NOCASE")

    def insert(self, table: Any) -> sqlite.Insert:
        return sqlite.insert(table)

    def wire_datetimes(self, statement: Select[Any], columns: frozenset[int]) -> WireDatetimes:
        # The stored text is cut to the wire's as rows are read (several times faster than
        # reading it into a datetime and formatting that).
        return WireDatetimes(None, dict.fromkeys(columns, _datetime_wire_text))

    def append_rows(
        self, conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> None:
        # sqlite3's executemany binds each row in C already.
        if rows:
            conn.execute(sqlite.insert(table), list(rows))

    def date_field(self, field: DateField, value: str) -> str:
        return f"CAST(strftime('{_STRFTIME[field]}', {value}) AS INTEGER)"

    def modulo(self, dividend: str, divisor: str) -> str:
        return f"(({dividend}) % {divisor})"

    def day_only(self, value: str) -> str:
        return f"date({value})"

    def text_key(self, value: str) -> str:
        # ASCII text (as many bytes as characters) is keyed by SQLite itself, without a call
        # into Python. A function's result has no collation: it sorts by code point.
        ascii_only = f"length(CAST({value} AS BLOB)) = length({value})"
        return f"CASE WHEN {ascii_only} THEN upper({value}) ELSE {TEXT_KEY_FUNCTION}({value}) END"

    def text_position(self, text: str, part: str) -> str:
        return f"instr({text}, {part})"

    def case_insensitive(self, value: str) -> str:
        # A function's result (a coalesce of several objects' columns) drops their collation.
        return f"({value}) COLLATE NOCASE"

    def key_in(self, value: str, keys: Sequence[str]) -> str:
        listed = ", ".join(keys)
        # NOCASE (a text column's own collation) compared with a key finds the values whose key
        # it is but those with a character beyond ASCII, which NOCASE leaves as it is: only
        # those need the key, and a call into Python.
        beyond_ascii = f"length(CAST({value} AS BLOB)) > length({value})"
        keyed = f"{TEXT_KEY_FUNCTION}({value}) IN ({listed})"
        return f"({value} COLLATE NOCASE IN ({listed}) OR ({beyond_ascii} AND {keyed}))"

    def text_is_null(self, value: str) -> str:
        # A group whose key is null holds only nulls: any of its values says so.
        return f"{value} IS NULL"

    def code_point_order(self, value: str) -> str:
        return f"{value} COLLATE BINARY"  # UTF-8 bytes sort as their code points

    def to_local(self, value: str, zone: str) -> str:
        return f"{TO_LOCAL_FUNCTION}({value}, {zone})"

    def distance(self, lat1: str, lon1: str, lat2: str, lon2: str, radius: str) -> str:
        return f"{DISTANCE_FUNCTION}({lat1}, {lon1}, {lat2}, {lon2}, {radius})"

    def create_search_index(self, conn: Connection, spec: SearchSpec) -> None:
        for statement in _index_ddl(conn, spec):
            conn.execute(text(statement))

    def drop_search_index(self, conn: Connection, spec: SearchSpec) -> None:
        conn.execute(text(f"DROP TABLE IF EXISTS {_quote(conn, _fts_name(spec))}"))

    def rebuild_search_index(self, conn: Connection, spec: SearchSpec) -> None:
        # An external-content index addresses rows by rowid, which VACUUM may renumber.
        fts = _quote(conn, _fts_name(spec))
        conn.execute(text(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')"))

    def replace_search_index(
        self, conn: Connection, old: SearchSpec | None, new: SearchSpec | None
    ) -> None:
        if old is not None:
            # `main` only (the sandbox's own file): never its template's, attached beside it.
            fts = _fts_name(old)
            for trigger in (f"{fts}_ai", f"{fts}_ad", f"{fts}_au"):
                conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS main.{_quote(conn, trigger)}")
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS main.{_quote(conn, fts)}")
        if new is not None:
            self.create_search_index(conn, new)
        schema_changed(conn)

    def search_index_exists(self, conn: Connection, specs: Sequence[SearchSpec]) -> bool:
        master = table("sqlite_master", column("name"), column("type"))
        wanted = [_fts_name(spec) for spec in specs]
        query = select(master.c.name).where(master.c.type == "table", master.c.name.in_(wanted))
        return {row[0] for row in conn.execute(query)} >= set(wanted)

    def match_syntax(self, spec: SearchSpec, groups: frozenset[FieldGroup] | None) -> Fts5Syntax:
        return Fts5Syntax(None if groups is None else spec.names(groups))

    def matches(self, spec: SearchSpec, table: Table, query: str, ranked: bool) -> Select[Any]:
        # `table` is read through its rowid, which the FTS5 rows point at.
        fts, content = _fts_table(spec), _content_rowids(spec)
        columns: list[ColumnElement[Any]] = [content.c.Id.label("Id")]
        if ranked:
            columns.append(fts.c.rank.label("rank"))  # bm25: lower is better
        joined = fts.join(content, content.c.rowid == fts.c.rowid)
        match = fts.c[_fts_name(spec)].op("MATCH", return_type=Boolean)(bindparam(None, query))
        return select(*columns).select_from(joined).where(match)

    def wildcard(self, column: ColumnElement[Any], words: Sequence[str]) -> ColumnElement[bool]:
        # SQLite has no regular expressions; a Python matcher that cannot backtrack
        # exponentially stands in (python_functions.wildcard_match).
        pattern = bindparam(None, " ".join(words), type_=String)
        matched: ColumnElement[bool] = getattr(func, WILDCARD_FUNCTION)(
            column, pattern, type_=Boolean
        )
        return matched

    def is_local(self, conn: Connection, overlay: Overlay, name: str) -> bool:
        statement = (
            f"SELECT 1 FROM {overlay.local}.sqlite_master WHERE type = 'table' AND name = :n"
        )
        return conn.execute(text(statement), {"n": name}).first() is not None

    def copy_table(self, conn: Connection, overlay: Overlay, table: Table) -> None:
        _copy_table(conn, overlay, table)

    def drop_copy(self, conn: Connection, overlay: Overlay, name: str) -> None:
        # Its search index and triggers go with it; the template's table shows through again.
        for dropped in (f"{name}_fts", name):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {overlay.local}.{_quote(conn, dropped)}")
        schema_changed(conn)

    def column_names(self, conn: Connection, table: str) -> set[str]:
        # `main`: the sandbox's own file (its copy of the table), or the server's database.
        rows = conn.exec_driver_sql(f"PRAGMA main.table_info({_quote(conn, table)})").all()
        return {str(row[1]) for row in rows}

    def add_column(self, conn: Connection, table: str, column: Column[Any]) -> None:
        kind = column.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(
            f"ALTER TABLE main.{_quote(conn, table)} ADD COLUMN {_quote(conn, column.name)} {kind}"
        )
        schema_changed(conn)  # statements prepared before must not be reused

    def create_table(self, conn: Connection, table: Table) -> None:
        table.create(conn)  # in `main`: the sandbox's own file, or the server's database
        schema_changed(conn)

    def drop_table(self, conn: Connection, name: str) -> None:
        # `main` only: never the template's, attached beside it.
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS main.{_quote(conn, name)}")
        schema_changed(conn)

    def rename_table(self, conn: Connection, old: str, new: str) -> None:
        conn.exec_driver_sql(f"ALTER TABLE main.{_quote(conn, old)} RENAME TO {_quote(conn, new)}")
        schema_changed(conn)

    def copies(self, url: str, data_dir: Path) -> SqliteCopies:
        # Templates are shared by every server of the data directory (fixed by org and seed);
        # clones are this server's own, beside its database.
        server_db = Path(url.removeprefix("sqlite:///"))
        data_dir = data_dir.resolve()
        root = data_dir / "sandboxes"
        return SqliteCopies(data_dir, root, root / server_db.stem)


SQLITE = SqliteBackend()
