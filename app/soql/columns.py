"""A query's columns as `/query?columns=true` describes them (the Salesforce CLI and the
Developer Console ask for it to lay out a result): one `columnMetadata` entry per selected
column; a relationship path is its relationship's column with the rest as `joinColumns`, a
child subquery is an aggregate column holding the subquery's columns, and an aggregate or
function is an aggregate column named by its key in the rows (its alias, or exprN)."""

from __future__ import annotations

import re
from typing import Any

from app.metadata.model import FieldDef, FieldType
from app.soql.bound import (
    BoundAggregate,
    BoundColumn,
    BoundDistance,
    BoundFunction,
    BoundGrouping,
    BoundPath,
    BoundQuery,
    BoundSubquery,
    BoundTypeOf,
    SelectExpr,
)
from app.soql.function_spec import AggregateFunction

# The Apex type of each field type (Salesforce's numbers are Decimal in Apex).
APEX_TYPES = {
    FieldType.ID: "Id",
    FieldType.REFERENCE: "Id",
    FieldType.BOOLEAN: "Boolean",
    FieldType.INT: "Integer",
    FieldType.DOUBLE: "Decimal",
    FieldType.CURRENCY: "Decimal",
    FieldType.PERCENT: "Decimal",
    FieldType.DATE: "Date",
    FieldType.DATETIME: "Datetime",
    FieldType.TIME: "Time",
    FieldType.LOCATION: "Location",
    FieldType.ADDRESS: "Address",
    FieldType.BASE64: "Blob",
}
_UNALIASED = re.compile(r"expr\d+")
NUMBER_APEX_TYPES = frozenset({"Integer", "Decimal", "Double", "Long"})
# What an aggregate gives, when not the type of its field (MIN and MAX keep the field's).
AGGREGATE_APEX_TYPES = {
    AggregateFunction.COUNT: "Integer",
    AggregateFunction.COUNT_DISTINCT: "Integer",
    AggregateFunction.SUM: "Decimal",
    AggregateFunction.AVG: "Decimal",
}


def _column(
    name: str,
    display: str,
    *,
    apex_type: str | None,
    aggregate: bool = False,
    field: FieldDef | None = None,
    joins: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "aggregate": aggregate,
        "apexType": apex_type,
        "booleanType": apex_type == "Boolean",
        "columnName": name,
        "custom": bool(field and field.custom),
        "displayName": display,
        "foreignKeyName": None,
        "insertable": bool(field and field.createable and not field.system),
        "joinColumns": joins if joins is not None else [],
        "numberType": apex_type in NUMBER_APEX_TYPES,
        "textType": bool(field and field.is_text),
        "updatable": bool(field and field.updateable and not field.system),
    }


def _field_apex_type(field: FieldDef) -> str:
    return APEX_TYPES.get(field.type, "String")


def _path_text(path: BoundPath) -> str:
    return ".".join([*(hop.name for hop in path.hops), path.field.name])


def _path_column(path: BoundPath, name: str | None = None) -> dict[str, Any]:
    """A field, or for `Account.Owner.Name` the column `Account` joining `Owner` joining
    `Name`."""
    field = path.field
    leaf = _column(
        name or field.name, _path_text(path), apex_type=_field_apex_type(field), field=field
    )
    for depth in range(len(path.hops) - 1, -1, -1):
        hop = path.hops[depth]
        display = ".".join(step.name for step in path.hops[: depth + 1])
        # Through a polymorphic lookup (Case.Owner) the parent is the Name entity.
        apex_type = "Name" if hop.alternatives else hop.target.name
        leaf = _column(hop.name, display, apex_type=apex_type, joins=[leaf])
    return leaf


def _expression_column(name: str, written: str, apex_type: str | None) -> dict[str, Any]:
    """An aggregate or function: displayed by its alias, or as written when it has none (its
    rows' key is then exprN)."""
    display = written if _UNALIASED.fullmatch(name) else name
    return _column(name, display, apex_type=apex_type, aggregate=True)


def _aggregate_column(aggregate: BoundAggregate) -> dict[str, Any]:
    path = aggregate.path
    argument = "" if path is None else _path_text(path)
    apex_type = AGGREGATE_APEX_TYPES.get(aggregate.function)
    if apex_type is None and path is not None:
        apex_type = _field_apex_type(path.field)
    display = f"{aggregate.function.value}({argument})"
    return _expression_column(aggregate.name, display, apex_type)


def _select_column(expr: SelectExpr) -> dict[str, Any]:
    if isinstance(expr, BoundColumn):
        return _path_column(expr.path, expr.alias if not expr.path.hops else None)
    if isinstance(expr, BoundAggregate):
        return _aggregate_column(expr)
    if isinstance(expr, BoundFunction):
        apex_type = APEX_TYPES.get(expr.spec.result_type, "String")
        display = f"{expr.function}({_path_text(expr.path)})"
        return _expression_column(expr.name, display, apex_type)
    if isinstance(expr, BoundDistance):
        return _expression_column(expr.name, "DISTANCE", "Decimal")
    if isinstance(expr, BoundGrouping):
        return _expression_column(expr.name, "GROUPING", "Integer")
    if isinstance(expr, BoundSubquery):
        joins = columns_of(expr.query)
        return _column(
            expr.relationship, expr.relationship, apex_type=None, aggregate=True, joins=joins
        )
    return _type_of_column(expr)


def _type_of_column(expr: BoundTypeOf) -> dict[str, Any]:
    """TYPEOF: the relationship's column, joining every field any branch selects."""
    fields: dict[str, FieldDef] = {}
    for branch in expr.branches:
        for field in branch.fields:
            fields.setdefault(field.name, field)
    joins = [
        _column(name, f"{expr.name}.{name}", apex_type=_field_apex_type(field), field=field)
        for name, field in fields.items()
    ]
    return _column(expr.name, expr.name, apex_type="Name", joins=joins)


def _merge(columns: list[dict[str, Any]], column: dict[str, Any]) -> None:
    """Add a column, folding a relationship already present into one (Owner.Name and
    Owner.Email are one `Owner` column joining both)."""
    if column["joinColumns"] and not column["aggregate"]:
        for existing in columns:
            if existing["columnName"] == column["columnName"] and existing["joinColumns"]:
                for join in column["joinColumns"]:
                    _merge(existing["joinColumns"], join)
                return
    columns.append(column)


def columns_of(bound: BoundQuery) -> list[dict[str, Any]]:
    columns: list[dict[str, Any]] = []
    if not bound.count_only:
        for expr in bound.select:
            _merge(columns, _select_column(expr))
    return columns


def column_metadata(bound: BoundQuery) -> dict[str, Any]:
    """The answer of `/query?q=...&columns=true`."""
    id_selected = any(
        isinstance(expr, BoundColumn) and not expr.path.hops and expr.path.field.name == "Id"
        for expr in bound.select
    )
    return {
        "columnMetadata": columns_of(bound),
        "entityName": bound.sobject.name,
        "groupBy": bool(bound.group_by),
        "idSelected": id_selected,
        "keyPrefix": bound.sobject.key_prefix,
    }
