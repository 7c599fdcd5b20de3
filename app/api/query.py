"""SOQL endpoints: /query and /queryAll, and their next-batch locators."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy import Connection

from app.api.deps import ConnectionDep, OrgContextDep, app_state
from app.api.openapi import parameter, query_parameters
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.services.context import OrgContext
from app.services.explain import explain
from app.services.query import batch_size_from, query_columns, query_more, run_query

router = SalesforceRouter(prefix="/services/data/{version}")
SOQL = query_parameters(
    parameter("q", "A SOQL query", required=True, minLength=1),
    parameter("explain", "A query or list view id: its plan (`plans`), instead of q's rows"),
    parameter("columns", "true: describe the query's columns (columnMetadata), not run it"),
)


def _run(
    request: Request, ctx: OrgContext, conn: Connection, all_rows: bool
) -> SalesforceJSONResponse:
    params = request.query_params
    if "explain" in params:
        return SalesforceJSONResponse(explain(conn, ctx, params.get("explain")))
    if params.get("columns", "").lower() == "true":
        return SalesforceJSONResponse(query_columns(ctx, params.get("q"), include_deleted=all_rows))
    return SalesforceJSONResponse(
        run_query(
            conn,
            ctx,
            app_state(request).cursors,
            request.query_params.get("q"),
            include_deleted=all_rows,
            batch_size=batch_size_from(request.headers.get("sforce-query-options")),
        )
    )


# The hot routes take no StateDep: each dependency a route names costs FastAPI a walk.
@router.get("/query", openapi_extra=SOQL)
def query(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> SalesforceJSONResponse:
    return _run(request, ctx, conn, all_rows=False)


@router.get("/queryAll", openapi_extra=SOQL)
def query_all(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> SalesforceJSONResponse:
    return _run(request, ctx, conn, all_rows=True)


# Salesforce writes /query/ in nextRecordsUrl even for queryAll; both paths serve locators.
@router.get("/query/{locator}")
def next_batch(locator: str, request: Request, ctx: OrgContextDep) -> SalesforceJSONResponse:
    # The batch was read when the query ran: no connection to the sandbox is needed. Results
    # go out as a ready response: FastAPI's generic encoder would walk every value.
    return SalesforceJSONResponse(query_more(ctx, app_state(request).cursors, locator))


@router.get("/queryAll/{locator}")
def next_batch_all(locator: str, request: Request, ctx: OrgContextDep) -> SalesforceJSONResponse:
    return next_batch(locator, request, ctx)
