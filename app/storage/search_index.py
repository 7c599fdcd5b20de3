"""The full-text search index behind SOSL: which fields each object indexes, and its life cycle.

The index is schema, created beside the data tables (`recreate_data_tables`) and kept in step by
the database itself, so seeding, API writes and copies of a database all stay searchable without
any service doing anything. Each back end builds it its own way (app.storage.backends): FTS5
tables kept by triggers on SQLite, a GIN index over a weighted tsvector on PostgreSQL. Both
index the same words: text is split on every character that is not a letter or digit.

Which fields are searched, as Salesforce classifies them: text fields (string, textarea, email,
phone, url) that are not system fields. Picklists are left out: Salesforce search does not
match picklist values (a search for "Closed" does not find every closed case), and SOSL
snippets and highlights skip them for the same reason. Numbers, dates, checkboxes and ids are
never searched.

SQLite caveat: an external-content index addresses rows by rowid, which `VACUUM` may renumber
on tables without an INTEGER PRIMARY KEY; after a VACUUM run `rebuild_search_index`.
"""

from __future__ import annotations

from sqlalchemy import Connection

from app.metadata.model import FieldType, SObjectDef
from app.storage.backends import backend_for
from app.storage.backends.python_functions import wildcard_match
from app.storage.search_spec import FieldGroup, SearchField, SearchSpec
from app.storage.tables import TableSet, table_name

# What queries and tests use, defined beside the back ends that build on them.
__all__ = ["FieldGroup", "SearchField", "SearchSpec", "wildcard_match"]

SEARCHED_TYPES = frozenset(
    {FieldType.STRING, FieldType.TEXTAREA, FieldType.EMAIL, FieldType.PHONE, FieldType.URL}
)


def _group(sobject: SObjectDef, name: str, field_type: FieldType) -> FieldGroup:
    name_parts = set(sobject.compound_name.parts) if sobject.compound_name else set()
    if name == sobject.name_field or name in name_parts:
        return FieldGroup.NAME
    if field_type is FieldType.EMAIL:
        return FieldGroup.EMAIL
    if field_type is FieldType.PHONE:
        return FieldGroup.PHONE
    return FieldGroup.OTHER


def search_spec(sobject: SObjectDef) -> SearchSpec | None:
    """What `sobject` indexes; None when it is not searchable or has nothing to search."""
    if not sobject.searchable:
        return None
    fields = tuple(
        SearchField(f.name, _group(sobject, f.name, f.type))
        for f in sobject.fields
        if f.type in SEARCHED_TYPES and not f.system
    )
    if not fields:
        return None
    return SearchSpec(sobject=sobject.name, table=table_name(sobject), fields=fields)


def search_specs(tables: TableSet) -> list[SearchSpec]:
    return [spec for sobject in tables.registry if (spec := search_spec(sobject)) is not None]


def create_search_index(connection: Connection, tables: TableSet) -> None:
    """Create the index of every searchable object; the data tables must exist."""
    backend = backend_for(connection.dialect.name)
    for spec in search_specs(tables):
        backend.create_search_index(connection, spec)


def drop_search_index(connection: Connection, tables: TableSet) -> None:
    """Drop what `create_search_index` made (where the index does not go with its table)."""
    backend = backend_for(connection.dialect.name)
    for spec in search_specs(tables):
        backend.drop_search_index(connection, spec)


def rebuild_search_index(connection: Connection, tables: TableSet) -> None:
    """Re-read every row into the index (where it addresses rows that may have moved)."""
    backend = backend_for(connection.dialect.name)
    for spec in search_specs(tables):
        backend.rebuild_search_index(connection, spec)


def search_index_exists(connection: Connection, tables: TableSet) -> bool:
    return backend_for(connection.dialect.name).search_index_exists(
        connection, search_specs(tables)
    )
