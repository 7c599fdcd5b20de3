"""Salesforce field type -> SQLAlchemy column type, the same on every back end.

Text columns are each back end's case-insensitive text (NOCASE on SQLite, citext on
PostgreSQL); queries compare, group and sort text by its key instead (app.storage.text), the same
on every back end for any Unicode text.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Boolean, Date, DateTime, Dialect, Float, Integer, String, Text, Time
from sqlalchemy.types import TypeDecorator, TypeEngine

from app.metadata.model import FieldDef, FieldType
from app.storage.backends import UnknownBackend, backend_for


class CaseInsensitiveText(TypeDecorator[str]):
    """Text, stored as the back end's case-insensitive text (queries compare it by its key)."""

    impl = Text
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        try:
            backend = backend_for(dialect.name)
        except UnknownBackend:
            # A dialect no back end answers for (str() of a statement uses SQLAlchemy's
            # default one): plain text, since no database will compare it.
            return super().load_dialect_impl(dialect)
        return dialect.type_descriptor(backend.case_insensitive_text())


class IdList(TypeDecorator[list[str]]):
    """A junction id list (EmailMessage.ToIds), kept as a JSON array in a text column."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: list[str] | None, dialect: Dialect) -> str | None:
        return None if value is None else json.dumps(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> list[str] | None:
        return None if value is None else list(json.loads(value))


class CompoundValue(TypeDecorator[dict[str, Any]]):
    """A compound's value (a location's {latitude, longitude}, an address's {city, ...}) kept
    as JSON text. It only mirrors its component columns (derived on every write), which are
    what queries filter on."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: dict[str, Any] | None, dialect: Dialect) -> str | None:
        return None if value is None else json.dumps(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> dict[str, Any] | None:
        return None if value is None else dict(json.loads(value))


_TYPES: dict[FieldType, TypeEngine[Any]] = {
    FieldType.ID: String(18),
    FieldType.REFERENCE: String(18),
    FieldType.BOOLEAN: Boolean(),
    FieldType.INT: Integer(),
    FieldType.DOUBLE: Float(),
    FieldType.CURRENCY: Float(),
    FieldType.PERCENT: Float(),
    FieldType.DATE: Date(),
    FieldType.DATETIME: DateTime(),
    FieldType.TIME: Time(),
    FieldType.JUNCTIONIDLIST: IdList(),
    FieldType.LOCATION: CompoundValue(),
    FieldType.ADDRESS: CompoundValue(),
    # The base64 text, compared as it is (its letter case is its content).
    FieldType.BASE64: Text(),
}


def column_type(field: FieldDef) -> TypeEngine[Any]:
    """The column type that stores `field`."""
    if field.is_text:
        return CaseInsensitiveText()
    return _TYPES[field.type]
