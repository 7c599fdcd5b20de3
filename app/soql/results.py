"""Shapes result rows into Salesforce's JSON records: attributes first, fields in SELECT order
under canonical names, parent records nested (or null), aggregates as AggregateResult."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from app.metadata.model import FieldDef
from app.metadata.values import to_json
from app.soql.bound import (
    AggregateFunction,
    BoundAggregate,
    BoundColumn,
    BoundDateFunction,
    Hop,
)
from app.soql.compiler import CompiledQuery


def _aggregate_value(aggregate: BoundAggregate, value: Any) -> Any:
    if aggregate.function in (AggregateFunction.COUNT, AggregateFunction.COUNT_DISTINCT):
        return int(value or 0)
    if aggregate.function in (AggregateFunction.SUM, AggregateFunction.AVG):
        return None if value is None else float(value)
    assert aggregate.path is not None
    return to_json(aggregate.path.field, value)


def shape_aggregate(compiled: CompiledQuery, row: Sequence[Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"attributes": {"type": "AggregateResult"}}
    for item, index in zip(compiled.bound.select, compiled.value_index, strict=True):
        if isinstance(item, BoundAggregate):
            if not item.name.startswith("__hidden"):
                record[item.name] = _aggregate_value(item, row[index])
        elif isinstance(item, BoundDateFunction):
            value = row[index]
            # DAY_ONLY gives a date (ISO text); the other functions integers.
            record[item.name] = value.isoformat() if isinstance(value, date) else value
        else:
            # A grouped field appears under its own name, whatever path selected it.
            record[item.path.field.name] = to_json(item.path.field, row[index])
    return record


@dataclass(frozen=True)
class _Column:
    """Where one selected field lands: the parent hops on the way (with the row index of each
    parent's Id), then the field and the row index of its value."""

    hops: tuple[tuple[Hop, int], ...]
    field: FieldDef
    index: int


def _record_plan(compiled: CompiledQuery) -> list[_Column]:
    """Work out once per batch, not once per row, where each selected field lands."""
    plan = []
    for item, index in zip(compiled.bound.select, compiled.value_index, strict=True):
        assert isinstance(item, BoundColumn)
        hops = []
        key: tuple[str, ...] = ()
        for hop in item.path.hops:
            key = (*key, hop.name.lower())
            hops.append((hop, compiled.parent_id_index[key]))
        plan.append(_Column(tuple(hops), item.path.field, index))
    return plan


def _shape(
    plan: list[_Column], sobject_name: str, row: Sequence[Any], base_path: str
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "attributes": {"type": sobject_name, "url": f"{base_path}/sobjects/{sobject_name}/{row[0]}"}
    }
    for column in plan:
        container: dict[str, Any] | None = record
        for hop, parent_index in column.hops:
            assert container is not None
            if hop.name not in container:
                parent_id = row[parent_index]
                container[hop.name] = (
                    None
                    if parent_id is None
                    else {
                        "attributes": {
                            "type": hop.target.name,
                            "url": f"{base_path}/sobjects/{hop.target.name}/{parent_id}",
                        }
                    }
                )
            container = container[hop.name]
            if container is None:
                break
        if container is not None:
            container[column.field.name] = to_json(column.field, row[column.index])
    return record


def shape_rows(
    compiled: CompiledQuery, rows: Sequence[Sequence[Any]], base_path: str
) -> list[dict[str, Any]]:
    if compiled.bound.is_aggregate:
        return [shape_aggregate(compiled, row) for row in rows]
    plan = _record_plan(compiled)
    name = compiled.bound.sobject.name
    return [_shape(plan, name, row, base_path) for row in rows]
