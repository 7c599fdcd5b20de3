"""SOSL endpoints: /search (a SOSL statement) and /parameterizedSearch (GET and POST)."""

from __future__ import annotations

from fastapi import Request

from app.api.deps import ConnectionDep, JsonBodyDep, OrgContextDep
from app.api.routing import SalesforceJSONResponse, SlashRouter
from app.services.search import run_parameterized_get, run_parameterized_post, run_search

router = SlashRouter(prefix="/services/data/{version}")


@router.get("/search")
def search(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> SalesforceJSONResponse:
    return SalesforceJSONResponse(run_search(conn, ctx, request.query_params.get("q")))


@router.get("/parameterizedSearch")
def parameterized_search(
    request: Request, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    params = list(request.query_params.multi_items())
    return SalesforceJSONResponse(run_parameterized_get(conn, ctx, params))


@router.post("/parameterizedSearch")
def parameterized_search_body(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    return SalesforceJSONResponse(run_parameterized_post(conn, ctx, raw))
