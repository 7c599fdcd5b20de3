"""SQLAlchemy Core tables derived from the schema registry, built once and reused.

Table identity is SQLAlchemy's compiled-statement cache key, so each sObject gets exactly one
`Table` for the life of the process.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, MetaData, Table

from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.storage.text import text_key
from app.storage.types import column_type

NAMING_CONVENTION = {"ix": "ix_%(table_name)s_%(column_0_name)s"}


def table_name(sobject: SObjectDef) -> str:
    """Data tables live beside the platform tables, so they carry a prefix."""
    return f"sobj_{sobject.name.lower()}"


def _table(sobject: SObjectDef, metadata: MetaData) -> Table:
    columns = [
        Column(
            field.name,
            column_type(field),
            primary_key=field.type is FieldType.ID,
            nullable=field.type is not FieldType.ID,
        )
        for field in sobject.fields
    ]
    table = Table(table_name(sobject), metadata, *columns)
    for field in sobject.fields:
        if is_key_indexed(field):  # text is filtered by its key (app.storage.text)
            Index(f"ix_{table.name}_{field.name}_key", text_key(table.c[field.name]))
        elif field.type is FieldType.REFERENCE or field.external_id or field.unique:
            # Lookups are joined and filtered on; index them like Salesforce indexes foreign keys.
            Index(None, table.c[field.name])
    return table


def is_key_indexed(field: FieldDef) -> bool:
    """Whether a field has an index of its text key: unique and external id text fields, which
    Salesforce indexes."""
    return field.is_text and (field.external_id or field.unique)


class TableSet:
    """The tables of one org's data, one per sObject."""

    def __init__(self, registry: SchemaRegistry) -> None:
        self.registry = registry
        self.metadata = MetaData(naming_convention=NAMING_CONVENTION)
        self._tables = {sobject.name: _table(sobject, self.metadata) for sobject in registry}

    def __getitem__(self, sobject_name: str) -> Table:
        return self._tables[sobject_name]

    def items(self) -> list[tuple[str, Table]]:
        return list(self._tables.items())
