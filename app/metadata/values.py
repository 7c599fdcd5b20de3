"""Field values on the wire: how each field type is written to JSON and read from it.

Datetimes are kept as naive UTC and written as Salesforce writes them,
`2020-12-22T11:00:00.000+0000`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from app.metadata.model import FieldDef, FieldType

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# Salesforce accepts ISO-8601 with Z, +hh:mm or +hhmm offsets, and optional fractions.
_DATETIME = re.compile(
    r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
    r"(Z|[+-]\d{2}:?\d{2})?)?$"
)


# The widest UTC offset a datetime may carry: Java's (and so Salesforce's) +/-18:00.
MAX_OFFSET_MINUTES = 18 * 60


def format_datetime(value: datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    # isoformat is several times faster than strftime, and query results format many values.
    return value.isoformat(timespec="milliseconds") + "+0000"


def format_datetime_z(value: datetime) -> str:
    """A datetime as the SOAP and Bulk 1.0 APIs write it: UTC, with `Z`."""
    return format_datetime(value).removesuffix("+0000") + "Z"


_REST_DATETIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\+0000")


def rest_datetime_as_z(text: str) -> str:
    """A REST API datetime's text (`...+0000`) in the `Z` form; any other text as it is."""
    matched = _REST_DATETIME.fullmatch(text)
    return f"{matched.group(1)}Z" if matched else text


def format_time(value: time) -> str:
    return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def parse_date(text: str) -> date | None:
    if not _DATE.match(text):
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def parse_datetime(text: str) -> datetime | None:
    """An ISO-8601 datetime (or bare date) as naive UTC, or None when it is not one."""
    match = _DATETIME.match(text.strip())
    if match is None:
        return None
    day, hour, minute, second, fraction, offset = match.groups()
    try:
        parsed = datetime.fromisoformat(
            f"{day}T{hour or '00'}:{minute or '00'}:{second or '00'}"
            f".{(fraction or '0')[:6].ljust(6, '0')}"
        )
    except ValueError:
        return None
    if offset and offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:])
        if minutes >= 60 or hours * 60 + minutes > MAX_OFFSET_MINUTES:
            return None
        try:
            parsed -= sign * timedelta(hours=hours, minutes=minutes)
        except OverflowError:  # 9999-12-31T23:59:59-01:00 is past the last representable day
            return None
    # Salesforce keeps milliseconds.
    return parsed.replace(microsecond=parsed.microsecond // 1000 * 1000)


def _identity(value: Any) -> Any:
    return value


def _checkbox(value: Any) -> Any:
    return bool(value)


def _number(value: Any) -> Any:
    return None if value is None else float(value)


def _datetime(value: Any) -> Any:
    # Text is the wire's already: a back end's reader wrote it (Backend.wire_datetimes).
    if value is None or isinstance(value, str):
        return value
    return format_datetime(value)


def _iso(value: Any) -> Any:
    return None if value is None else value.isoformat()


def _time(value: Any) -> Any:
    return None if value is None else format_time(value)


_CONVERTERS = {
    FieldType.BOOLEAN: _checkbox,
    FieldType.DOUBLE: _number,
    FieldType.CURRENCY: _number,
    FieldType.PERCENT: _number,
    FieldType.DATETIME: _datetime,
    FieldType.DATE: _iso,
    FieldType.TIME: _time,
}


def json_converter(field: FieldDef) -> Callable[[Any], Any]:
    """`to_json` for one field, chosen once: shaping many rows then costs one call a value."""
    return _CONVERTERS.get(field.type, _identity)


def to_json(field: FieldDef, value: Any) -> Any:
    """The JSON value of a stored field value."""
    if value is None:
        return False if field.type is FieldType.BOOLEAN else None
    if field.type is FieldType.DATETIME:
        return format_datetime(value)
    if field.type is FieldType.DATE:
        return value.isoformat()
    if field.type is FieldType.TIME:
        return format_time(value)
    if field.type in {FieldType.DOUBLE, FieldType.CURRENCY, FieldType.PERCENT}:
        return float(value)
    return value
