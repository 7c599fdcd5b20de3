"""toLabel() and FORMAT(): a field's value as the user would read it (en_US, one currency).

FORMAT writes numbers with thousands separators and the field's scale, currencies with `$`,
dates as `12/28/2015` and datetimes as `4/10/2025, 3:31 PM` in the org's time zone, as the
SOQL reference shows. convertCurrency() of a single-currency org leaves values unchanged.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any
from zoneinfo import ZoneInfo

from app.metadata.model import FieldDef, FieldType


def to_label(field: FieldDef, value: Any) -> Any:
    """A picklist value's label (each value's, for a multi-select picklist)."""
    if value is None or not field.picklist:
        return value
    labels = {entry.value: entry.label for entry in field.picklist}
    if field.type is FieldType.MULTIPICKLIST:
        return ";".join(labels.get(part, part) for part in str(value).split(";"))
    return labels.get(value, value)


def _clock(moment: time) -> str:
    hour = moment.hour % 12 or 12
    return f"{hour}:{moment.minute:02d} {'AM' if moment.hour < 12 else 'PM'}"


def _number(value: float, scale: int) -> str:
    return f"{value:,.{scale}f}"


def format_value(field: FieldDef, value: Any, zone: str) -> Any:
    """FORMAT(field): text in the user's locale; null stays null, other types are unchanged."""
    if value is None:
        return None
    kind = field.type
    if kind is FieldType.CURRENCY:
        amount = _number(abs(float(value)), field.scale or 2)
        return f"-${amount}" if float(value) < 0 else f"${amount}"
    if kind is FieldType.PERCENT:
        return f"{_number(float(value), field.scale)}%"
    if kind in (FieldType.DOUBLE, FieldType.INT):
        return _number(float(value), field.scale if kind is FieldType.DOUBLE else 0)
    if kind is FieldType.DATETIME and isinstance(value, datetime):
        local = value.replace(tzinfo=UTC).astimezone(ZoneInfo(zone))
        return f"{local.month}/{local.day}/{local.year}, {_clock(local.time())}"
    if kind is FieldType.DATE and isinstance(value, date):
        return f"{value.month}/{value.day}/{value.year}"
    if kind is FieldType.TIME and isinstance(value, time):
        return _clock(value)
    return value
