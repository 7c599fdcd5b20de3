"""SOQL date functions as SQL, one definition per dialect (SQLite and PostgreSQL).

Each function is a SQLAlchemy construct compiled per dialect; nothing else in the pipeline
knows which database it runs on. Values are evaluated in UTC unless wrapped in convertTimezone,
as in Salesforce. Weeks in DAY_IN_WEEK start on Sunday (1); WEEK_IN_MONTH and WEEK_IN_YEAR count
7-day blocks from the 1st of the month or year.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Date, Float, Integer, bindparam
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

# strftime / EXTRACT spellings of the plain calendar parts.
_SQLITE_PARTS = {
    "CALENDAR_YEAR": "%Y",
    "CALENDAR_MONTH": "%m",
    "DAY_IN_MONTH": "%d",
    "DAY_IN_YEAR": "%j",
    "HOUR_IN_DAY": "%H",
}
_POSTGRES_PARTS = {
    "CALENDAR_YEAR": "YEAR",
    "CALENDAR_MONTH": "MONTH",
    "DAY_IN_MONTH": "DAY",
    "DAY_IN_YEAR": "DOY",
    "HOUR_IN_DAY": "HOUR",
}
DATE_FUNCTIONS = frozenset(
    {
        *_SQLITE_PARTS,
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


def _args(element: FunctionElement[Any], compiler: SQLCompiler, **kw: Any) -> list[str]:
    return [compiler.process(clause, **kw) for clause in element.clauses]


def _month_expressions(month: str, fiscal_start: str, modulo: str) -> dict[str, str]:
    # modulo: SQLite has the % operator; for psycopg's placeholders PostgreSQL takes MOD().
    fiscal_month = f"({modulo.format(f'({month}) - ({fiscal_start}) + 12', '12')} + 1)"
    return {
        "CALENDAR_QUARTER": f"((({month}) + 2) / 3)",
        "FISCAL_MONTH": fiscal_month,
        "FISCAL_QUARTER": f"(({fiscal_month} + 2) / 3)",
    }


@compiles(DatePart, "sqlite")
def _date_part_sqlite(element: DatePart, compiler: SQLCompiler, **kw: Any) -> str:
    value, fiscal_start = _args(element, compiler, **kw)
    if element.part in _SQLITE_PARTS:
        return f"CAST(strftime('{_SQLITE_PARTS[element.part]}', {value}) AS INTEGER)"
    month = f"CAST(strftime('%m', {value}) AS INTEGER)"
    year = f"CAST(strftime('%Y', {value}) AS INTEGER)"
    day = f"CAST(strftime('%d', {value}) AS INTEGER)"
    day_of_year = f"CAST(strftime('%j', {value}) AS INTEGER)"
    special = {
        **_month_expressions(month, fiscal_start, "(({0}) % {1})"),
        "DAY_IN_WEEK": f"(CAST(strftime('%w', {value}) AS INTEGER) + 1)",
        "WEEK_IN_MONTH": f"(({day} - 1) / 7 + 1)",
        "WEEK_IN_YEAR": f"(({day_of_year} - 1) / 7 + 1)",
        # A fiscal year is named after the calendar year it starts in.
        "FISCAL_YEAR": f"({year} - CASE WHEN {month} < {fiscal_start} THEN 1 ELSE 0 END)",
    }
    return special[element.part]


@compiles(DatePart, "postgresql")
def _date_part_postgresql(element: DatePart, compiler: SQLCompiler, **kw: Any) -> str:
    value, fiscal_start = _args(element, compiler, **kw)

    def extract(field: str) -> str:
        return f"CAST(EXTRACT({field} FROM {value}) AS INTEGER)"

    if element.part in _POSTGRES_PARTS:
        return extract(_POSTGRES_PARTS[element.part])
    month = extract("MONTH")
    special = {
        **_month_expressions(month, fiscal_start, "MOD({0}, {1})"),
        "DAY_IN_WEEK": f"({extract('DOW')} + 1)",
        "WEEK_IN_MONTH": f"(({extract('DAY')} - 1) / 7 + 1)",
        "WEEK_IN_YEAR": f"(({extract('DOY')} - 1) / 7 + 1)",
        "FISCAL_YEAR": (
            f"({extract('YEAR')} - CASE WHEN {month} < {fiscal_start} THEN 1 ELSE 0 END)"
        ),
    }
    return special[element.part]


@compiles(day_only, "sqlite")
def _day_only_sqlite(element: day_only, compiler: SQLCompiler, **kw: Any) -> str:
    return f"date({_args(element, compiler, **kw)[0]})"


@compiles(day_only, "postgresql")
def _day_only_postgresql(element: day_only, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST({_args(element, compiler, **kw)[0]} AS DATE)"


@compiles(to_local_time, "sqlite")
def _to_local_sqlite(element: to_local_time, compiler: SQLCompiler, **kw: Any) -> str:
    value, zone = _args(element, compiler, **kw)
    # lf_to_local is registered on every SQLite connection (app/storage/database.py).
    return f"lf_to_local({value}, {zone})"


@compiles(to_local_time, "postgresql")
def _to_local_postgresql(element: to_local_time, compiler: SQLCompiler, **kw: Any) -> str:
    value, zone = _args(element, compiler, **kw)
    return f"timezone({zone}, timezone('UTC', {value}))"


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
def _sqlite_distance(element: GeoDistance, compiler: SQLCompiler, **kw: Any) -> str:
    # SQLite has no trigonometry: app.storage.database registers lf_distance in Python.
    return f"lf_distance({compiler.process(element.clauses, **kw)})"


@compiles(GeoDistance, "postgresql")
def _postgres_distance(element: GeoDistance, compiler: SQLCompiler, **kw: Any) -> str:
    lat1, lon1, lat2, lon2, radius = (compiler.process(c, **kw) for c in element.clauses)
    chord = (
        f"power(sin(radians({lat2} - {lat1}) / 2), 2) + cos(radians({lat1})) * "
        f"cos(radians({lat2})) * power(sin(radians({lon2} - {lon1}) / 2), 2)"
    )
    # Rounding can push the chord a hair above 1; LEAST would also turn a null into 1.
    return f"(2 * {radius} * asin(sqrt(CASE WHEN {chord} > 1 THEN 1 ELSE {chord} END)))"
