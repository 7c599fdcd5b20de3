"""sObject resources: describeGlobal, describe, and record create, retrieve, update, delete."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from app.api.deps import ConnectionDep, OrgContextDep, RawBodyDep
from app.api.routing import SalesforceJSONResponse, SlashRouter
from app.metadata.describe import describe_global, describe_sobject, global_entry
from app.services import records
from app.services.json_body import parse_object

router = SlashRouter(prefix="/services/data/{version}/sobjects")


@router.get("")
def get_describe_global(ctx: OrgContextDep) -> dict[str, Any]:
    return describe_global(list(ctx.registry), ctx.base_path)


@router.get("/{sobject}")
def get_basic_info(sobject: str, ctx: OrgContextDep) -> dict[str, Any]:
    definition = records.resolve_sobject(ctx, sobject)
    return {"objectDescribe": global_entry(definition, ctx.base_path), "recentItems": []}


@router.post("/{sobject}")
def create(sobject: str, raw: RawBodyDep, ctx: OrgContextDep, conn: ConnectionDep) -> Any:
    definition = records.resolve_sobject(ctx, sobject)
    body = parse_object(raw, definition.name.lower())
    record_id = records.create_record(conn, ctx, definition, body)
    return SalesforceJSONResponse(
        {"id": record_id, "success": True, "errors": []},
        status_code=201,
        headers={"Location": ctx.record_url(definition, record_id)},
    )


@router.get("/{sobject}/describe")
def get_describe(sobject: str, ctx: OrgContextDep) -> dict[str, Any]:
    return describe_sobject(records.resolve_sobject(ctx, sobject), ctx.base_path)


@router.get("/{sobject}/{record_id}")
def retrieve(
    sobject: str, record_id: str, request: Request, ctx: OrgContextDep, conn: ConnectionDep
) -> dict[str, Any]:
    definition = records.resolve_sobject(ctx, sobject)
    fields_param = request.query_params.get("fields")
    field_names = (
        [name.strip() for name in fields_param.split(",") if name.strip()]
        if fields_param is not None
        else None
    )
    return records.get_record(conn, ctx, definition, record_id, field_names)


@router.patch("/{sobject}/{record_id}")
def update(
    sobject: str, record_id: str, raw: RawBodyDep, ctx: OrgContextDep, conn: ConnectionDep
) -> Response:
    definition = records.resolve_sobject(ctx, sobject)
    body = parse_object(raw, definition.name.lower())
    records.update_record(conn, ctx, definition, record_id, body)
    return Response(status_code=204)


@router.delete("/{sobject}/{record_id}")
def delete(sobject: str, record_id: str, ctx: OrgContextDep, conn: ConnectionDep) -> Response:
    definition = records.resolve_sobject(ctx, sobject)
    records.delete_record(conn, ctx, definition, record_id)
    return Response(status_code=204)
