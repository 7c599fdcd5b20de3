"""The REST resources every org serves about its UI, built from the metadata: layouts, compact
and approval layouts, list views and their results, quick actions (LogACall), tabs, the theme,
recently used records, and process rules and approvals (none)."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from app.api.deps import ConnectionDep, JsonBodyDep, OrgContextDep, SObjectDep, app_state
from app.api.openapi import POSITIVE_COUNT, parameter, query_parameters
from app.api.routing import SalesforceRouter, public_base_url
from app.errors import JsonParserError
from app.services import layouts, list_views, quick_actions
from app.services.json_body import parse_object
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


@router.get(f"{OBJECT}/describe/namedLayouts/{{name}}")
def get_named_layout(name: str, ctx: OrgContextDep, definition: SObjectDep) -> dict[str, Any]:
    return layouts.named_layout(definition, ctx.registry, name)


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
    return quick_actions.listed(ctx.base_path)


@router.get("/quickActions/{name}")
def get_quick_action(name: str, ctx: OrgContextDep) -> dict[str, Any]:
    return quick_actions.describe(name, ctx.base_path)


@router.get("/quickActions/{name}/describe")
def describe_quick_action(name: str, ctx: OrgContextDep) -> dict[str, Any]:
    return quick_actions.describe(name, ctx.base_path)


@router.get("/quickActions/{name}/defaultValues")
def get_default_values(name: str, ctx: OrgContextDep) -> dict[str, Any]:
    return quick_actions.default_values(ctx, name, None)


@router.get("/quickActions/{name}/defaultValues/{context_id}")
def get_default_values_for(name: str, context_id: str, ctx: OrgContextDep) -> dict[str, Any]:
    return quick_actions.default_values(ctx, name, context_id)


@router.post("/quickActions/{name}")
def run_quick_action(
    name: str, raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep
) -> dict[str, Any]:
    """Run the action on the record `contextId` names, with the caller's `record` values."""
    body = parse_object(raw, "QuickAction").data
    return quick_actions.execute(conn, ctx, name, body)


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


@router.post("/process/rules")
def trigger_process_rules(ctx: OrgContextDep, raw: JsonBodyDep) -> dict[str, Any]:
    """Evaluate the active workflow rules of the records named (`{"contextIds": [...]}`,
    jsforce's `process.rule.trigger`): the org has none, so nothing runs, and the answer is a
    real org's when its rules ran clean."""
    del ctx
    ids = parse_object(raw, "ProcessRuleRequest").data.get("contextIds")
    if not isinstance(ids, list) or not ids or not all(isinstance(item, str) for item in ids):
        raise JsonParserError("contextIds must be a non-empty array of record ids")
    return {"errors": None, "success": True}


@router.get("/process/approvals")
def get_process_approvals(ctx: OrgContextDep) -> dict[str, Any]:
    del ctx
    return {"approvals": {}}  # no approval processes
