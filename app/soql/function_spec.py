"""What a SOQL function is, as data: its kind, the clauses it may appear in, the field types it
takes, its result type, its SQL and how its value is written as JSON.

The specs themselves are listed in function_registry.py; every clause's binding asks the
registry what a name means instead of comparing names.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from enum import Enum, Flag, StrEnum, auto
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from app.metadata.model import FieldType


class Clause(Flag):
    SELECT = auto()
    WHERE = auto()
    HAVING = auto()
    GROUP_BY = auto()
    ORDER_BY = auto()


# Where a value of a row, or of a group, can be named.
EXPRESSION_CLAUSES = Clause.SELECT | Clause.WHERE | Clause.HAVING | Clause.ORDER_BY
EVERY_CLAUSE = EXPRESSION_CLAUSES | Clause.GROUP_BY


class FunctionKind(Enum):
    """How a function binds: each kind has one binder (bind_expression.py, select_list.py)."""

    AGGREGATE = "aggregate"  # COUNT, SUM, ...: one value per group
    ROW = "row"  # one value per row from one field: the date functions, and SQL-backed ones
    DISTANCE = "distance"  # DISTANCE(location, GEOLOCATION(lat, lon), unit)
    GROUPING = "grouping"  # GROUPING(field): is this a subtotal row over the field
    TRANSFORM = "transform"  # toLabel, FORMAT, convertCurrency: how a selected value is written
    FIELDS = "fields"  # FIELDS(ALL | STANDARD | CUSTOM)
    GROUPING_SET = "grouping set"  # GROUP BY ROLLUP(...) or CUBE(...)
    TIME_ZONE = "time zone"  # convertTimezone(field): only as a date function's argument


class AggregateFunction(StrEnum):
    COUNT = "COUNT"
    COUNT_DISTINCT = "COUNT_DISTINCT"
    SUM = "SUM"
    AVG = "AVG"
    MIN = "MIN"
    MAX = "MAX"


class Transform(StrEnum):
    """A SELECT function that changes how a field's value is written, not which rows match."""

    LABEL = "toLabel"
    FORMAT = "FORMAT"
    CURRENCY = "convertCurrency"


# A row function's SQL: from the SQL of its field's value (moved to the org's time zone when
# wrapped in convertTimezone) and the org's fiscal year start month.
RowSql = Callable[[ColumnElement[Any], int], ColumnElement[Any]]


def _as_is(value: Any) -> Any:
    return value


def date_or_number_json(value: Any) -> Any:
    # DAY_ONLY gives a date (ISO text); the other date functions integers.
    return value.isoformat() if isinstance(value, date) else value


@dataclass(frozen=True)
class FunctionSpec:
    """One SOQL function. `name` is upper-case; the others matter for the kinds that read them:

    - every kind: `clauses`, where it may appear (elsewhere it is an unknown function there);
    - ROW: `argument_types` (the field types it takes), `result_type`, `sql`, `to_json`, and
      `date_function` (it takes convertTimezone(field), a grouped date field groups it, and it
      is selected only when grouped, as Salesforce's date functions are);
    - AGGREGATE: `aggregate`; TRANSFORM: `transform`.
    """

    name: str
    kind: FunctionKind
    clauses: Clause
    argument_types: frozenset[FieldType] = frozenset()
    result_type: FieldType = FieldType.INT
    sql: RowSql | None = None
    to_json: Callable[[Any], Any] = _as_is
    date_function: bool = False
    aggregate: AggregateFunction | None = None
    transform: Transform | None = None

    def allowed_in(self, clause: Clause) -> bool:
        return clause in self.clauses

    def row_sql(self, value: ColumnElement[Any], fiscal_start_month: int) -> ColumnElement[Any]:
        assert self.sql is not None, f"{self.name} is not a row function"
        return self.sql(value, fiscal_start_month)


_element_names = itertools.count()


class _TemplateFunction(FunctionElement[Any]):
    inherit_cache = True
    templates: Mapping[str, str] = {}


def sql_per_dialect(templates: Mapping[str, str], result: Any = None) -> RowSql:
    """A row function's SQL from one template per back end (`{0}` is the field's value), with
    "default" for any back end not named: `sql_per_dialect({"default": "length({0})"})`.

    Each call makes its own SQL element type, so that the template is part of the statement's
    cache key."""
    element = type(
        f"soql_function_{next(_element_names)}",
        (_TemplateFunction,),
        {"templates": dict(templates), "inherit_cache": True, "type": result},
    )

    def compile_template(element: _TemplateFunction, compiler: SQLCompiler, **kw: Any) -> str:
        value = compiler.process(element.clauses, **kw)
        spelling = element.templates.get(compiler.dialect.name, element.templates.get("default"))
        assert spelling is not None, f"no SQL for {compiler.dialect.name}"
        return spelling.format(value)

    compiles(element)(compile_template)
    return lambda value, _fiscal_start_month: element(value)
