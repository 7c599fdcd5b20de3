"""A sandbox's schema changes in its storage: the columns a custom field added through the
Metadata API is stored in.

Only the sandbox's own copy of a table changes (copied from its template first, as before a
write), so the template and every other sandbox keep theirs. A field removed leaves its
column behind, unread (no query or write of the sandbox's registry names it); a field added
again under that name finds its column emptied. A reset drops the sandbox's copies of the
tables its schema changed (after undoing its writes), so its template's show through again; the
default sandbox, which is the server's own database, keeps its columns (a seeded field removed
and added again there stays emptied).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, delete, update

from app.metadata.model import FieldDef
from app.storage.backends import backend_for
from app.storage.journal import SEQUENCES, log_sequence
from app.storage.overlay import ensure_local, overlay_of
from app.storage.search_index import search_spec
from app.storage.tables import TableSet, key_column_name


def add_field_columns(conn: Connection, before: Table, after: Table, field: FieldDef) -> None:
    """Store `field` in the sandbox: `before` is its object's table without it (what the
    template holds), `after` the table with it (its column, and its text key's if it has
    one). Existing rows read the field's default (a checkbox's), else null."""
    ensure_local(conn, before)
    backend = backend_for(conn.dialect.name)
    present = backend.column_names(conn, after.name)
    columns = [after.c[field.name]]
    key = after.c.get(key_column_name(field.name))
    if key is not None:
        columns.append(key)
    emptied: dict[str, Any] = {}
    for column in columns:
        if column.name in present:
            emptied[column.name] = None
        else:
            backend.add_column(conn, after.name, column)
    if field.default is not None:
        emptied[field.name] = field.default
    if emptied:
        conn.execute(update(after).values(emptied))


def reindex_search(conn: Connection, before: TableSet, after: TableSet) -> None:
    """Where a schema change changed the fields an object's search covers (a text field added
    or removed): its search index made again over them, on the sandbox's copy of its table,
    so SOSL finds words in a new field and none in a removed one."""
    backend = backend_for(conn.dialect.name)
    for sobject in before.registry:
        gone = search_spec(sobject) if after.registry.get(sobject.name) is None else None
        if gone is not None:  # a custom object deleted or renamed: its index with it
            backend.replace_search_index(conn, gone, None)
    for sobject in after.registry:
        previous = before.registry.get(sobject.name)
        old = None if previous is None else search_spec(previous)
        new = search_spec(sobject)
        if old == new:
            continue
        if previous is not None:
            ensure_local(conn, before[sobject.name])
        backend.replace_search_index(conn, old, new)


def drop_changed_copies(conn: Connection, names: list[str]) -> None:
    """After a reset's undo: the sandbox's copies of the tables named `names` (those its
    schema changes touched) go, and its template's show through again. The default sandbox
    has no template: its tables stay."""
    overlay = overlay_of(conn)
    if overlay is None:
        return
    backend = backend_for(conn.dialect.name)
    for name in names:
        backend.drop_copy(conn, overlay, name)


def create_object_table(conn: Connection, table: Table) -> None:
    """A custom object's table, in the sandbox (its template has none). One a removed object of
    that name left behind (the default sandbox keeps its tables) is emptied and given the
    columns it lacks."""
    backend = backend_for(conn.dialect.name)
    present = backend.column_names(conn, table.name)
    if not present:
        backend.create_table(conn, table)
        return
    conn.execute(delete(table))
    for column in table.columns:
        if column.name not in present:
            backend.add_column(conn, table.name, column)


def rename_object_table(
    conn: Connection, tables: tuple[Table, Table], names: tuple[str, str]
) -> None:
    """A custom object the sandbox created, renamed from `names[0]` to `names[1]` (`tables`:
    its table under each): its table (one a removed object of the new name left behind goes
    first) and its id sequence, so its next records go on from its last."""
    (old_table, new_table), (old_name, new_name) = tables, names
    backend = backend_for(conn.dialect.name)
    if backend.column_names(conn, new_table.name):
        backend.drop_table(conn, new_table.name)
    backend.rename_table(conn, old_table.name, new_table.name)
    log_sequence(conn, new_name, None)  # a reset takes the renamed sequence away too
    conn.execute(delete(SEQUENCES).where(SEQUENCES.c.sobject == new_name))
    conn.execute(update(SEQUENCES).where(SEQUENCES.c.sobject == old_name).values(sobject=new_name))
