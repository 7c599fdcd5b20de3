"""Dump values -> field values: what a CRMArena SQLite dump stores, as the org's field types.

A dump column holds whatever SQLite stored (text, integer, real, null), not always the field's
type: numbers as TEXT ("22.5"), checkboxes as 1/0, datetimes as text ("2020-12-22T11:00:00.000
+0000"), phone numbers as REAL (5551234567.0), junction id lists as JSON array strings. Each
converter returns the value the storage layer keeps for the field type, and whether it had to
change the stored value's type to get it; a value it cannot read raises `BadValue` with the
reason, in words a person can act on.

An empty string becomes null, as Salesforce never stores "" in a field.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import date, datetime, time
from typing import Any

from app.metadata.model import TEXT_TYPES, FieldDef, FieldType
from app.metadata.values import parse_date, parse_datetime
from app.storage.ids import normalize_id

_TIME = re.compile(r"^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?Z?$")
_BOOLEANS = {"1": True, "0": False, "true": True, "false": False}


class BadValue(ValueError):
    """A dump value that cannot be read as its field's type."""


Converted = tuple[Any, bool]
Converter = Callable[[Any], Converted]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number_text(value: int | float) -> str:
    """A number written as text without a spurious ".0": 5551234567.0 -> "5551234567"."""
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return str(int(value))
    return str(value)


def to_text(value: Any) -> Converted:
    if isinstance(value, str):
        return value, False
    if isinstance(value, bool):
        return ("true" if value else "false"), True
    if isinstance(value, int | float):
        return _number_text(value), True
    raise BadValue(f"{_shown(value)} is not text")


def to_boolean(value: Any) -> Converted:
    if isinstance(value, bool):
        return value, False
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value), True
    if isinstance(value, str) and value.strip().lower() in _BOOLEANS:
        return _BOOLEANS[value.strip().lower()], True
    raise BadValue(f"{_shown(value)} is not a checkbox value (1/0 or true/false)")


def _finite(number: float, value: Any) -> float:
    if not math.isfinite(number):
        raise BadValue(f"{_shown(value)} is not a number")
    return number


def to_double(value: Any) -> Converted:
    if isinstance(value, bool):
        raise BadValue(f"{_shown(value)} is not a number")
    if isinstance(value, float):
        return _finite(value, value), False
    if isinstance(value, int):
        return float(value), True
    if isinstance(value, str):
        try:
            return _finite(float(value.strip()), value), True
        except ValueError:
            raise BadValue(f"{_shown(value)} is not a number") from None
    raise BadValue(f"{_shown(value)} is not a number")


def to_int(value: Any) -> Converted:
    if isinstance(value, int) and not isinstance(value, bool):
        return value, False
    number, _ = to_double(value)
    if not number.is_integer():
        raise BadValue(f"{_shown(value)} is not a whole number")
    return int(number), True


def to_date(value: Any) -> Converted:
    if isinstance(value, str):
        text = value.strip()
        # A date written with a time (e.g. by a DataFrame export) keeps the day as written.
        parsed = parse_date(text[:10]) if len(text) == 10 or text[10:11] in ("T", " ") else None
        if parsed is not None:
            return parsed, True
    if isinstance(value, date) and not isinstance(value, datetime):
        return value, False
    raise BadValue(f"{_shown(value)} is not a date (YYYY-MM-DD)")


def to_datetime(value: Any) -> Converted:
    if isinstance(value, str):
        parsed = parse_datetime(value)
        if parsed is not None:
            return parsed, True
    if isinstance(value, datetime):
        return value, False
    raise BadValue(f"{_shown(value)} is not a datetime (e.g. 2020-12-22T11:00:00.000+0000)")


def to_time(value: Any) -> Converted:
    if isinstance(value, str):
        match = _TIME.match(value.strip())
        if match is not None:
            hour, minute, second, fraction = match.groups()
            try:
                micro = int((fraction or "0")[:3].ljust(3, "0")) * 1000
                return time(int(hour), int(minute), int(second or 0), micro), True
            except ValueError:
                pass
    raise BadValue(f"{_shown(value)} is not a time (HH:MM:SS.sssZ)")


def to_id(value: Any) -> Converted:
    canonical = normalize_id(value)
    if canonical is None:
        raise BadValue(f"{_shown(value)} is not a Salesforce id (15 or 18 letters and digits)")
    return canonical, canonical != value


def to_id_list(value: Any) -> Converted:
    """A JSON array of ids (as the dumps store ToIds); a bare id is read as a list of one."""
    if not isinstance(value, str):
        raise BadValue(f"{_shown(value)} is not a JSON array of ids")
    text = value.strip()
    if normalize_id(text) is not None:
        return [normalize_id(text)], True
    try:
        items = json.loads(text)
    except ValueError:
        raise BadValue(f"{_shown(value)} is not a JSON array of ids") from None
    if not isinstance(items, list):
        raise BadValue(f"{_shown(value)} is not a JSON array of ids")
    ids = []
    for item in items:
        canonical = normalize_id(item)
        if canonical is None:
            raise BadValue(f"{_shown(item)} in {_shown(value)} is not a Salesforce id")
        ids.append(canonical)
    return ids, True


def from_components(value: Any) -> Converted:
    """A compound (a location, an address) is derived from its parts' columns, which a dump
    holds; its own value is not read."""
    return None, False


_CONVERTERS: dict[FieldType, Converter] = {
    FieldType.ID: to_id,
    FieldType.REFERENCE: to_id,
    FieldType.BOOLEAN: to_boolean,
    FieldType.INT: to_int,
    FieldType.DOUBLE: to_double,
    FieldType.CURRENCY: to_double,
    FieldType.PERCENT: to_double,
    FieldType.DATE: to_date,
    FieldType.DATETIME: to_datetime,
    FieldType.TIME: to_time,
    FieldType.JUNCTIONIDLIST: to_id_list,
    FieldType.LOCATION: from_components,
    FieldType.ADDRESS: from_components,
    FieldType.BASE64: to_text,  # a dump holds a blob's base64 text
}


def converter(field: FieldDef) -> Converter:
    """The function that reads dump values of `field`."""
    if field.type in TEXT_TYPES:
        return to_text
    return _CONVERTERS[field.type]


def convert(field: FieldDef, read: Converter, value: Any) -> Converted:
    """`value` as `field` stores it (None for null or ""), and whether its type changed."""
    if value is None:
        return None, False
    if isinstance(value, bytes):
        raise BadValue(f"a binary value ({len(value)} bytes) where {field.type.value} is expected")
    if value == "":
        return None, True
    return read(value)
