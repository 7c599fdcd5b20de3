"""Query results as a table: nested parents flattened to dotted columns (Account.Name), child
subqueries summed up, record ids made links to their record pages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.console.records import RECORD_ID
from app.metadata.registry import SchemaRegistry


@dataclass(frozen=True)
class Cell:
    text: str
    href: str | None = None


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[Cell]]


def record_href(registry: SchemaRegistry, sandbox_id: str, value: str) -> str | None:
    """The console page of the record an id names, if it is one of the org's."""
    if not RECORD_ID.fullmatch(value):
        return None
    sobject = registry.by_key_prefix(value[:3])
    if sobject is None:
        return None
    return f"/console/sandboxes/{sandbox_id}/objects/{sobject.name}/{value}"


def _flatten(record: dict[str, Any], prefix: str, into: dict[str, Any]) -> None:
    for key, value in record.items():
        if key == "attributes":
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict) and "records" in value and "totalSize" in value:
            into[name] = f"{value['totalSize']} records"
        elif isinstance(value, dict) and "attributes" in value:
            _flatten(value, f"{name}.", into)
        else:
            into[name] = value


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


def table_of(
    records: list[dict[str, Any]], registry: SchemaRegistry, sandbox_id: str, *, typed: bool = False
) -> Table:
    """The records as rows; `typed` adds each one's sObject type first (SOSL mixes types)."""
    flat = []
    columns: dict[str, None] = {}
    for record in records:
        row: dict[str, Any] = {}
        attributes = record.get("attributes")
        if typed and isinstance(attributes, dict):
            row["type"] = attributes.get("type")
        _flatten(record, "", row)
        columns.update(dict.fromkeys(row))
        flat.append(row)
    rows = []
    for row in flat:
        cells = []
        for column in columns:
            text = _text(row.get(column))
            cells.append(Cell(text, record_href(registry, sandbox_id, text)))
        rows.append(cells)
    return Table(list(columns), rows)
