"""The stored text keys of keyed fields (unique and external id text, app.storage.tables): each
in a column beside its field, written with it, indexed plainly.

The key is the field's text upper-cased by Unicode's simple mapping (app.storage.backends
.text_key), which plain SQL cannot compute beyond ASCII. So localforce computes it, in Python,
on every write (`with_keys`, called where rows are written: app.storage.records and the
journal's undo), and no schema object of the database calls a function of localforce's: any
SQLite tool can check, vacuum, dump and edit the file.

A row another tool inserted or edited has no key, or a stale one. A trigger cannot put that
right (it would need the same function), so localforce repairs such keys when it opens a
database (`repair_keys`): one scan of each keyed table, cheap next to starting a server, and
lookups stay a plain `key = ?` on the index.

Databases from before keys were stored had expression indexes on the key instead;
`store_keys` converts them (the platform migration 0012 runs it, and the server runs it on its
sandboxes' storage at start).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, Table, column, inspect, table, update

from app.storage.backends import backend_for
from app.storage.backends.text_key import sql_text_key
from app.storage.tables import KEY_SUFFIX, key_column_name, key_index_name, stored_keys
from app.storage.text import text_key

DATA_TABLE_PREFIX = "sobj_"


def with_keys(table: Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """`row` with the key of each keyed field it sets (a row that leaves a field as it is,
    leaves its key too)."""
    written = dict(row)
    for field_name, key_name in stored_keys(table).items():
        if field_name in written:
            written[key_name] = sql_text_key(written[field_name])
    return written


def repair_keys(conn: Connection, schema: str | None = None) -> int:
    """Set every stored key that is not its field's key (a row another tool wrote), in the
    database's data tables (or one PostgreSQL schema's); returns how many rows changed. Only
    the tables the database holds: a sandbox's template keeps its own."""
    inspector = inspect(conn)
    repaired = 0
    for name in _data_tables(conn, schema):
        fields = {c["name"] for c in inspector.get_columns(name, schema=schema)}
        for key_name in sorted(f for f in fields if f.endswith(KEY_SUFFIX)):
            field_name = key_name.removesuffix(KEY_SUFFIX)
            if field_name not in fields:
                continue
            data = table(name, column(field_name), column(key_name), schema=schema)
            value, key = data.c[field_name], data.c[key_name]
            wrong = update(data).where(key.is_distinct_from(text_key(value)))
            repaired += conn.execute(wrong.values({key_name: text_key(value)})).rowcount
    return repaired


def upgrade_keys(conn: Connection, schema: str | None = None) -> None:
    """What opening a database does for its keys: convert, then repair."""
    store_keys(conn, schema)
    repair_keys(conn, schema)


def _data_tables(conn: Connection, schema: str | None) -> list[str]:
    names = inspect(conn).get_table_names(schema=schema)
    return [name for name in names if name.startswith(DATA_TABLE_PREFIX)]


def store_keys(conn: Connection, schema: str | None = None) -> list[str]:
    """Convert a database (or one PostgreSQL schema of it) whose keyed fields have expression
    indexes on their keys to stored keys: for each, a key column filled by the database's own
    key function (on localforce's connection), and a plain index. Returns the `table.field`
    converted; nothing when none is left."""
    backend = backend_for(conn.dialect.name)
    converted = []
    for name in _data_tables(conn, schema):
        # The back end finds them: SQLAlchemy reflects no expression index of SQLite's.
        for index_name, field_name in backend.text_key_indexes(conn, name, schema).items():
            _convert(conn, schema, name, field_name, index_name)
            converted.append(f"{name}.{field_name}")
    return converted


def _convert(
    conn: Connection, schema: str | None, table_name: str, field_name: str, old_index: str
) -> None:
    preparer = conn.dialect.identifier_preparer
    qualified = preparer.quote(table_name)
    old = preparer.quote(old_index)
    if schema is not None:
        qualified = f"{preparer.quote_schema(schema)}.{qualified}"
        old = f"{preparer.quote_schema(schema)}.{old}"
    key_name = key_column_name(field_name)
    conn.exec_driver_sql(f"DROP INDEX {old}")
    conn.exec_driver_sql(f"ALTER TABLE {qualified} ADD COLUMN {preparer.quote(key_name)} TEXT")
    data = table(table_name, column(field_name), column(key_name), schema=schema)
    conn.execute(update(data).values({key_name: text_key(data.c[field_name])}))
    conn.exec_driver_sql(
        f"CREATE INDEX {preparer.quote(key_index_name(table_name, field_name))} "
        f"ON {qualified} ({preparer.quote(key_name)})"
    )
