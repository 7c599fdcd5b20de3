"""What particular standard objects do on every write that their field definitions can't
express, because it reads the clock, the record before the write or another record: one rule
an object. `app.storage.derived` holds what the written record alone says."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, select

from app.errors import FieldError, SalesforceError
from app.services.context import OrgContext
from app.services.validation import required_error
from app.storage.derived import ACCOUNT_SOURCES, ACTIVITIES, is_value, related_account
from app.storage.records import fetch_row
from app.storage.text import keys_equal

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


# A developer name: letters, digits and single underscores, starting with a letter and not
# ending with an underscore (the Object Reference's words for a static resource's Name).
DEVELOPER_NAME = re.compile(r"[A-Za-z](?:_?[A-Za-z0-9])*")
# [belief: the words are the ones Setup shows for a developer name; the code is the one
# Salesforce gives a value its field's rules refuse, no recorded answer names another]
BAD_DEVELOPER_NAME = (
    "The Name field can only contain underscores and alphanumeric characters. It must be "
    "unique, begin with a letter, not include spaces, not end with an underscore, and not "
    "contain two consecutive underscores."
)


def _static_resource(conn: Connection, ctx: OrgContext, row: Row, before: Row | None) -> None:
    """A static resource has a body, a developer name no other live one has (letter case
    ignored), and its size is its body's bytes."""
    if row.get("Body") is None:
        raise required_error(["Body"])
    name = str(row["Name"])
    if before is None or name != before["Name"]:
        if DEVELOPER_NAME.fullmatch(name) is None:
            raise FieldError("FIELD_INTEGRITY_EXCEPTION", BAD_DEVELOPER_NAME, ["Name"])
        table = ctx.tables["StaticResource"]
        same = conn.execute(
            select(table.c.Id).where(
                keys_equal(table.c.Name, name),
                table.c.IsDeleted.is_(False),
                table.c.Id != row["Id"],
            )
        ).first()
        if same is not None:
            raise SalesforceError(
                f"duplicate value found: Name duplicates value on record with id: {same[0]}",
                error_code="DUPLICATE_VALUE",
                fields=[],
            )
    row["BodyLength"] = len(base64.b64decode(row["Body"]))


RULES: dict[str, Rule] = {
    "StaticResource": _static_resource,
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
