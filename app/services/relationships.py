"""A record's relationship as a resource (`/sobjects/{T}/{id}/{relationship}`): a child
relationship answers the children as a query result, a parent relationship the parent
record; `fields` picks the fields either way."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from app.errors import NotFound
from app.metadata.model import COMPOUND_TYPES, SObjectDef
from app.services.context import OrgContext
from app.services.cursors import CursorStore
from app.services.query import DEFAULT_BATCH_SIZE, run_query
from app.services.records import get_record
from app.storage.ids import normalize_id


def names_a_record(sobject: SObjectDef, text: str) -> bool:
    """Whether a path segment is an id of one of this object's records."""
    return normalize_id(text) is not None and text.startswith(sobject.key_prefix)


def related(
    conn: Connection,
    ctx: OrgContext,
    cursors: CursorStore,
    sobject: SObjectDef,
    raw_id: str,
    relationship: str,
    fields: list[str] | None,
) -> dict[str, Any]:
    record_id = get_record(conn, ctx, sobject, raw_id, ["Id"])["Id"]  # the record must live
    wanted = relationship.lower()
    for child in sobject.child_relationships:
        child_object = ctx.registry.get(child.child_sobject)
        if child_object is None or (child.relationship_name or "").lower() != wanted:
            continue
        names = fields or [f.name for f in child_object.fields if f.type not in COMPOUND_TYPES]
        text = (
            f"SELECT {', '.join(names)} FROM {child_object.name} "
            f"WHERE {child.field} = '{record_id}'"
        )
        return run_query(
            conn, ctx, cursors, text, include_deleted=False, batch_size=DEFAULT_BATCH_SIZE
        )
    lookup = sobject.field_by_relationship(relationship)
    if lookup is None:
        raise NotFound()
    parent_id = get_record(conn, ctx, sobject, record_id, [lookup.name])[lookup.name]
    parent = None if parent_id is None else ctx.registry.by_key_prefix(str(parent_id)[:3])
    if parent is None:
        raise NotFound()
    return get_record(conn, ctx, parent, str(parent_id), fields)
