"""API versions, the versioned resource list, limits and record counts."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from app.api.deps import ConnectionDep, OrgContextDep, SessionDep, StateDep
from app.api.openapi import parameter, query_parameters
from app.api.routing import SalesforceRouter, public_base_url
from app.services import org
from app.services.auth import ORG_ID

router = SalesforceRouter()


# The routes that read no database are async: they run on the event loop, with no trip to the
# thread pool (which costs more than their work).
@router.get("/services/data")
async def list_versions() -> list[dict[str, str]]:
    return org.versions()


@router.get("/services/data/{version}")
async def list_resources(
    request: Request, ctx: OrgContextDep, session: SessionDep
) -> dict[str, str]:
    identity = f"{public_base_url(request)}/id/{ORG_ID}/{session.user_id}"
    return org.resources(ctx.base_path, identity)


@router.get("/services/data/{version}/limits")
async def get_limits(ctx: OrgContextDep, state: StateDep) -> dict[str, Any]:
    del ctx  # authenticates and checks the version
    return org.limits(state.usage.current())


@router.get(
    "/services/data/{version}/limits/recordCount",
    openapi_extra=query_parameters(parameter("sObjects", "Comma-separated object names")),
)
def get_record_counts(request: Request, ctx: OrgContextDep, conn: ConnectionDep) -> dict[str, Any]:
    wanted = request.query_params.get("sObjects")
    names = [name.strip() for name in wanted.split(",") if name.strip()] if wanted else None
    return org.record_counts(conn, ctx.registry, ctx.tables, names)
