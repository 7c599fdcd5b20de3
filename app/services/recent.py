"""`/recent`: the records this sandbox's session worked on, the latest first. Salesforce lists
the records a user viewed or edited; an API-only org has no views, so the edits stand: every
record written since the sandbox's last reset, and still there."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from app.errors import SalesforceError
from app.services.context import OrgContext
from app.services.numbers import parse_count
from app.storage.journal import recently_written

MAX_RECENT = 200


def recent_limit(text: str | None) -> int:
    if text is None:
        return MAX_RECENT
    value = parse_count(text)
    if value is None or value < 1:
        raise SalesforceError(
            f"The 'limit' parameter must be a positive number: {text}", error_code="INVALID_INPUT"
        )
    return min(value, MAX_RECENT)


def recent_items(conn: Connection, ctx: OrgContext, limit: int) -> list[dict[str, Any]]:
    items = []
    for sobject_name, record_id in recently_written(conn, limit):
        sobject = ctx.registry.get(sobject_name)
        if sobject is None:
            continue
        table = ctx.tables[sobject.name]
        name_field = sobject.name_field
        columns = [table.c.Id] + ([table.c[name_field]] if name_field else [])
        row = conn.execute(
            select(*columns).where(table.c.Id == record_id, table.c.IsDeleted.is_(False))
        ).first()
        if row is None:
            continue
        item: dict[str, Any] = {
            "attributes": {"type": sobject.name, "url": ctx.record_url(sobject, record_id)},
            "Id": record_id,
        }
        if name_field:
            item[name_field] = row[1]
        items.append(item)
    return items
