"""The Tooling API: /tooling/query, /tooling/sobjects, an object's basic information, describe
and records; and the metadata objects' records (StaticResource), the sandbox's own, created
(from JSON or multipart/form-data), updated, deleted and their content read. What it does not
build (the other objects' writes, Apex) answers the error that names it, from `planned`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Response
from starlette.convertors import StringConvertor, register_url_convertor

from app.api.deps import ConnectionDep, OrgContextDep, app_state
from app.api.openapi import CREATED, NO_CONTENT, parameter, query_parameters
from app.api.record_bodies import RecordBodyDep, record_of
from app.api.routing import (
    RecordIdConvertor,
    SalesforceJSONResponse,
    SalesforceRouter,
    public_base_url,
)
from app.errors import FeatureNotSupported, NotFound
from app.metadata.describe import describe_global, describe_sobject, global_entry
from app.metadata.model import SObjectDef
from app.metadata.tooling import tooling_registry
from app.services import records
from app.services.query import batch_size_from
from app.services.records import BLOB_MEDIA_TYPE, field_list, resolve_sobject
from app.services.tooling import (
    get_tooling_record,
    run_tooling_query,
    stored_context,
    stored_sobject,
    tooling_context,
    tooling_query_columns,
    tooling_query_more,
)

router = SalesforceRouter(prefix="/services/data/{version}/tooling")
SOQL = query_parameters(
    parameter("q", "A SOQL query of the Tooling API's objects", required=True),
    parameter("columns", "true: describe the query's columns (columnMetadata), not run it"),
)


WRITES = "writing the Tooling API's records"


class UnbuiltToolingConvertor(StringConvertor):
    """`{rest:tooling_unbuilt}`: a path under /tooling that no route of this module or of
    `planned`'s Apex resources serves, for `planned`'s catch-all: a method these paths do not
    serve is then a 405 naming the ones they do, not the catch-all's 501."""

    regex = (
        "(?!(?:(?:query|queryAll)(?:/[^/]+)?|sobjects(?:/[^/]+){0,2}"
        f"|sobjects/[^/]+/{RecordIdConvertor.regex}/[^/]+"
        "|executeAnonymous|runTestsSynchronous|runTestsAsynchronous|completions)$).+"
    )


register_url_convertor("tooling_unbuilt", UnbuiltToolingConvertor())


def get_tooling_sobject(ctx: OrgContextDep, sobject: str) -> SObjectDef:
    """The Tooling API's object a path names (case-insensitively); NOT_FOUND otherwise."""
    del ctx  # authenticated and version-checked first, like any other call
    return resolve_sobject(tooling_registry(), sobject)


ToolingSObjectDep = Annotated[SObjectDef, Depends(get_tooling_sobject)]


def _stored(ctx: OrgContextDep, definition: SObjectDef) -> SObjectDef:
    """The sandbox's object a write names, or the 501 the Tooling objects' writes answer."""
    stored = stored_sobject(ctx, definition)
    if stored is None:
        raise FeatureNotSupported(WRITES)
    return stored


def _query(
    request: Request, ctx: OrgContextDep, conn: ConnectionDep, all_rows: bool
) -> SalesforceJSONResponse:
    text = request.query_params.get("q")
    if request.query_params.get("columns", "").lower() == "true":
        return SalesforceJSONResponse(tooling_query_columns(ctx, text, include_deleted=all_rows))
    return SalesforceJSONResponse(
        run_tooling_query(
            conn,
            ctx,
            app_state(request).cursors,
            text,
            include_deleted=all_rows,
            batch_size=batch_size_from(request.headers.get("sforce-query-options")),
        )
    )


@router.get("/query", openapi_extra=SOQL)
def query(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> SalesforceJSONResponse:
    return _query(request, ctx, conn, all_rows=False)


@router.get("/queryAll", openapi_extra=SOQL)
def query_all(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> SalesforceJSONResponse:
    return _query(request, ctx, conn, all_rows=True)


@router.get("/query/{locator}")
def next_batch(locator: str, request: Request, ctx: OrgContextDep) -> SalesforceJSONResponse:
    return SalesforceJSONResponse(tooling_query_more(ctx, app_state(request).cursors, locator))


@router.get("/sobjects")
def get_describe_global(ctx: OrgContextDep) -> dict[str, Any]:
    tooling = tooling_context(ctx)
    return describe_global(list(tooling.registry), tooling.base_path)


@router.get("/sobjects/{sobject}")
def get_basic_info(ctx: OrgContextDep, definition: ToolingSObjectDep) -> dict[str, Any]:
    base = tooling_context(ctx).base_path
    return {"objectDescribe": global_entry(definition, base), "recentItems": []}


@router.get("/sobjects/{sobject}/describe")
def get_describe(
    request: Request, ctx: OrgContextDep, definition: ToolingSObjectDep
) -> dict[str, Any]:
    base = tooling_context(ctx).base_path
    return describe_sobject(definition, base, public_base_url(request))


@router.post("/sobjects/{sobject}", status_code=201, responses={201: CREATED})
def create(
    raw: RecordBodyDep, ctx: OrgContextDep, conn: ConnectionDep, definition: ToolingSObjectDep
) -> SalesforceJSONResponse:
    # The body's media type and size are checked first, then the object, as for any sObject.
    stored = _stored(ctx, definition)
    record_id = records.create_record(conn, ctx, stored, record_of(raw, stored))
    return SalesforceJSONResponse(
        {"id": record_id, "success": True, "errors": []},
        status_code=201,
        headers={"Location": stored_context(ctx).record_url(stored, record_id)},
    )


@router.get("/sobjects/{sobject}/{record_id:record}")
def retrieve(
    record_id: str,
    request: Request,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: ToolingSObjectDep,
) -> dict[str, Any]:
    fields = field_list(request.query_params.get("fields"))
    stored = stored_sobject(ctx, definition)
    if stored is not None:
        return records.get_record(conn, stored_context(ctx), stored, record_id, fields)
    return get_tooling_record(ctx, definition, record_id, fields)


@router.get("/sobjects/{sobject}/{record_id:record}/{blob_field}")
def get_blob(
    record_id: str,
    blob_field: str,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: ToolingSObjectDep,
) -> Response:
    """A base64 field's content ("sObject Blob Get"), as the bytes it holds."""
    stored = stored_sobject(ctx, definition)
    if stored is None:
        raise NotFound()
    content = records.get_blob(conn, ctx, stored, record_id, blob_field)
    return Response(content, media_type=BLOB_MEDIA_TYPE)


@router.patch(
    "/sobjects/{sobject}/{record_id:record}", status_code=204, responses={204: NO_CONTENT}
)
def update(
    record_id: str,
    raw: RecordBodyDep,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: ToolingSObjectDep,
) -> Response:
    stored = _stored(ctx, definition)
    records.update_record(conn, ctx, stored, record_id, record_of(raw, stored))
    return Response(status_code=204)


@router.delete(
    "/sobjects/{sobject}/{record_id:record}", status_code=204, responses={204: NO_CONTENT}
)
def delete(
    record_id: str, ctx: OrgContextDep, conn: ConnectionDep, definition: ToolingSObjectDep
) -> Response:
    stored = _stored(ctx, definition)
    records.delete_record(conn, ctx, stored, record_id)
    return Response(status_code=204)
