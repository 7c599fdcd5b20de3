"""The record browser's reads, as SOQL through the org's own query service: what a page
shows is what a client's query would return from the same sandbox."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.console.org_view import OrgView
from app.errors import NotFound, SalesforceError
from app.metadata.model import COMPOUND_TYPES, FieldDef, FieldType, SObjectDef
from app.services.query import run_query

PAGE_SIZE = 25
# SOQL's OFFSET stops at 2,000 rows: past it, the search box narrows the list.
MAX_OFFSET = 2000
SUMMARY_FIELDS = 4
RELATED_ROWS = 5
# Child subqueries per query, so one record page costs a few queries, not one per list.
SUBQUERIES_PER_QUERY = 10
RECORD_ID = re.compile(r"[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?")
WIDE_TYPES = frozenset({FieldType.TEXTAREA, *COMPOUND_TYPES, FieldType.JUNCTIONIDLIST})


def soql_string(text: str) -> str:
    """`text` as a SOQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def like_pattern(text: str) -> str:
    """A LIKE literal matching `text` anywhere, its own % and _ taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return "'%" + escaped.replace("'", "\\'") + "%'"


def query(view: OrgView, text: str) -> dict[str, Any]:
    """A query of the browser's: LIMITed to one page, so it never opens a locator."""
    return run_query(
        view.conn, view.ctx, view.cursors, text, include_deleted=False, batch_size=2000
    )


def sobject_of(view: OrgView, name: str) -> SObjectDef:
    sobject = view.ctx.registry.get(name)
    if sobject is None:
        raise NotFound(f"The requested resource does not exist: no sObject named {name}")
    return sobject


def summary_fields(sobject: SObjectDef) -> list[FieldDef]:
    """The columns of a record list: the name, a few of the object's own fields, when made."""
    chosen = [f for f in sobject.fields if f.name_field]
    for candidate in sobject.fields:
        if len(chosen) > SUMMARY_FIELDS:
            break
        if candidate.system or candidate.name_field or candidate.type in WIDE_TYPES:
            continue
        if candidate.is_long_text or candidate.compound_field_name or candidate.html_formatted:
            continue
        chosen.append(candidate)
    created = sobject.field("CreatedDate")
    if created is not None:
        chosen.append(created)
    return chosen


@dataclass
class RecordPage:
    sobject: SObjectDef
    columns: list[FieldDef]
    records: list[dict[str, Any]]
    total: int
    page: int
    term: str

    @property
    def pages(self) -> int:
        reachable = min(self.total, MAX_OFFSET + PAGE_SIZE)
        return max(1, -(-reachable // PAGE_SIZE))


def _search_condition(sobject: SObjectDef, term: str) -> str:
    if not term:
        return ""
    if sobject.name_field is not None:
        return f" WHERE {sobject.name_field} LIKE {like_pattern(term)}"
    if RECORD_ID.fullmatch(term):
        return f" WHERE Id = {soql_string(term)}"
    raise SalesforceError(
        f"{sobject.name} has no name field: search it by a record Id", error_code="INVALID_INPUT"
    )


def list_records(view: OrgView, sobject: SObjectDef, page: int, term: str) -> RecordPage:
    """One page of the object's records, newest first, those whose name holds `term`."""
    columns = summary_fields(sobject)
    where = _search_condition(sobject, term.strip())
    total = query(view, f"SELECT COUNT() FROM {sobject.name}{where}")["totalSize"]
    offset = min(max(page - 1, 0) * PAGE_SIZE, MAX_OFFSET)
    order = "CreatedDate DESC, Id DESC" if sobject.field("CreatedDate") else "Id DESC"
    names = ", ".join(["Id", *(f.name for f in columns)])
    text = (
        f"SELECT {names} FROM {sobject.name}{where} ORDER BY {order} "
        f"LIMIT {PAGE_SIZE} OFFSET {offset}"
    )
    records = query(view, text)["records"]
    return RecordPage(sobject, columns, records, total, offset // PAGE_SIZE + 1, term.strip())


@dataclass
class RelatedList:
    relationship: str
    child: SObjectDef
    field: str  # the child's lookup to the record
    records: list[dict[str, Any]]
    error: str = ""

    def soql(self, record_id: str) -> str:
        """The query of the whole list, for the query runner."""
        names = ", ".join(["Id", *([self.child.name_field] if self.child.name_field else [])])
        return (
            f"SELECT {names} FROM {self.child.name} WHERE {self.field} = {soql_string(record_id)}"
        )


@dataclass
class RecordDetail:
    sobject: SObjectDef
    record: dict[str, Any]
    parents: dict[str, tuple[str, str]] = field(default_factory=dict)  # field -> (object, id)
    related: list[RelatedList] = field(default_factory=list)


def parent_object(view: OrgView, definition: FieldDef, value: str) -> str | None:
    """The object a lookup's value points at (for a polymorphic one, by its key prefix)."""
    if len(definition.reference_to) == 1:
        return definition.reference_to[0]
    found = view.ctx.registry.by_key_prefix(value[:3])
    return None if found is None else found.name


Child = tuple[str, SObjectDef, str]  # relationship name, child object, its lookup field


def _children(view: OrgView, sobject: SObjectDef) -> list[Child]:
    related = []
    for relationship in sobject.child_relationships:
        child = view.ctx.registry.get(relationship.child_sobject)
        if relationship.relationship_name and child is not None:
            related.append((relationship.relationship_name, child, relationship.field))
    return sorted(related, key=lambda item: item[0].lower())


def _subquery(relationship: str, child: SObjectDef) -> str:
    names = ", ".join(["Id", *([child.name_field] if child.name_field else [])])
    return f"(SELECT {names} FROM {relationship} LIMIT {RELATED_ROWS})"


def record_detail(view: OrgView, sobject: SObjectDef, record_id: str) -> RecordDetail:
    """The record's fields, its parents, and the first rows of each related list."""
    if not RECORD_ID.fullmatch(record_id):
        raise NotFound(
            f"Provided external ID field does not exist or is not accessible: {record_id}"
        )
    names = ", ".join(f.name for f in sobject.fields)
    where = f" WHERE Id = {soql_string(record_id)}"
    found = query(view, f"SELECT {names} FROM {sobject.name}{where}")["records"]
    if not found:
        raise NotFound("The requested resource does not exist")
    detail = RecordDetail(sobject, found[0])
    for definition in sobject.fields:
        value = detail.record.get(definition.name)
        if definition.type is FieldType.REFERENCE and isinstance(value, str):
            target = parent_object(view, definition, value)
            if target is not None:
                detail.parents[definition.name] = (target, value)
    children = _children(view, sobject)
    for start in range(0, len(children), SUBQUERIES_PER_QUERY):
        chunk = children[start : start + SUBQUERIES_PER_QUERY]
        detail.related.extend(_related_chunk(view, sobject, record_id, chunk))
    return detail


def _related_chunk(
    view: OrgView, sobject: SObjectDef, record_id: str, chunk: list[Child]
) -> list[RelatedList]:
    subqueries = ", ".join(_subquery(relationship, child) for relationship, child, _ in chunk)
    text = f"SELECT Id, {subqueries} FROM {sobject.name} WHERE Id = {soql_string(record_id)}"
    try:
        row = query(view, text)["records"][0]
    except SalesforceError as error:
        return [RelatedList(name, child, link, [], error.message) for name, child, link in chunk]
    lists = []
    for relationship, child, link in chunk:
        result = row.get(relationship)
        records = result["records"] if isinstance(result, dict) else []
        lists.append(RelatedList(relationship, child, link, records))
    return lists
