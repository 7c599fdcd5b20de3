"""Copy-on-write sandboxes: a sandbox's own tables over its template's, shared read-only.

A sandbox's storage starts with only its bookkeeping tables (the journal, the id sequences,
the snapshots). Every other name resolves to the template: on SQLite the template is attached
read-only and unqualified names look in the sandbox's file first; on PostgreSQL the sandbox is a
schema placed before its template's on the search path. Queries are compiled exactly as for any
database, so they read through the overlay without knowing it.

The first write to an object copies that object's table (its rows, indexes and search index)
into the sandbox, in the writing transaction; every later read and write of it stays there. A
table is copied whole, not row by row, so reads never merge two sources: a sandbox costs what its
episode's objects hold, an idle one next to nothing. Reset undoes the journal in the copied
tables, as anywhere else, so it stays proportional to the writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection, Table, text

from app.storage.backends.sqlite import schema_changed

# The execution option that marks an engine as a copy-on-write sandbox (its value: an Overlay).
OVERLAY_OPTION = "localforce_overlay"
# Tables every sandbox holds from its start: what a write always touches besides data.
OWN_TABLES = ("lf_journal", "lf_id_sequence", "lf_snapshot")
# Their serial columns: a copy of the table needs a sequence of its own.
SERIAL_COLUMNS = {"lf_journal": "seq"}


@dataclass(frozen=True)
class Overlay:
    """Where a sandbox's own tables are (`local`) and where its template's are (`template`),
    as SQL qualifiers: SQLite's `main` and the attached template's alias, or two schemas."""

    local: str
    template: str


def overlay_of(conn: Connection) -> Overlay | None:
    overlay = conn.get_execution_options().get(OVERLAY_OPTION)
    return overlay if isinstance(overlay, Overlay) else None


def _quote(conn: Connection, name: str) -> str:
    return conn.dialect.identifier_preparer.quote(name)


def _is_local(conn: Connection, overlay: Overlay, name: str) -> bool:
    if conn.dialect.name == "sqlite":
        statement = (
            f"SELECT 1 FROM {overlay.local}.sqlite_master WHERE type = 'table' AND name = :n"
        )
        return conn.execute(text(statement), {"n": name}).first() is not None
    statement = "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = :s AND tablename = :n"
    return conn.execute(text(statement), {"s": overlay.local, "n": name}).first() is not None


def _copy_sqlite(conn: Connection, overlay: Overlay, table: Table) -> None:
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


def _copy_postgresql(conn: Connection, overlay: Overlay, table: Table) -> None:
    local = f"{_quote(conn, overlay.local)}.{_quote(conn, table.name)}"
    source = f"{_quote(conn, overlay.template)}.{_quote(conn, table.name)}"
    # LIKE ... INCLUDING ALL brings the indexes, the search index's GIN expression included.
    conn.exec_driver_sql(f"CREATE TABLE {local} (LIKE {source} INCLUDING ALL)")
    # The insert recomputes the search index's vectors: most of the copy's cost on text-heavy
    # objects. No ANALYZE here (it would compute them once more): autovacuum analyzes the
    # table soon, and until then the planner estimates from its size.
    conn.exec_driver_sql(f"INSERT INTO {local} SELECT * FROM {source}")


_COPIERS: dict[str, Callable[[Connection, Overlay, Table], None]] = {
    "sqlite": _copy_sqlite,
    "postgresql": _copy_postgresql,
}


def ensure_local(conn: Connection, table: Table) -> None:
    """Before a write to `table`: on a copy-on-write sandbox, copy the table from the template
    if this sandbox has not yet (inside the caller's write transaction, so a rollback undoes the
    copy too). Elsewhere, nothing."""
    overlay = overlay_of(conn)
    if overlay is None or _is_local(conn, overlay, table.name):
        return
    _COPIERS[conn.dialect.name](conn, overlay, table)
