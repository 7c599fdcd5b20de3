"""Literals typed against the field they are compared with, with Salesforce's errors.

Date literals (TODAY, LAST_N_DAYS:5, ...) resolve against the context's OrgCalendar, to a
DateSpan of dates (date fields) or of UTC datetimes (datetime fields, local midnights in the
org's time zone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from app.metadata.model import ID_TYPES, NUMBER_TYPES, FieldDef, FieldType
from app.metadata.number_bounds import INT32_MAX, comparable, fits_int32
from app.soql import ast
from app.soql.bind_context import BindContext
from app.soql.bound import DateSpan
from app.soql.errors import SoqlError
from app.storage.ids import normalize_id

# How Salesforce names a field's type in "must be of type ..." messages.
_FILTER_TYPE_NAMES = {
    FieldType.BOOLEAN: "boolean",
    FieldType.INT: "int",
    FieldType.DOUBLE: "double",
    FieldType.CURRENCY: "currency",
    FieldType.PERCENT: "percent",
    FieldType.DATE: "date",
    FieldType.DATETIME: "dateTime",
}
_NUMBER_KINDS = frozenset({ast.LiteralKind.INTEGER, ast.LiteralKind.DECIMAL})


def mismatch(ctx: BindContext, field: FieldDef, literal: ast.Literal) -> SoqlError:
    if field.is_text:
        expected = "must be of type string and should be enclosed in quotes"
    elif field.type in ID_TYPES:
        # Id and lookup values are quoted strings, so the hint says to quote them.
        expected = f"must be of type {field.type.value} and should be enclosed in quotes"
    else:
        type_name = _FILTER_TYPE_NAMES.get(field.type, field.type.value)
        expected = f"must be of type {type_name} and should not be enclosed in quotes"
    return ctx.error(
        "INVALID_FIELD",
        f"value of filter criterion for field '{field.name}' {expected}",
        literal.pos,
    )


def bind_value(ctx: BindContext, field: FieldDef, literal: ast.Literal) -> Any:
    """The literal as a storage value of `field`'s type."""
    kind = literal.kind
    if kind is ast.LiteralKind.NULL:
        return None
    if kind is ast.LiteralKind.DATE_LITERAL:
        return _date_span(ctx, field, literal)
    if field.type in ID_TYPES:
        return _id_value(ctx, field, literal)
    if field.is_text or field.type is FieldType.JUNCTIONIDLIST:
        if kind is not ast.LiteralKind.STRING:
            raise mismatch(ctx, field, literal)
        return literal.value
    if field.type is FieldType.BOOLEAN and kind is ast.LiteralKind.BOOLEAN:
        return literal.value
    if field.type in NUMBER_TYPES and kind in _NUMBER_KINDS:
        return _number_value(field, literal.value)
    if field.type is FieldType.DATE and kind is ast.LiteralKind.DATE:
        return literal.value
    if field.type is FieldType.DATETIME and kind is ast.LiteralKind.DATETIME:
        return _utc_naive(literal.value)
    raise mismatch(ctx, field, literal)


def _id_value(ctx: BindContext, field: FieldDef, literal: ast.Literal) -> str:
    """An id literal, as the 18-character id it names."""
    if literal.kind is not ast.LiteralKind.STRING:
        raise mismatch(ctx, field, literal)
    normalized = normalize_id(literal.value)
    if normalized is None:
        raise ctx.error("INVALID_QUERY_FILTER_OPERATOR", f"invalid ID field: {literal.value}", None)
    return normalized


def _date_span(ctx: BindContext, field: FieldDef, literal: ast.Literal) -> DateSpan:
    if field.type not in (FieldType.DATE, FieldType.DATETIME):
        raise mismatch(ctx, field, literal)
    assert isinstance(literal.value, tuple)
    name, count = literal.value
    span = ctx.calendar.range(name, count)
    if field.type is FieldType.DATE:
        return DateSpan(span.start, span.end)
    start, end = span.utc_bounds(ZoneInfo(ctx.calendar.zone))
    return DateSpan(start, end)


def _number_value(field: FieldDef, number: Any) -> int | float:
    """A number literal as `field` compares it: an int field's whole 32-bit numbers as ints,
    every other number as a float (see app.metadata.number_bounds)."""
    assert isinstance(number, int | Decimal)
    if field.type is FieldType.INT:
        return comparable(number, fits=INT32_MAX)
    return float(Decimal(number))


def matchable(values: tuple[Any, ...], *, int_column: bool) -> tuple[Any, ...]:
    """An IN list without the numbers an INTEGER column can never hold (fractions, numbers past
    32 bits): PostgreSQL casts each IN parameter to the column's type, which would round a
    fraction and overflow on a large number. Leaving them out changes no answer."""
    if not int_column:
        return values
    return tuple(v for v in values if not isinstance(v, int | float) or fits_int32(v))


def _utc_naive(moment: Any) -> datetime:
    """A datetime literal as stored: UTC, without a zone."""
    assert isinstance(moment, datetime)
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)
