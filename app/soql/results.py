"""Shapes result rows into Salesforce's JSON records: attributes first, fields in SELECT order
under canonical names, parent records nested (or null), TYPEOF as the record the polymorphic
lookup points at, child subqueries as `{totalSize, done, records}` (or null), aggregates as
AggregateResult.

Child subqueries' rows come read already (execute.py): shaping reads no database.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from app.metadata.model import FieldDef, FieldType
from app.metadata.values import json_converter, to_json
from app.soql.bound import (
    BoundAggregate,
    BoundColumn,
    BoundDistance,
    BoundFunction,
    BoundGrouping,
    Hop,
)
from app.soql.compiler import ChildQuery, CompiledQuery, TypeOfColumns
from app.soql.execute import Children, ResultRows
from app.soql.formatting import format_value, to_label
from app.soql.function_spec import AggregateFunction, Transform
from app.soql.name_entity import NAME_ENTITY

# The type of an aggregate of numbers: written as a double.
_DOUBLE = FieldDef(name="expr", type=FieldType.DOUBLE, label="expr", scale=2)
_DISTANCE_JSON = json_converter(_DOUBLE)
_INTEGER = FieldDef(name="expr", type=FieldType.INT, label="expr")
_DATETIME_JSON = json_converter(FieldDef(name="expr", type=FieldType.DATETIME, label="expr"))


def _aggregate_value(aggregate: BoundAggregate, value: Any, zone: str) -> Any:
    if aggregate.function in (AggregateFunction.COUNT, AggregateFunction.COUNT_DISTINCT):
        number = int(value or 0)
        return format_value(_INTEGER, number, zone) if aggregate.formatted else number
    if aggregate.function in (AggregateFunction.SUM, AggregateFunction.AVG):
        if value is None:
            return None
        assert aggregate.path is not None
        field = aggregate.path.field
        if aggregate.formatted:
            return format_value(field if field.type is FieldType.CURRENCY else _DOUBLE, value, zone)
        return float(value)
    assert aggregate.path is not None
    if aggregate.formatted:
        return format_value(aggregate.path.field, value, zone)
    return to_json(aggregate.path.field, value)


def _converter(column: BoundColumn, zone: str) -> Callable[[Any], Any]:
    """How a selected column's stored value is written: as JSON, or as toLabel()/FORMAT() say."""
    field = column.path.field
    if column.transform is Transform.LABEL:
        return functools.partial(to_label, field)
    if column.transform is Transform.FORMAT:
        return lambda value: format_value(field, value, zone)
    return json_converter(field)


def _null_or(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    # A rolled-up key is null, even a checkbox's, which is never null in a record.
    return lambda value: None if value is None else convert(value)


# An AggregateResult key, the row index of its value, and how that value is written.
_AggregateKey = tuple[str, int, Callable[[Any], Any]]


def _aggregate_plan(compiled: CompiledQuery, zone: str) -> list[_AggregateKey]:
    """Each output key of an AggregateResult, its row index and how its value is written: worked
    out once per batch, not once per row."""
    plan: list[_AggregateKey] = []
    for item, index in zip(compiled.bound.select, compiled.value_index, strict=True):
        assert isinstance(index, int)
        if isinstance(item, BoundAggregate):
            if not item.name.startswith("__hidden"):
                convert = functools.partial(_aggregate_value, item, zone=zone)
                plan.append((item.name, index, convert))
        elif isinstance(item, BoundFunction):
            plan.append((item.name, index, item.spec.to_json))
        elif isinstance(item, BoundGrouping):
            plan.append((item.name, index, int))
        else:
            assert isinstance(item, BoundColumn)
            # A grouped field appears under its own name, whatever path selected it.
            key = item.alias or item.path.field.name
            plan.append((key, index, _null_or(_converter(item, zone))))
    return plan


def _shape_aggregate(plan: list[_AggregateKey], row: Sequence[Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"attributes": {"type": "AggregateResult"}}
    for key, index, convert in plan:
        record[key] = convert(row[index])
    return record


@dataclass(frozen=True)
class _Column:
    """Where one selected field lands: the parent hops on the way (with the row index of each
    parent's Id), then the field and the row index of its value."""

    hops: tuple[tuple[Hop, int], ...]
    key: str
    convert: Callable[[Any], Any]
    index: int
    # A base64 field: its value is the URL its content is read at, under its record's.
    blob: bool = False


_Planned = _Column | TypeOfColumns | ChildQuery


def _record_plan(compiled: CompiledQuery, zone: str) -> list[_Planned]:
    """Work out once per batch, not once per row, where each selected item lands."""
    plan: list[_Planned] = []
    for item, slot in zip(compiled.bound.select, compiled.value_index, strict=True):
        if not isinstance(slot, int):
            plan.append(slot)
            continue
        if isinstance(item, BoundDistance):
            plan.append(_Column((), item.name, _DISTANCE_JSON, slot))
            continue
        if isinstance(item, BoundFunction):
            plan.append(_Column((), item.name, _null_or(item.spec.to_json), slot))
            continue
        assert isinstance(item, BoundColumn)
        hops = []
        key: tuple[str, ...] = ()
        # An aliased toLabel()/FORMAT() of a parent field is written at the top level.
        for hop in () if item.alias else item.path.hops:
            key = (*key, hop.name.lower())
            hops.append((hop, compiled.parent_id_index[key]))
        key_name = item.alias or item.path.field.name
        blob = item.transform is None and item.path.field.type is FieldType.BASE64
        plan.append(_Column(tuple(hops), key_name, _converter(item, zone), slot, blob))
    return plan


def wire_datetime_columns(compiled: CompiledQuery) -> frozenset[int]:
    """The row indexes of a record query's DateTime fields written as they are stored (no
    FORMAT(), not aggregated, not under TYPEOF): a back end may read these straight to their
    wire text (Backend.wire_datetimes), which their converter then passes on."""
    if compiled.bound.is_aggregate:
        return frozenset()
    columns = [planned for planned in _record_plan(compiled, "UTC") if isinstance(planned, _Column)]
    as_stored = {c.index for c in columns if c.convert is _DATETIME_JSON}
    return frozenset(as_stored - {c.index for c in columns if c.convert is not _DATETIME_JSON})


def _attributes(sobject_name: str, record_id: Any, base_path: str) -> dict[str, Any]:
    return {"type": sobject_name, "url": f"{base_path}/sobjects/{sobject_name}/{record_id}"}


def _parent_attributes(hop: Hop, record_id: str, base_path: str) -> dict[str, Any]:
    """A parent record's attributes: through a polymorphic lookup it is the Name entity, whose
    url still names the object the record is."""
    attributes = _attributes(hop.type_of(record_id), record_id, base_path)
    if hop.alternatives:
        attributes["type"] = NAME_ENTITY
    return attributes


def _typeof_value(columns: TypeOfColumns, row: Sequence[Any], base_path: str) -> Any:
    for branch, id_index, indexes in columns.branches:
        record_id = row[id_index]
        if record_id is None:
            continue
        attributes = _attributes(branch.target.name, record_id, base_path)
        related: dict[str, Any] = {"attributes": attributes}
        for field, index in zip(branch.fields, indexes, strict=True):
            related[field.name] = to_json(field, row[index])
        return related
    return None


def _shape(
    plan: list[_Planned], sobject_name: str, row: Sequence[Any], base_path: str
) -> dict[str, Any]:
    record: dict[str, Any] = {"attributes": _attributes(sobject_name, row[0], base_path)}
    for planned in plan:
        if isinstance(planned, TypeOfColumns):
            record[planned.typeof.name] = _typeof_value(planned, row, base_path)
            continue
        if isinstance(planned, ChildQuery):
            # A placeholder keeps the SELECT order; the batch's children fill it in.
            record[planned.subquery.relationship] = None
            continue
        container: dict[str, Any] | None = record
        for hop, parent_index in planned.hops:
            assert container is not None
            if hop.name not in container:
                parent_id = row[parent_index]
                container[hop.name] = (
                    None
                    if parent_id is None
                    else {"attributes": _parent_attributes(hop, parent_id, base_path)}
                )
            container = container[hop.name]
            if container is None:
                break
        if container is None:
            continue
        value = row[planned.index]
        if planned.blob and value is not None:
            container[planned.key] = f"{container['attributes']['url']}/{planned.key}"
        else:
            container[planned.key] = planned.convert(value)
    return record


def _add_children(
    child: ChildQuery,
    records: list[dict[str, Any]],
    rows: Sequence[Sequence[Any]],
    fetched: Children,
    base_path: str,
    zone: str,
) -> None:
    """Each record's children of one subquery, grouped by the parent Id they link to."""
    shaped = shape_rows(child.compiled, fetched.rows, base_path, zone)
    by_parent: dict[str, list[dict[str, Any]]] = {}
    for child_row, child_record in zip(fetched.rows.rows, shaped, strict=True):
        by_parent.setdefault(child_row[fetched.link_index], []).append(child_record)
    name = child.subquery.relationship
    for record, row in zip(records, rows, strict=True):
        found = by_parent.get(row[0])
        if found:
            record[name] = {"totalSize": len(found), "done": True, "records": found}


def shape_rows(
    compiled: CompiledQuery, result: ResultRows, base_path: str, zone: str = "UTC"
) -> list[dict[str, Any]]:
    """The records of `result` (its children read already: see execute.py); `zone` is
    FORMAT()'s time zone."""
    rows = result.rows
    if compiled.bound.is_aggregate:
        aggregate_plan = _aggregate_plan(compiled, zone)
        return [_shape_aggregate(aggregate_plan, row) for row in rows]
    plan = _record_plan(compiled, zone)
    name = compiled.bound.sobject.name
    records = [_shape(plan, name, row, base_path) for row in rows]
    for fetched in result.children:
        child = compiled.value_index[fetched.slot]
        assert isinstance(child, ChildQuery)
        _add_children(child, records, rows, fetched, base_path, zone)
    return records
