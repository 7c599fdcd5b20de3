"""Pages that read a sandbox's org: its objects, their records, one record, and the SOQL and
SOSL runner."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from app.api.deps import StateDep
from app.console.org_view import open_view
from app.console.pages import ConsoleRoute, render, require_admin_key
from app.console.records import list_records, record_detail, sobject_of
from app.console.tables import table_of
from app.errors import SalesforceError
from app.services.query import query_more, run_query
from app.services.search import run_search

router = APIRouter(
    prefix="/console/sandboxes/{sandbox_id}",
    route_class=ConsoleRoute,
    dependencies=[Depends(require_admin_key)],
    include_in_schema=False,
)
QUERY_BATCH = 200  # rows a page of query results shows; the rest is under nextRecordsUrl


@router.get("/objects", response_class=HTMLResponse)
def objects(request: Request, sandbox_id: str, state: StateDep) -> HTMLResponse:
    with open_view(state, sandbox_id) as view:
        listed = sorted(view.ctx.registry, key=lambda sobject: sobject.name.lower())
        return render(request, "objects.html", sandbox=view.sandbox, objects=listed)


@router.get("/objects/{sobject_name}", response_class=HTMLResponse)
def records(
    request: Request,
    sandbox_id: str,
    sobject_name: str,
    state: StateDep,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
    q: Annotated[str, Query(max_length=200)] = "",
) -> HTMLResponse:
    with open_view(state, sandbox_id) as view:
        sobject = sobject_of(view, sobject_name)
        listing = list_records(view, sobject, page, q)
        return render(request, "records.html", sandbox=view.sandbox, listing=listing)


@router.get("/objects/{sobject_name}/{record_id}", response_class=HTMLResponse)
def record(
    request: Request, sandbox_id: str, sobject_name: str, record_id: str, state: StateDep
) -> HTMLResponse:
    with open_view(state, sandbox_id) as view:
        sobject = sobject_of(view, sobject_name)
        detail = record_detail(view, sobject, record_id)
        return render(request, "record.html", sandbox=view.sandbox, detail=detail)


@router.get("/query", response_class=HTMLResponse)
def query_runner(
    request: Request,
    sandbox_id: str,
    state: StateDep,
    q: Annotated[str, Query(max_length=100_000)] = "",
    locator: Annotated[str, Query(max_length=200)] = "",
) -> HTMLResponse:
    """Run a SOQL query (or a SOSL search: text that starts with FIND), or read the next batch
    of an earlier query by its locator."""
    with open_view(state, sandbox_id) as view:
        result: dict[str, object] | None = None
        error: SalesforceError | None = None
        typed = q.lstrip()[:4].upper() == "FIND"
        try:
            if locator:
                result = query_more(view.ctx, state.cursors, locator)
            elif typed:
                found = run_search(view.conn, view.ctx, q)
                result = {"records": found.get("searchRecords", found)}
            elif q.strip():
                result = run_query(
                    view.conn,
                    view.ctx,
                    state.cursors,
                    q,
                    include_deleted=False,
                    batch_size=QUERY_BATCH,
                )
        except SalesforceError as raised:
            error = raised
        table = None
        next_locator = ""
        if result is not None:
            rows = result["records"]
            table = table_of(
                rows if isinstance(rows, list) else [], view.ctx.registry, sandbox_id, typed=typed
            )
            next_url = result.get("nextRecordsUrl")
            if isinstance(next_url, str):
                next_locator = next_url.rsplit("/", 1)[-1]
        return render(
            request,
            "query.html",
            status_code=200,
            sandbox=view.sandbox,
            q=q,
            result=result,
            table=table,
            error=error,
            next_locator=next_locator,
        )
