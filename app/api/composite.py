"""Composite resources: /composite, /composite/batch, /composite/tree/{T}, /composite/sobjects."""

from __future__ import annotations

from functools import partial

from fastapi import Request
from sqlalchemy import Connection

from app.api import request_bodies as bodies
from app.api.deps import ConnectionDep, JsonBodyDep, OrgContextDep, SObjectDep
from app.api.openapi import CREATED, TREE_FAILURE, json_body, parameter, query_parameters
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.api.subrequests import SubrequestsDep
from app.services import composite
from app.services.composite import Dispatch
from app.services.json_body import parse_object

router = SalesforceRouter(prefix="/services/data/{version}/composite")
IDS = parameter("ids", "Comma-separated record ids", required=True, minLength=1)


def _ids(request: Request) -> list[str]:
    text = request.query_params.get("ids", "")
    return [value.strip() for value in text.split(",") if value.strip()]


def _all_or_none(request: Request) -> bool:
    return request.query_params.get("allOrNone", "").lower() == "true"


# /composite and /composite/batch are async only to run in a composite thread of their own,
# from where their subrequests go through the app's routes (see subrequests.py).
@router.post("", openapi_extra=json_body(bodies.COMPOSITE))
async def post_composite(raw: JsonBodyDep, subrequests: SubrequestsDep) -> SalesforceJSONResponse:
    return await subrequests.run(partial(_composite, raw))


def _composite(raw: bytes, conn: Connection, dispatch: Dispatch) -> SalesforceJSONResponse:
    data = parse_object(raw, "CompositeRequest").data
    return SalesforceJSONResponse(composite.run_composite(conn, dispatch, data))


@router.post("/batch", openapi_extra=json_body(bodies.BATCH))
async def post_batch(raw: JsonBodyDep, subrequests: SubrequestsDep) -> SalesforceJSONResponse:
    return await subrequests.run(partial(_batch, raw))


def _batch(raw: bytes, conn: Connection, dispatch: Dispatch) -> SalesforceJSONResponse:
    data = parse_object(raw, "BatchRequest").data
    return SalesforceJSONResponse(composite.run_batch(conn, dispatch, data))


@router.post(
    "/tree/{sobject}",
    status_code=201,
    responses={201: CREATED, 400: TREE_FAILURE},
    openapi_extra=json_body(bodies.TREE),
)
def post_tree(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> SalesforceJSONResponse:
    data = parse_object(raw, "SObjectTreeRequest").data
    status, body = composite.run_tree(conn, ctx, definition, data)
    return SalesforceJSONResponse(body, status_code=status)


@router.post("/sobjects", openapi_extra=json_body(bodies.COLLECTION))
def collection_create(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    data = parse_object(raw, "SObjectCollectionRequest").data
    return SalesforceJSONResponse(composite.collection_create(conn, ctx, data))


@router.patch("/sobjects", openapi_extra=json_body(bodies.COLLECTION))
def collection_update(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    data = parse_object(raw, "SObjectCollectionRequest").data
    return SalesforceJSONResponse(composite.collection_update(conn, ctx, data))


@router.delete(
    "/sobjects",
    openapi_extra=query_parameters(
        parameter("ids", "Comma-separated record ids (none: nothing is deleted)"),
        parameter("allOrNone", "true: roll back all on any failure"),
    ),
)
def collection_delete(
    request: Request, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    results = composite.collection_delete(conn, ctx, _ids(request), _all_or_none(request))
    return SalesforceJSONResponse(results)


@router.get(
    "/sobjects/{sobject}",
    openapi_extra=query_parameters(
        IDS, parameter("fields", "Fields to return", required=True, minLength=1)
    ),
)
def collection_retrieve(
    request: Request, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> SalesforceJSONResponse:
    fields = [f.strip() for f in request.query_params.get("fields", "").split(",") if f.strip()]
    found = composite.collection_retrieve(conn, ctx, definition, _ids(request), fields)
    return SalesforceJSONResponse(found)


@router.post("/sobjects/{sobject}", openapi_extra=json_body(bodies.COLLECTION_RETRIEVE))
def collection_retrieve_post(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> SalesforceJSONResponse:
    data = parse_object(raw, "SObjectCollectionRetrieveRequest").data
    ids = data.get("ids")
    fields = data.get("fields")
    if not isinstance(ids, list) or not isinstance(fields, list):
        raise composite.invalid_input("ids and fields must be JSON arrays")
    found = composite.collection_retrieve(
        conn,
        ctx,
        definition,
        [str(i) for i in ids],
        [str(f) for f in fields],
        limit=composite.MAX_RETRIEVE_BY_POST,
    )
    return SalesforceJSONResponse(found)


@router.patch("/sobjects/{sobject}/{field}", openapi_extra=json_body(bodies.COLLECTION))
def collection_upsert(
    field: str, raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> SalesforceJSONResponse:
    data = parse_object(raw, "SObjectCollectionRequest").data
    return SalesforceJSONResponse(composite.collection_upsert(conn, ctx, definition, field, data))
