"""Every SOQL function, one spec each (what a spec holds: function_spec.py).

Binding asks the registry what a name means; a name it does not know, or knows but not in that
clause, is Salesforce's "Unknown function" there. Adding a function of one field that SQL
computes is one spec here (or in `FUNCTIONS.with_specs(spec)`), and it works in SELECT, WHERE,
GROUP BY and ORDER BY (tests/soql/test_function_registry.py).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement

from app.metadata.model import FieldType
from app.soql.function_spec import (
    EVERY_CLAUSE,
    EXPRESSION_CLAUSES,
    AggregateFunction,
    Clause,
    FunctionKind,
    FunctionSpec,
    Transform,
    date_or_number_json,
)
from app.soql.functions import DATE_FUNCTIONS, date_part, day_only


class FunctionRegistry:
    """Function specs by upper-case name. Immutable: `with_specs` makes an extended registry,
    which an application is built with (create_app(functions=...)) and binding reads from the
    request's context."""

    def __init__(self, specs: Iterable[FunctionSpec]) -> None:
        self._specs = {spec.name.upper(): spec for spec in specs}

    def get(self, name: str) -> FunctionSpec | None:
        return self._specs.get(name.upper())

    def kind_of(self, name: str) -> FunctionKind | None:
        spec = self.get(name)
        return None if spec is None else spec.kind

    def with_specs(self, *specs: FunctionSpec) -> FunctionRegistry:
        """This registry and `specs`, which must name new functions."""
        for spec in specs:
            if spec.name.upper() in self._specs:
                raise ValueError(f"{spec.name} is a SOQL function already")
        return FunctionRegistry([*self._specs.values(), *specs])


_DATE_AND_DATETIME = frozenset({FieldType.DATE, FieldType.DATETIME})
# The parts of a day: a date has none of them.
_DATETIME_ONLY = frozenset({"HOUR_IN_DAY", "DAY_ONLY"})


def _date_part_sql(part: str, value: ColumnElement[Any], fiscal_start_month: int) -> Any:
    return date_part(part, value, fiscal_start_month)


def _day_only_sql(value: ColumnElement[Any], _fiscal_start_month: int) -> Any:
    return day_only(value)


def _date_function(name: str) -> FunctionSpec:
    day_only_function = name == "DAY_ONLY"
    return FunctionSpec(
        name=name,
        kind=FunctionKind.ROW,
        clauses=EVERY_CLAUSE,
        argument_types=frozenset({FieldType.DATETIME})
        if name in _DATETIME_ONLY
        else _DATE_AND_DATETIME,
        result_type=FieldType.DATE if day_only_function else FieldType.INT,
        sql=_day_only_sql if day_only_function else functools.partial(_date_part_sql, name),
        to_json=date_or_number_json,
        date_function=True,
    )


def _aggregate(function: AggregateFunction) -> FunctionSpec:
    return FunctionSpec(
        name=function.value,
        kind=FunctionKind.AGGREGATE,
        clauses=EXPRESSION_CLAUSES,
        aggregate=function,
    )


def _transform(transform: Transform, clauses: Clause = Clause.SELECT) -> FunctionSpec:
    return FunctionSpec(
        name=transform.value.upper(),
        kind=FunctionKind.TRANSFORM,
        clauses=clauses,
        transform=transform,
    )


BUILT_IN = (
    *(_date_function(name) for name in sorted(DATE_FUNCTIONS)),
    *(_aggregate(function) for function in AggregateFunction),
    # toLabel() also filters: `WHERE toLabel(Status) = 'Closed'` compares labels.
    _transform(Transform.LABEL, Clause.SELECT | Clause.WHERE | Clause.HAVING),
    _transform(Transform.FORMAT),
    _transform(Transform.CURRENCY),
    FunctionSpec(
        "DISTANCE", FunctionKind.DISTANCE, EXPRESSION_CLAUSES, result_type=FieldType.DOUBLE
    ),
    FunctionSpec("GROUPING", FunctionKind.GROUPING, EXPRESSION_CLAUSES),
    FunctionSpec("FIELDS", FunctionKind.FIELDS, Clause.SELECT),
    FunctionSpec("ROLLUP", FunctionKind.GROUPING_SET, Clause.GROUP_BY),
    FunctionSpec("CUBE", FunctionKind.GROUPING_SET, Clause.GROUP_BY),
    FunctionSpec("CONVERTTIMEZONE", FunctionKind.TIME_ZONE, Clause(0)),
)

FUNCTIONS = FunctionRegistry(BUILT_IN)
