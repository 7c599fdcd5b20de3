"""The REST resources every org serves about its UI, built from the metadata: layouts, compact
and approval layouts, list views and their results, quick actions (none), tabs, the theme,
recently used records, and process rules and approvals (none)."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from app.api.deps import ConnectionDep, OrgContextDep, SObjectDep, app_state
from app.api.openapi import POSITIVE_COUNT, parameter, query_parameters
from app.api.routing import SalesforceRouter, public_base_url
from app.services import layouts, list_views
from app.services.recent import recent_items, recent_limit

router = SalesforceRouter(prefix="/services/data/{version}")
OBJECT = "/sobjects/{sobject}"
PAGE = query_parameters(
    parameter("limit", "How many rows (25 unless given, at most 2,000)"),
    parameter("offset", "How many rows to skip (at most 2,000)"),
)


@router.get(f"{OBJECT}/describe/layouts")
def get_layouts(ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    return layouts.layouts(definition, ctx.registry, ctx.base_path)


@router.get(f"{OBJECT}/describe/layouts/{{record_type_id}}")
def get_layout(record_type_id: str, ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    return layouts.layout_for_record_type(definition, ctx.registry, record_type_id)


@router.get(f"{OBJECT}/describe/compactLayouts")
def get_compact_layouts(ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    return layouts.compact_layouts(definition, ctx.base_path)


@router.get(f"{OBJECT}/describe/approvalLayouts")
def get_approval_layouts(ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    del ctx, definition  # the version and the object, checked: nothing else to read
    return {"approvalLayouts": []}  # no approval process, so no approval layout


@router.get(f"{OBJECT}/listviews")
def get_list_views(ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    return list_views.list_views(definition, ctx.base_path)


@router.get(f"{OBJECT}/listviews/{{view_id}}")
def get_list_view(view_id: str, ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    view = list_views.find_view(definition, view_id)
    return list_views.view_entry(view, ctx.base_path)


@router.get(f"{OBJECT}/listviews/{{view_id}}/describe")
def describe_list_view(view_id: str, ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    del ctx  # the version, checked before the object
    return list_views.describe_view(list_views.find_view(definition, view_id))


@router.get(f"{OBJECT}/listviews/{{view_id}}/results", openapi_extra=PAGE)
def list_view_results(
    view_id: str,
    request: Request,
    ctx: OrgContextDep,
    conn: ConnectionDep,
    definition: SObjectDep,
) -> dict[str, Any]:
    view = list_views.find_view(definition, view_id)
    params = request.query_params
    return list_views.view_results(
        conn,
        ctx,
        app_state(request).cursors,
        view,
        limit_text=params.get("limit"),
        offset_text=params.get("offset"),
    )


@router.get(f"{OBJECT}/quickActions")
def get_object_quick_actions(ctx: OrgContextDep, definition: SObjectDep) -> list[Any]:
    del ctx, definition  # the version and the object, checked: nothing else to read
    return []  # the org defines no quick actions


@router.get("/quickActions")
def get_quick_actions(ctx: OrgContextDep) -> list[Any]:
    del ctx
    return []


@router.get("/tabs")
def get_tabs(request: Request, ctx: OrgContextDep) -> list[dict[str, Any]]:
    base = public_base_url(request)
    return [layouts.tab(sobject, base) for sobject in ctx.registry]


@router.get("/theme")
def get_theme(request: Request, ctx: OrgContextDep) -> dict[str, Any]:
    base = public_base_url(request)
    return {"themeItems": [layouts.theme_item(sobject, base) for sobject in ctx.registry]}


@router.get(
    "/recent",
    openapi_extra=query_parameters(
        parameter("limit", "At most this many (200)", pattern=POSITIVE_COUNT)
    ),
)
def get_recent(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> list[dict[str, Any]]:
    return recent_items(conn, ctx, recent_limit(request.query_params.get("limit")))


@router.get("/process")
def get_process(ctx: OrgContextDep) -> dict[str, str]:
    return {name: f"{ctx.base_path}/process/{name}" for name in ("rules", "approvals")}


@router.get("/process/rules")
def get_process_rules(ctx: OrgContextDep) -> dict[str, Any]:
    del ctx
    return {"rules": {}}  # no workflow rules


@router.get("/process/approvals")
def get_process_approvals(ctx: OrgContextDep) -> dict[str, Any]:
    del ctx
    return {"approvals": {}}  # no approval processes
