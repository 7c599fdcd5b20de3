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
tables, as anywhere else, so it stays proportional to the writes. How a table is found and
copied is the back end's (app.storage.backends).
"""

from __future__ import annotations

from sqlalchemy import Connection, Table

from app.storage.backends import backend_for
from app.storage.backends.common import OVERLAY_OPTION, OWN_TABLES, SERIAL_COLUMNS, Overlay

# The layout every back end's sandboxes share, defined beside the back ends.
__all__ = ["OVERLAY_OPTION", "OWN_TABLES", "SERIAL_COLUMNS", "Overlay"]


def overlay_of(conn: Connection) -> Overlay | None:
    overlay = conn.get_execution_options().get(OVERLAY_OPTION)
    return overlay if isinstance(overlay, Overlay) else None


def ensure_local(conn: Connection, table: Table) -> None:
    """Before a write to `table`: on a copy-on-write sandbox, copy the table from the template
    if this sandbox has not yet (inside the caller's write transaction, so a rollback undoes the
    copy too). Elsewhere, nothing."""
    overlay = overlay_of(conn)
    if overlay is None:
        return
    backend = backend_for(conn.dialect.name)
    if not backend.is_local(conn, overlay, table.name):
        backend.copy_table(conn, overlay, table)
