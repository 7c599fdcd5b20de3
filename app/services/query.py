"""Runs SOQL for /query and /queryAll: parse, bind and compile (cached), execute, then page.

A query's rows, and its child subqueries' rows, are read once, when it runs (soql/execute.py);
the cursor keeps them (spilled to the platform database), so later batches are stable while the
cursor lives, whatever is written in between.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Select

from app.errors import SalesforceError
from app.metadata.registry import SchemaRegistry
from app.services.compiled_cache import keep_compiled
from app.services.context import OrgContext
from app.services.cursors import CursorStore, OpenQuery
from app.services.numbers import parse_count
from app.soql.bind_context import LIMITS
from app.soql.binder import bind
from app.soql.columns import column_metadata
from app.soql.compiler import USER_PARAM, CompiledQuery, compile_query
from app.soql.date_literals import OrgCalendar
from app.soql.errors import malformed
from app.soql.execute import Fetch, execute
from app.soql.function_registry import FunctionRegistry
from app.soql.parser import parse
from app.soql.results import shape_rows, wire_datetime_columns
from app.storage.activity_views import AS_OF_PARAM
from app.storage.backends import WireDatetimes, backend_for
from app.storage.driver_reads import read_all
from app.storage.tables import TableSet

DEFAULT_BATCH_SIZE = 2000
MIN_BATCH_SIZE = 200
MAX_QUERY_LENGTH = 100_000
MAX_AGGREGATE_ROWS = 2000


@keep_compiled(lambda compiled: 1)
def prepare(
    registry: SchemaRegistry,
    tables: TableSet,
    text: str,
    include_deleted: bool,
    calendar: OrgCalendar,
    functions: FunctionRegistry,
) -> CompiledQuery:
    """Parse, bind and compile once per distinct query text, calendar (date literals resolve
    against the org's day, zone and fiscal year) and function registry; a repeat costs only
    execution."""
    bound = bind(registry, text, parse(text), calendar=calendar, functions=functions, limits=LIMITS)
    return compile_query(bound, tables, include_deleted=include_deleted)


def batch_size_from(header: str | None) -> int:
    """The batchSize of a `Sforce-Query-Options` header: a hint, kept within 200..2000."""
    if not header:
        return DEFAULT_BATCH_SIZE
    for option in header.split(","):
        name, _, value = option.partition("=")
        size = parse_count(value.strip())
        if name.strip().lower() == "batchsize" and size is not None:
            return max(MIN_BATCH_SIZE, min(DEFAULT_BATCH_SIZE, size))
    return DEFAULT_BATCH_SIZE


def _fetcher(conn: Connection, ctx: OrgContext) -> Fetch:
    """Runs child subqueries as the querying user, at the org's time (which activities are
    history and which open)."""
    own = {USER_PARAM: ctx.user_id, AS_OF_PARAM: ctx.now}

    def fetch(statement: Select[Any], params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        return conn.execute(statement, {**own, **params}).all()

    return fetch


# Per dialect, per statement object (a prepared query keeps its statement for its life): how
# the back end reads its plain DateTime columns straight to wire text.
_wire_reads: dict[str, weakref.WeakKeyDictionary[Select[Any], WireDatetimes]] = {}


def _wire_read(conn: Connection, compiled: CompiledQuery) -> WireDatetimes:
    per_dialect = _wire_reads.setdefault(conn.dialect.name, weakref.WeakKeyDictionary())
    found = per_dialect.get(compiled.statement)
    if found is None:
        backend = backend_for(conn.dialect.name)
        found = backend.wire_datetimes(compiled.statement, wire_datetime_columns(compiled))
        per_dialect[compiled.statement] = found
    return found


def checked_text(text: str | None) -> str:
    if text is None or not text.strip():
        raise malformed("A query string has to be specified", query="", pos=None)
    if len(text) > MAX_QUERY_LENGTH:
        raise malformed(
            f"Query is too long: maximum length is {MAX_QUERY_LENGTH} characters",
            query="",
            pos=None,
        )
    return text


def query_columns(ctx: OrgContext, text: str | None, *, include_deleted: bool) -> dict[str, Any]:
    """`columns=true`: the query's columns, checked as running it would check them, not run."""
    text = checked_text(text)
    compiled = prepare(
        ctx.registry, ctx.tables, text, include_deleted, ctx.org_calendar, ctx.functions
    )
    return column_metadata(compiled.bound)


def run_query(
    conn: Connection,
    ctx: OrgContext,
    cursors: CursorStore,
    text: str | None,
    *,
    include_deleted: bool,
    batch_size: int,
) -> dict[str, Any]:
    """The first batch of a query's result, in Salesforce's JSON; the rest waits under a
    locator (`nextRecordsUrl`)."""
    text = checked_text(text)
    calendar = ctx.org_calendar
    compiled = prepare(ctx.registry, ctx.tables, text, include_deleted, calendar, ctx.functions)
    params = {USER_PARAM: ctx.user_id}
    if compiled.bound.count_only:
        total = conn.execute(compiled.statement, params).scalar_one()
        return {"totalSize": int(total), "done": True, "records": []}
    wire = _wire_read(conn, compiled)
    statement = compiled.statement if wire.statement is None else wire.statement
    rows = read_all(conn, statement, params, wire.readers)
    if compiled.bound.is_aggregate and len(rows) > MAX_AGGREGATE_ROWS:
        raise SalesforceError(
            "Aggregate query does not support queryMore(), use LIMIT to restrict the results "
            "to a single batch",
            error_code="EXCEEDED_ID_LIMIT",
        )
    fetched = execute(compiled, rows, _fetcher(conn, ctx))
    result: dict[str, Any] = {"totalSize": len(rows), "done": len(rows) <= batch_size}
    if len(rows) > batch_size:
        opened = OpenQuery(text, include_deleted, calendar, batch_size, total=len(rows))
        cursor_id = cursors.open(
            owner=ctx.sandbox_id,
            user_id=ctx.locator_owner or ctx.user_id,
            query=opened,
            result=fetched,
            first=batch_size,
        )
        result["nextRecordsUrl"] = f"{ctx.base_path}/query/{cursor_id}-{batch_size}"
    first = fetched.window(0, batch_size)
    result["records"] = shape_rows(compiled, first, ctx.base_path, ctx.org_calendar.zone)
    return result


def query_more(
    ctx: OrgContext,
    cursors: CursorStore,
    locator: str,
    context_for: Callable[[str], OrgContext] | None = None,
) -> dict[str, Any]:
    """The batch a `nextRecordsUrl` locator names, children included, as read when the query
    ran; `context_for` gives the context a query's text was run in, where that depends on it
    (the Tooling API's)."""
    batch = cursors.take(locator, ctx.sandbox_id)
    opened = batch.query
    if context_for is not None:
        ctx = context_for(opened.query)
    compiled = prepare(
        ctx.registry,
        ctx.tables,
        opened.query,
        opened.include_deleted,
        opened.calendar,
        ctx.functions,
    )
    end = batch.offset + opened.batch_size
    result: dict[str, Any] = {"totalSize": opened.total, "done": end >= opened.total}
    if end >= opened.total:
        cursors.close(batch.cursor_id)
    else:
        result["nextRecordsUrl"] = f"{ctx.base_path}/query/{batch.cursor_id}-{end}"
    result["records"] = shape_rows(compiled, batch.rows, ctx.base_path, ctx.org_calendar.zone)
    return result
