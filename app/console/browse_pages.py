"""Pages that read a sandbox's org: its objects, their records, one record, and the SOQL and
SOSL runner."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse

from app.api.deps import StateDep
from app.console import runner
from app.console.org_view import open_view
from app.console.pages import ConsoleRoute, render, require_admin_key
from app.console.records import list_records, record_detail, sobject_of

router = APIRouter(
    prefix="/console/sandboxes/{sandbox_id}",
    route_class=ConsoleRoute,
    dependencies=[Depends(require_admin_key)],
    include_in_schema=False,
)


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
        outcome = runner.run(view, q, locator)
        return render(request, "query.html", sandbox=view.sandbox, q=q, outcome=outcome)
