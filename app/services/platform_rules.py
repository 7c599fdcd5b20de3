"""What particular standard objects do on every write that their field definitions can't
express, because it reads the clock, the record before the write or another record: one rule
an object. `app.storage.derived` holds what the written record alone says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection

from app.services.context import OrgContext
from app.storage.derived import ACCOUNT_SOURCES, ACTIVITIES, is_value, related_account
from app.storage.records import fetch_row

Row = dict[str, Any]
# A rule: (the connection, the request's org, the row as it will be written, the row before the
# write or None for an insert) -> nothing; it sets the row's fields.
Rule = Callable[[Connection, OrgContext, Row, Row | None], None]


def _case(conn: Connection, ctx: OrgContext, row: Row, before: Row | None) -> None:
    """A case closes at the moment its status becomes Closed, and reopening clears that."""
    closing = is_value(row.get("Status"), "Closed")
    if closing and not is_value((before or {}).get("Status"), "Closed"):
        row["ClosedDate"] = ctx.now
    elif not closing:
        row["ClosedDate"] = None


def _price_book_entry(conn: Connection, ctx: OrgContext, row: Row, before: Row | None) -> None:
    """A price book entry is named after its product."""
    if row.get("Product2Id"):
        product = fetch_row(conn, ctx.tables["Product2"], row["Product2Id"])
        row["Name"] = product["Name"] if product else None


def _order_item(conn: Connection, ctx: OrgContext, row: Row, before: Row | None) -> None:
    """An order product's product is its price book entry's, unless it names one."""
    if row.get("PricebookEntryId") and not row.get("Product2Id"):
        entry = fetch_row(conn, ctx.tables["PricebookEntry"], row["PricebookEntryId"])
        row["Product2Id"] = entry["Product2Id"] if entry else None


def _activity(conn: Connection, ctx: OrgContext, row: Row, before: Row | None) -> None:
    """A task's or event's AccountId: the account it concerns (app.storage.derived)."""

    def account_of(record_id: str) -> str | None:
        sobject = ctx.registry.by_key_prefix(record_id[:3])
        if sobject is None or sobject.name not in ACCOUNT_SOURCES:
            return None
        found = fetch_row(conn, ctx.tables[sobject.name], record_id)
        return found["AccountId"] if found else None

    row["AccountId"] = related_account(row, account_of)


RULES: dict[str, Rule] = {
    "Case": _case,
    "PricebookEntry": _price_book_entry,
    "OrderItem": _order_item,
    **dict.fromkeys(ACTIVITIES, _activity),
}


def apply_platform_rules(
    conn: Connection, ctx: OrgContext, object_name: str, row: Row, before: Row | None
) -> None:
    rule = RULES.get(object_name)
    if rule is not None:
        rule(conn, ctx, row, before)
