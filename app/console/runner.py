"""The query runner's work: a SOQL query (its first batch, the rest under a locator), a SOSL
search (text that starts with FIND), or the next batch of an earlier query, as the API would
answer it; an error kept to be shown as the API gives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.console.org_view import OrgView
from app.console.tables import Table, table_of
from app.errors import SalesforceError
from app.services.query import query_more, run_query
from app.services.search import run_search

BATCH_SIZE = 200  # rows a page of results shows; the rest waits under nextRecordsUrl


@dataclass(frozen=True)
class Outcome:
    result: dict[str, Any] | None = None  # the API's JSON
    error: SalesforceError | None = None
    table: Table | None = None
    next_locator: str = ""


def is_search(text: str) -> bool:
    return text.lstrip()[:4].upper() == "FIND"


def _answer(view: OrgView, text: str, locator: str) -> dict[str, Any] | None:
    if locator:
        return query_more(view.ctx, view.cursors, locator)
    if is_search(text):
        found = run_search(view.conn, view.ctx, text)
        return {"records": found["searchRecords"]}
    if not text.strip():
        return None
    return run_query(
        view.conn, view.ctx, view.cursors, text, include_deleted=False, batch_size=BATCH_SIZE
    )


def run(view: OrgView, text: str, locator: str) -> Outcome:
    try:
        result = _answer(view, text, locator)
    except SalesforceError as error:
        return Outcome(error=error)
    if result is None:
        return Outcome()
    table = table_of(result["records"], view.ctx.registry, view.sandbox.id, typed=is_search(text))
    next_url = result.get("nextRecordsUrl")
    locator = next_url.rsplit("/", 1)[-1] if isinstance(next_url, str) else ""
    return Outcome(result=result, table=table, next_locator=locator)
