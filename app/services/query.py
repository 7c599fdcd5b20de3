"""Runs SOQL for /query and /queryAll: parse, bind and compile (cached), execute, then page.

A query's rows are read once; the cursor keeps them, so later batches are stable while the
cursor lives, whatever is written in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection, Select

from app.errors import SalesforceError
from app.metadata.registry import SchemaRegistry
from app.services.context import OrgContext
from app.services.cursors import Cursor, CursorStore
from app.soql.binder import UTC_EPOCH_CALENDAR, bind
from app.soql.compiler import USER_PARAM, CompiledQuery, compile_query
from app.soql.date_literals import OrgCalendar
from app.soql.errors import malformed
from app.soql.parser import parse
from app.soql.results import Fetch, shape_rows
from app.storage.tables import TableSet

DEFAULT_BATCH_SIZE = 2000
MIN_BATCH_SIZE = 200
MAX_QUERY_LENGTH = 100_000
MAX_AGGREGATE_ROWS = 2000


@lru_cache(maxsize=2048)
def prepare(
    registry: SchemaRegistry,
    tables: TableSet,
    text: str,
    include_deleted: bool,
    calendar: OrgCalendar = UTC_EPOCH_CALENDAR,
) -> CompiledQuery:
    """Parse, bind and compile once per distinct query text and calendar (date literals resolve
    against the org's day, zone and fiscal year); a repeat costs only execution."""
    bound = bind(registry, text, parse(text), calendar)
    return compile_query(bound, tables, include_deleted=include_deleted)


def batch_size_from(header: str | None) -> int:
    """The batchSize of a `Sforce-Query-Options` header: a hint, kept within 200..2000."""
    if not header:
        return DEFAULT_BATCH_SIZE
    for option in header.split(","):
        name, _, value = option.partition("=")
        if name.strip().lower() == "batchsize" and value.strip().isdigit():
            return max(MIN_BATCH_SIZE, min(DEFAULT_BATCH_SIZE, int(value.strip())))
    return DEFAULT_BATCH_SIZE


def _fetcher(conn: Connection, ctx: OrgContext) -> Fetch:
    """Runs child subqueries (and anything else a batch needs) as the querying user."""

    def fetch(statement: Select[Any], params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        return conn.execute(statement, {USER_PARAM: ctx.user_id, **params}).all()

    return fetch


def _page(
    conn: Connection,
    cursors: CursorStore,
    ctx: OrgContext,
    cursor: Cursor,
    offset: int,
    cursor_id: str | None,
) -> dict[str, Any]:
    end = offset + cursor.batch_size
    batch = cursor.rows[offset:end]
    done = end >= len(cursor.rows)
    result: dict[str, Any] = {"totalSize": len(cursor.rows), "done": done}
    if done:
        if cursor_id is not None:
            cursors.close(cursor_id)
    else:
        cursor_id = cursor_id or cursors.open(cursor)
        result["nextRecordsUrl"] = f"{ctx.base_path}/query/{cursor_id}-{end}"
    result["records"] = shape_rows(
        cursor.compiled, batch, ctx.base_path, _fetcher(conn, ctx), ctx.org_calendar.zone
    )
    return result


def run_query(
    conn: Connection,
    ctx: OrgContext,
    cursors: CursorStore,
    text: str | None,
    *,
    include_deleted: bool,
    batch_size: int,
) -> dict[str, Any]:
    """The first batch of a query's result, in Salesforce's JSON."""
    if text is None or not text.strip():
        raise malformed("A query string has to be specified", query="", pos=None)
    if len(text) > MAX_QUERY_LENGTH:
        raise malformed(
            f"Query is too long: maximum length is {MAX_QUERY_LENGTH} characters",
            query="",
            pos=None,
        )
    compiled = prepare(ctx.registry, ctx.tables, text, include_deleted, ctx.org_calendar)
    params = {USER_PARAM: ctx.user_id}
    if compiled.bound.count_only:
        total = conn.execute(compiled.statement, params).scalar_one()
        return {"totalSize": int(total), "done": True, "records": []}
    rows = conn.execute(compiled.statement, params).all()
    if compiled.bound.is_aggregate and len(rows) > MAX_AGGREGATE_ROWS:
        raise SalesforceError(
            "Aggregate query does not support queryMore(), use LIMIT to restrict the results "
            "to a single batch",
            error_code="EXCEEDED_ID_LIMIT",
        )
    cursor = Cursor(compiled=compiled, rows=rows, batch_size=batch_size, owner=ctx.sandbox_id)
    return _page(conn, cursors, ctx, cursor, 0, None)


def query_more(
    conn: Connection, ctx: OrgContext, cursors: CursorStore, locator: str
) -> dict[str, Any]:
    """The batch a `nextRecordsUrl` locator names (its child subqueries run now)."""
    cursor_id, cursor, offset = cursors.take(locator, ctx.sandbox_id)
    return _page(conn, cursors, ctx, cursor, offset, cursor_id)
