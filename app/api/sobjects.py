"""sObject resources: describeGlobal, describe, record create, retrieve, update, delete, and a
record's relationships."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from app.api.deps import (
    ConnectionDep,
    DescribedSObjectDep,
    JsonBodyDep,
    OrgContextDep,
    SObjectDep,
    app_state,
)
from app.api.openapi import (
    CREATED,
    MULTIPLE_MATCHES,
    NO_CONTENT,
    parameter,
    query_parameters,
)
from app.api.routing import SalesforceJSONResponse, SalesforceRouter, public_base_url
from app.metadata.describe import describe_global, describe_sobject, global_entry
from app.services import records
from app.services.json_body import parse_object
from app.services.records import BLOB_MEDIA_TYPE, is_blob_field
from app.services.relationships import names_a_record, related

router = SalesforceRouter(prefix="/services/data/{version}/sobjects")
FIELDS = query_parameters(parameter("fields", "Comma-separated fields to return"))
SINCE = query_parameters(
    parameter("start", "Start of the period (ISO 8601)", required=True, format="date-time"),
    parameter("end", "End of the period (ISO 8601)", required=True, format="date-time"),
)


@router.get("")
def get_describe_global(ctx: OrgContextDep) -> dict[str, Any]:
    return describe_global(list(ctx.registry), ctx.base_path)


@router.get("/{sobject}")
def get_basic_info(ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    return {"objectDescribe": global_entry(definition, ctx.base_path), "recentItems": []}


@router.post("/{sobject}", status_code=201, responses={201: CREATED})
def create(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> Any:
    body = parse_object(raw, definition.name.lower())
    record_id = records.create_record(conn, ctx, definition, body)
    return SalesforceJSONResponse(
        {"id": record_id, "success": True, "errors": []},
        status_code=201,
        headers={"Location": ctx.record_url(definition, record_id)},
    )


@router.get("/{sobject}/describe")
def get_describe(
    request: Request, ctx: OrgContextDep, definition: DescribedSObjectDep
) -> dict[str, Any]:
    return describe_sobject(definition, ctx.base_path, public_base_url(request))


@router.get("/{sobject}/updated", openapi_extra=SINCE)
def get_updated(
    request: Request, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> dict[str, Any]:
    params = request.query_params
    return records.updated_ids(conn, ctx, definition, params.get("start"), params.get("end"))


@router.get("/{sobject}/deleted", openapi_extra=SINCE)
def get_deleted(
    request: Request, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> dict[str, Any]:
    params = request.query_params
    return records.deleted_records(conn, ctx, definition, params.get("start"), params.get("end"))


@router.post("/{sobject}/Id", status_code=201, responses={201: CREATED})
def create_via_id(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> Any:
    return create(raw, ctx, conn, definition)


@router.get(
    "/{sobject}/{field:field}/{value}", responses={300: MULTIPLE_MATCHES}, openapi_extra=FIELDS
)
def retrieve_by_external_id(
    field: str,
    value: str,
    request: Request,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: SObjectDep,
) -> Any:
    fields = records.field_list(request.query_params.get("fields"))
    if names_a_record(definition, field) and is_blob_field(definition, value):
        # /sobjects/StaticResource/081.../Body: the bytes, not JSON ("sObject Blob Get")
        content = records.get_blob(conn, ctx, definition, field, value)
        return Response(content, media_type=BLOB_MEDIA_TYPE)
    if names_a_record(definition, field):  # /sobjects/Account/001.../Contacts
        cursors = app_state(request).cursors
        return related(conn, ctx, cursors, definition, field, value, fields)
    return records.get_by_external_id(conn, ctx, definition, field, value, fields)


@router.patch(
    "/{sobject}/{field:field}/{value}",
    responses={201: CREATED, 204: NO_CONTENT, 300: MULTIPLE_MATCHES},
    openapi_extra=query_parameters(parameter("updateOnly", "true: update only, never create")),
)
def upsert(
    field: str,
    value: str,
    request: Request,
    raw: JsonBodyDep,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: SObjectDep,
) -> Response:
    body = parse_object(raw, definition.name.lower())
    record_id, created = records.upsert_record(
        conn,
        ctx,
        definition,
        field,
        value,
        body,
        update_only=records.update_only(request.query_params.get("updateOnly")),
    )
    status, result = records.upsert_answer(ctx, record_id, created)
    if result is None:
        return Response(status_code=status)
    headers = {"Location": ctx.record_url(definition, record_id)} if created else None
    return SalesforceJSONResponse(result, status_code=status, headers=headers)


@router.delete(
    "/{sobject}/{field:field}/{value}",
    status_code=204,
    responses={204: NO_CONTENT, 300: MULTIPLE_MATCHES},
)
def delete_by_external_id(
    field: str, value: str, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> Response:
    records.delete_by_external_id(conn, ctx, definition, field, value)
    return Response(status_code=204)


@router.get("/{sobject}/{record_id:record}", openapi_extra=FIELDS)
def retrieve(
    record_id: str,
    request: Request,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: SObjectDep,
) -> dict[str, Any]:
    return records.get_record(
        conn, ctx, definition, record_id, records.field_list(request.query_params.get("fields"))
    )


@router.patch("/{sobject}/{record_id:record}", status_code=204, responses={204: NO_CONTENT})
def update(
    record_id: str,
    raw: JsonBodyDep,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: SObjectDep,
) -> Response:
    body = parse_object(raw, definition.name.lower())
    records.update_record(conn, ctx, definition, record_id, body)
    return Response(status_code=204)


@router.delete("/{sobject}/{record_id:record}", status_code=204, responses={204: NO_CONTENT})
def delete(
    record_id: str, ctx: OrgContextDep, conn: ConnectionDep, definition: SObjectDep
) -> Response:
    records.delete_record(conn, ctx, definition, record_id)
    return Response(status_code=204)
