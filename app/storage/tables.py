"""SQLAlchemy Core tables derived from the schema registry, built once and reused.

Table identity is SQLAlchemy's compiled-statement cache key, so each sObject gets exactly one
`Table` for the life of the process.
"""

from __future__ import annotations

from sqlalchemy import Column, ColumnElement, Index, MetaData, Table, Text

from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.storage.types import column_type

NAMING_CONVENTION = {"ix": "ix_%(table_name)s_%(column_0_name)s"}
# A text key column's name: its field's and this. No Salesforce field name ends so (a custom
# one ends `__c`, and no other double underscore is allowed), so it never meets a field's.
KEY_SUFFIX = "__key"
# Where a table notes its key columns: {field name: key column name}.
_KEYS_INFO = "text_keys"


def table_name(sobject: SObjectDef) -> str:
    """Data tables live beside the platform tables, so they carry a prefix."""
    return f"sobj_{sobject.name.lower()}"


def key_column_name(field_name: str) -> str:
    return field_name + KEY_SUFFIX


def key_index_name(table: str, field_name: str) -> str:
    return f"ix_{table}_{field_name}_key"


def _table(sobject: SObjectDef, metadata: MetaData) -> Table:
    columns = [
        Column(
            field.name,
            column_type(field),
            primary_key=field.name == sobject.key_field,
            nullable=field.name != sobject.key_field,
        )
        for field in sobject.fields
    ]
    keyed = [field.name for field in sobject.fields if is_key_indexed(field)]
    # A keyed field's key (app.storage.backends.text_key) is stored in a column of its own,
    # written with the field (app.storage.text_keys), and indexed plainly: the database file
    # then needs no function of localforce's to be checked, vacuumed or edited.
    keys = [Column(key_column_name(name), Text, nullable=True) for name in keyed]
    table = Table(table_name(sobject), metadata, *columns, *keys)
    table.info[_KEYS_INFO] = {name: key_column_name(name) for name in keyed}
    for name in keyed:
        Index(key_index_name(table.name, name), table.c[key_column_name(name)])
    for field in sobject.fields:
        if not is_key_indexed(field) and (
            field.type is FieldType.REFERENCE or field.external_id or field.unique
        ):
            # Lookups are joined and filtered on; index them like Salesforce indexes foreign keys.
            Index(None, table.c[field.name])
    return table


def is_key_indexed(field: FieldDef) -> bool:
    """Whether a field has an index of its text key: unique and external id text fields, which
    Salesforce indexes."""
    return field.is_text and (field.external_id or field.unique)


def stored_keys(table: Table) -> dict[str, str]:
    """The fields of `table` whose keys it stores, and the column each key is in."""
    keys: dict[str, str] = table.info.get(_KEYS_INFO, {})
    return keys


def field_columns(table: Table) -> list[Column[object]]:
    """The columns of `table` that are its object's fields (not the stored keys)."""
    hidden = set(stored_keys(table).values())
    return [column for column in table.columns if column.name not in hidden]


def key_column(column: ColumnElement[object]) -> ColumnElement[object] | None:
    """The stored key of a keyed field's column, from the same table or alias; None for an
    expression that is not a table's column."""
    parent = getattr(column, "table", None)
    name = getattr(column, "name", None)
    if parent is None or name is None:
        return None
    stored: ColumnElement[object] | None = parent.c.get(key_column_name(name))
    return stored


class TableSet:
    """The tables of one org's data, one per sObject."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry
        self.metadata = MetaData(naming_convention=NAMING_CONVENTION)
        self._tables = {sobject.name: _table(sobject, self.metadata) for sobject in registry}
        self._shapes: dict[str, Table] = {}

    def __getitem__(self, sobject_name: str) -> Table:
        return self._tables[sobject_name]

    def __contains__(self, sobject_name: object) -> bool:
        return sobject_name in self._tables

    def table_shape(self, sobject: SObjectDef) -> Table:
        """The table an object outside the registry (an activity view) would have: its columns'
        names and types, in a metadata no database is created from."""
        shape = self._shapes.get(sobject.name)
        if shape is None:
            shape = self._shapes[sobject.name] = _table(sobject, MetaData())
        return shape

    def items(self) -> list[tuple[str, Table]]:
        return list(self._tables.items())
