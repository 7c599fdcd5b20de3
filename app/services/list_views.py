"""List views: each object has one, "All", whose results run a real SOQL query of its columns
(the name field and a few others, with the audit fields hidden), ordered by name."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from app.errors import NotFound, SalesforceError
from app.metadata.model import COMPOUND_TYPES, FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.services.context import OrgContext
from app.services.cursors import CursorStore
from app.services.layouts import object_number
from app.services.numbers import parse_count
from app.services.query import run_query
from app.storage.ids import make_id

LIST_VIEW_PREFIX = "00B"
VISIBLE_COLUMNS = 4
HIDDEN_COLUMNS = ("Id", "CreatedDate", "LastModifiedDate", "SystemModstamp")
DEFAULT_LIMIT = 25
MAX_LIMIT = 2000
MAX_OFFSET = 2000
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9]")


@dataclass(frozen=True)
class ListView:
    sobject: SObjectDef
    id: str
    developer_name: str
    label: str
    visible: tuple[FieldDef, ...]
    hidden: tuple[FieldDef, ...]

    @property
    def order_field(self) -> str:
        return self.visible[0].name if self.visible else "Id"

    @property
    def query(self) -> str:
        names = ", ".join(f.name for f in (*self.visible, *self.hidden))
        return (
            f"SELECT {names} FROM {self.sobject.name} "
            f"ORDER BY {self.order_field} ASC NULLS FIRST, Id ASC NULLS FIRST"
        )


def _listed_part(sobject: SObjectDef, field: FieldDef) -> bool:
    """An address's street, city, state, postal code and country are list view columns; its
    coordinates and their accuracy, and a location's, are not."""
    compound = sobject.field(field.compound_field_name or "")
    return (
        compound is not None
        and compound.type is FieldType.ADDRESS
        and field.is_text
        and not field.restricted_picklist
    )


def _listed(sobject: SObjectDef, field: FieldDef) -> bool:
    return (
        (field.compound_field_name is None or _listed_part(sobject, field))
        and not field.system
        and not field.is_long_text
        and field.type is not FieldType.ID
        and field.type not in COMPOUND_TYPES
    )


def all_view(sobject: SObjectDef) -> ListView:
    listed = [f for f in sobject.fields if _listed(sobject, f)]
    listed.sort(key=lambda f: not f.name_field)  # the name field first
    hidden = [f for name in HIDDEN_COLUMNS if (f := sobject.field(name)) is not None]
    plural = sobject.label_plural
    return ListView(
        sobject=sobject,
        id=make_id(LIST_VIEW_PREFIX, object_number(sobject)),
        developer_name="All" + _NOT_IN_NAME.sub("", plural),
        label=f"All {plural}",
        visible=tuple(listed[:VISIBLE_COLUMNS]),
        hidden=tuple(hidden),
    )


def find_view(sobject: SObjectDef, view_id: str) -> ListView:
    view = all_view(sobject)
    if view_id[:15] != view.id[:15]:
        raise NotFound()
    return view


def view_by_id(registry: SchemaRegistry, view_id: str) -> ListView | None:
    """The list view an id names, of whichever object (15 or 18 characters)."""
    for sobject in registry:
        view = all_view(sobject)
        if view.id[:15] == view_id[:15]:
            return view
    return None


def view_entry(view: ListView, base: str) -> dict[str, Any]:
    url = f"{base}/sobjects/{view.sobject.name}/listviews/{view.id}"
    return {
        "describeUrl": f"{url}/describe",
        "developerName": view.developer_name,
        "id": view.id,
        "label": view.label,
        "resultsUrl": f"{url}/results",
        "soqlCompatible": True,
        "url": url,
    }


def list_views(sobject: SObjectDef, base: str) -> dict[str, Any]:
    return {
        "done": True,
        "listviews": [view_entry(all_view(sobject), base)],
        "nextRecordsUrl": None,
        "size": 1,
        "sobjectType": sobject.name,
    }


def _column(field: FieldDef, *, hidden: bool, sort_index: int | None) -> dict[str, Any]:
    return {
        "ascendingLabel": "A-Z" if field.is_text else "Low to High",
        "descendingLabel": "Z-A" if field.is_text else "High to Low",
        "fieldNameOrPath": field.name,
        "hidden": hidden,
        "label": field.label,
        "searchable": field.is_text,
        "selectListItem": field.name,
        "sortDirection": "ascending" if sort_index is not None else None,
        "sortIndex": sort_index,
        "sortable": field.sortable,
        "type": field.type.value,
    }


def columns(view: ListView) -> list[dict[str, Any]]:
    visible = [
        _column(f, hidden=False, sort_index=0 if f.name == view.order_field else None)
        for f in view.visible
    ]
    return visible + [_column(f, hidden=True, sort_index=None) for f in view.hidden]


def describe_view(view: ListView) -> dict[str, Any]:
    return {
        "columns": columns(view),
        "id": view.id,
        "orderBy": [
            {
                "fieldNameOrPath": view.order_field,
                "nullsPosition": "first",
                "sortDirection": "ascending",
            },
            {"fieldNameOrPath": "Id", "nullsPosition": "first", "sortDirection": "ascending"},
        ],
        "query": view.query,
        "relatedEntityId": None,
        "scope": "everything",
        "scopeEntityId": None,
        "sobjectType": view.sobject.name,
        "whereCondition": {"conditions": [], "conjunction": "and"},
    }


def _bounded(text: str | None, default: int, most: int, name: str) -> int:
    if text is None:
        return default
    value = parse_count(text)
    if value is None or value > most:
        raise SalesforceError(
            f"The '{name}' parameter must be a number from 0 to {most}",
            error_code="INVALID_QUERY_FILTER_OPERATOR" if name == "offset" else "INVALID_INPUT",
        )
    return value


def _cell(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def view_results(
    conn: Connection,
    ctx: OrgContext,
    cursors: CursorStore,
    view: ListView,
    *,
    limit_text: str | None,
    offset_text: str | None,
) -> dict[str, Any]:
    """`/listviews/{id}/results`: a page of the view's rows (25 unless `limit` says, up to
    2,000, after `offset`), each as its columns' values."""
    limit = _bounded(limit_text, DEFAULT_LIMIT, MAX_LIMIT, "limit")
    offset = _bounded(offset_text, 0, MAX_OFFSET, "offset")
    total = run_query(
        conn,
        ctx,
        cursors,
        f"SELECT COUNT() FROM {view.sobject.name}",
        include_deleted=False,
        batch_size=MAX_LIMIT,
    )["totalSize"]
    page = run_query(
        conn,
        ctx,
        cursors,
        f"{view.query} LIMIT {limit} OFFSET {offset}",
        include_deleted=False,
        batch_size=MAX_LIMIT,
    )["records"]
    names = [f.name for f in (*view.visible, *view.hidden)]
    return {
        "columns": columns(view),
        "developerName": view.developer_name,
        "done": offset + len(page) >= total,
        "id": view.id,
        "label": view.label,
        "records": [
            {"columns": [{"fieldNameOrPath": n, "value": _cell(row.get(n))} for n in names]}
            for row in page
        ],
        "size": len(page),
    }
