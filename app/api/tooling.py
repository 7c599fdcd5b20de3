"""The Tooling API's reads: /tooling/query, /tooling/sobjects, an object's basic information,
describe and records. What it does not build (its writes, Apex) answers the error that names
it, from `planned`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from starlette.convertors import StringConvertor, register_url_convertor

from app.api.deps import JsonBodyDep, OrgContextDep, app_state
from app.api.openapi import parameter, query_parameters
from app.api.routing import SalesforceJSONResponse, SalesforceRouter, public_base_url
from app.errors import FeatureNotSupported
from app.metadata.describe import describe_global, describe_sobject, global_entry
from app.metadata.model import SObjectDef
from app.metadata.tooling import tooling_registry
from app.services.query import batch_size_from
from app.services.records import field_list, resolve_sobject
from app.services.tooling import (
    get_tooling_record,
    run_tooling_query,
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
        "|executeAnonymous|runTestsSynchronous|runTestsAsynchronous|completions)$).+"
    )


register_url_convertor("tooling_unbuilt", UnbuiltToolingConvertor())


def get_tooling_sobject(ctx: OrgContextDep, sobject: str) -> SObjectDef:
    """The Tooling API's object a path names (case-insensitively); NOT_FOUND otherwise."""
    del ctx  # authenticated and version-checked first, like any other call
    return resolve_sobject(tooling_registry(), sobject)


ToolingSObjectDep = Annotated[SObjectDef, Depends(get_tooling_sobject)]


def _query(request: Request, ctx: OrgContextDep, all_rows: bool) -> SalesforceJSONResponse:
    text = request.query_params.get("q")
    if request.query_params.get("columns", "").lower() == "true":
        return SalesforceJSONResponse(tooling_query_columns(ctx, text, include_deleted=all_rows))
    return SalesforceJSONResponse(
        run_tooling_query(
            ctx,
            app_state(request).cursors,
            text,
            include_deleted=all_rows,
            batch_size=batch_size_from(request.headers.get("sforce-query-options")),
        )
    )


@router.get("/query", openapi_extra=SOQL)
def query(request: Request, ctx: OrgContextDep) -> SalesforceJSONResponse:
    return _query(request, ctx, all_rows=False)


@router.get("/queryAll", openapi_extra=SOQL)
def query_all(request: Request, ctx: OrgContextDep) -> SalesforceJSONResponse:
    return _query(request, ctx, all_rows=True)


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


@router.get("/sobjects/{sobject}/{record_id:record}")
def retrieve(
    record_id: str, request: Request, ctx: OrgContextDep, definition: ToolingSObjectDep
) -> dict[str, Any]:
    fields = field_list(request.query_params.get("fields"))
    return get_tooling_record(ctx, definition, record_id, fields)


def _write(raw: JsonBodyDep, ctx: OrgContextDep, definition: ToolingSObjectDep) -> None:
    # The body's media type and size are checked first, then the object, as for any sObject.
    del raw, ctx, definition
    raise FeatureNotSupported(WRITES)


def _delete(ctx: OrgContextDep, definition: ToolingSObjectDep) -> None:
    del ctx, definition  # authenticated, and the object known, first
    raise FeatureNotSupported(WRITES)


# Declared, so that the document's methods are the ones these paths answer (501 for now).
router.add_api_route("/sobjects/{sobject}", _write, methods=["POST"])
router.add_api_route("/sobjects/{sobject}/{record_id:record}", _write, methods=["PATCH"])
router.add_api_route("/sobjects/{sobject}/{record_id:record}", _delete, methods=["DELETE"])
