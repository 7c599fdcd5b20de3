"""SOSL endpoints: /search (a SOSL statement) and /parameterizedSearch (GET and POST)."""

from __future__ import annotations

from fastapi import Request

from app.api.deps import ConnectionDep, JsonBodyDep, OrgContextDep
from app.api.openapi import json_body, parameter, query_parameters
from app.api.request_bodies import PARAMETERIZED_SEARCH
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.services.search import run_parameterized_get, run_parameterized_post, run_search

router = SalesforceRouter(prefix="/services/data/{version}")


@router.get(
    "/search",
    openapi_extra=query_parameters(parameter("q", "A SOSL search", required=True, minLength=1)),
)
def search(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> SalesforceJSONResponse:
    return SalesforceJSONResponse(run_search(conn, ctx, request.query_params.get("q")))


@router.get(
    "/parameterizedSearch",
    openapi_extra=query_parameters(
        parameter("q", "The search text", required=True, minLength=2),
        parameter("sobject", "An object to search"),
        parameter("fields", "Fields to return"),
        parameter("in", "Which fields to search: ALL, NAME, EMAIL, PHONE, SIDEBAR"),
        parameter("overallLimit", "At most this many records"),
        parameter("defaultLimit", "At most this many records per object"),
    ),
)
def parameterized_search(
    request: Request, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    params = list(request.query_params.multi_items())
    return SalesforceJSONResponse(run_parameterized_get(conn, ctx, params))


@router.post("/parameterizedSearch", openapi_extra=json_body(PARAMETERIZED_SEARCH))
def parameterized_search_body(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    return SalesforceJSONResponse(run_parameterized_post(conn, ctx, raw))
