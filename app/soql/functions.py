"""SOQL date functions and DISTANCE() as SQL constructs, spelled by each back end.

Each function is a SQLAlchemy construct with one compile hook, which asks the back end of the
dialect compiled for (app.storage.backends) for its spelling; nothing else in the pipeline knows
which database it runs on. What a function means is said here, once, from the date fields every
back end spells. Values are evaluated in UTC unless wrapped in convertTimezone, as in
Salesforce. Weeks in DAY_IN_WEEK start on Sunday (1); WEEK_IN_MONTH and WEEK_IN_YEAR count
7-day blocks from the 1st of the month or year.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Date, Float, Integer, bindparam
from sqlalchemy.exc import UnsupportedCompilationError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from app.storage.backends import Backend, DateField, UnknownBackend, backend_for
from app.storage.types import CaseInsensitiveText

# The SOQL functions that are one date field as it is.
_PLAIN_PARTS = {
    "CALENDAR_YEAR": DateField.YEAR,
    "CALENDAR_MONTH": DateField.MONTH,
    "DAY_IN_MONTH": DateField.DAY,
    "DAY_IN_YEAR": DateField.DAY_OF_YEAR,
    "HOUR_IN_DAY": DateField.HOUR,
}
DATE_FUNCTIONS = frozenset(
    {
        *_PLAIN_PARTS,
        "CALENDAR_QUARTER",
        "DAY_IN_WEEK",
        "DAY_ONLY",
        "WEEK_IN_MONTH",
        "WEEK_IN_YEAR",
        "FISCAL_MONTH",
        "FISCAL_QUARTER",
        "FISCAL_YEAR",
    }
)


class DatePart(FunctionElement[int]):
    """An integer part of a date or datetime. One subclass per SOQL function, so the part is
    part of the statement's cache key."""

    type = Integer()
    inherit_cache = True
    part = ""

    def __init__(self, expression: ColumnElement[Any], fiscal_start_month: int = 1):
        super().__init__(expression, bindparam(None, fiscal_start_month, type_=Integer()))


_PART_CLASSES: dict[str, type[DatePart]] = {
    part: type(
        part.lower(), (DatePart,), {"part": part, "name": part.lower(), "inherit_cache": True}
    )
    for part in DATE_FUNCTIONS - {"DAY_ONLY"}
}


def date_part(part: str, expression: ColumnElement[Any], fiscal_start_month: int = 1) -> DatePart:
    """`date_part("CALENDAR_YEAR", column)`: the SQL for a SOQL date function."""
    return _PART_CLASSES[part](expression, fiscal_start_month)


class day_only(FunctionElement[Any]):
    """DAY_ONLY(datetime): the UTC calendar date."""

    type = Date()
    inherit_cache = True
    name = "day_only"


class to_local_time(FunctionElement[Any]):
    """convertTimezone(datetime): the UTC value moved to the org's time zone."""

    inherit_cache = True
    name = "to_local_time"

    def __init__(self, expression: ColumnElement[Any], zone: str):
        self.type = expression.type
        super().__init__(expression, bindparam(None, zone))


class case_insensitive(FunctionElement[Any]):
    """Text that compares case-insensitively, as its columns do, though built from several."""

    inherit_cache = True
    name = "case_insensitive"

    def __init__(self, expression: ColumnElement[Any]):
        # Typed as a text column is, so what it is compared with binds as such (citext).
        self.type = CaseInsensitiveText()
        super().__init__(expression)


def _args(element: FunctionElement[Any], compiler: SQLCompiler, **kw: Any) -> list[str]:
    return [compiler.process(clause, **kw) for clause in element.clauses]


def _backend(compiler: SQLCompiler, element: FunctionElement[Any]) -> Backend:
    try:
        return backend_for(compiler.dialect.name)
    except UnknownBackend:
        # A dialect no back end answers for (str() of a statement uses SQLAlchemy's default
        # one): there is no spelling to give.
        raise UnsupportedCompilationError(compiler, type(element)) from None


def _date_part_sql(backend: Backend, part: str, value: str, fiscal_start: str) -> str:
    """The SQL of SOQL date function `part` over `value` (SQL text), in `backend`'s spelling."""
    if part in _PLAIN_PARTS:
        return backend.date_field(_PLAIN_PARTS[part], value)
    month = backend.date_field(DateField.MONTH, value)
    year = backend.date_field(DateField.YEAR, value)
    day = backend.date_field(DateField.DAY, value)
    day_of_year = backend.date_field(DateField.DAY_OF_YEAR, value)
    fiscal_month = f"({backend.modulo(f'({month}) - ({fiscal_start}) + 12', '12')} + 1)"
    special = {
        "CALENDAR_QUARTER": f"((({month}) + 2) / 3)",
        "FISCAL_MONTH": fiscal_month,
        "FISCAL_QUARTER": f"(({fiscal_month} + 2) / 3)",
        "DAY_IN_WEEK": f"({backend.date_field(DateField.DAY_OF_WEEK, value)} + 1)",
        "WEEK_IN_MONTH": f"(({day} - 1) / 7 + 1)",
        "WEEK_IN_YEAR": f"(({day_of_year} - 1) / 7 + 1)",
        # A fiscal year is named after the calendar year it starts in.
        "FISCAL_YEAR": f"({year} - CASE WHEN {month} < {fiscal_start} THEN 1 ELSE 0 END)",
    }
    return special[part]


@compiles(DatePart)
def _date_part(element: DatePart, compiler: SQLCompiler, **kw: Any) -> str:
    value, fiscal_start = _args(element, compiler, **kw)
    return _date_part_sql(_backend(compiler, element), element.part, value, fiscal_start)


@compiles(day_only)
def _day_only(element: day_only, compiler: SQLCompiler, **kw: Any) -> str:
    return _backend(compiler, element).day_only(_args(element, compiler, **kw)[0])


@compiles(to_local_time)
def _to_local(element: to_local_time, compiler: SQLCompiler, **kw: Any) -> str:
    value, zone = _args(element, compiler, **kw)
    return _backend(compiler, element).to_local(value, zone)


# DISTANCE() units: the mean Earth radius in each.
EARTH_RADIUS = {"mi": 3958.7613, "km": 6371.0088}


class GeoDistance(FunctionElement[float]):
    """The great-circle distance from a record's location to a fixed point (haversine)."""

    type = Float()
    inherit_cache = True

    def __init__(
        self,
        latitude: ColumnElement[Any],
        longitude: ColumnElement[Any],
        point: tuple[float, float],
        radius: float,
    ):
        super().__init__(
            latitude,
            longitude,
            bindparam(None, point[0], type_=Float()),
            bindparam(None, point[1], type_=Float()),
            bindparam(None, radius, type_=Float()),
        )


@compiles(GeoDistance)
def _distance(element: GeoDistance, compiler: SQLCompiler, **kw: Any) -> str:
    lat1, lon1, lat2, lon2, radius = _args(element, compiler, **kw)
    return _backend(compiler, element).distance(lat1, lon1, lat2, lon2, radius)


@compiles(case_insensitive)
def _case_insensitive(element: case_insensitive, compiler: SQLCompiler, **kw: Any) -> str:
    return _backend(compiler, element).case_insensitive(_args(element, compiler, **kw)[0])
