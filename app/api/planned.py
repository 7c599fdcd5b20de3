"""Salesforce APIs not built yet answer a clear error naming the API, never a fake and never a
404: the REST API's resources of other APIs (Tooling, Analytics, Chatter, Bulk 2.0), Apex REST,
the Streaming API, and Bulk API 1.0, whose clients read its own error envelope (XML, or JSON
for a JSON job) and its own header (`X-SFDC-Session`)."""

from __future__ import annotations

from xml.sax.saxutils import escape

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool

from app.api.deps import OrgContextDep, SessionDep, StateDep, resolve_token, token_in
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.errors import FeatureNotSupported
from app.services.org import PLANNED_RESOURCES

router = SalesforceRouter()
METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE"]
# Paths of APIs outside /services/data, and the API each one is.
PLANNED_PATHS = {
    "/services/apexrest/{rest:path}": "Apex REST (Apex classes exposed as REST resources)",
    "/cometd/{rest:path}": "the Streaming API (CometD)",
}
BULK_V1_PATH = "/services/async/{rest:path}"
BULK_V1_NAMESPACE = "http://www.force.com/2009/06/asyncapi/dataload"


def _planned(feature: str) -> object:
    def endpoint(ctx: OrgContextDep) -> None:
        del ctx  # authenticated and version-checked like any other call
        raise FeatureNotSupported(feature)

    return endpoint


def _planned_outside_rest(feature: str) -> object:
    def endpoint(session: SessionDep) -> None:
        del session  # authenticated: a bad token is told so first
        raise FeatureNotSupported(feature)

    return endpoint


for resource, feature in PLANNED_RESOURCES.items():
    for path in (
        f"/services/data/{{version}}/{resource}",
        f"/services/data/{{version}}/{resource}/{{rest:path}}",
    ):
        router.add_api_route(path, _planned(feature), methods=METHODS, include_in_schema=False)  # type: ignore[arg-type]

for path, feature in PLANNED_PATHS.items():
    router.add_api_route(
        path,
        _planned_outside_rest(feature),  # type: ignore[arg-type]
        methods=METHODS,
        include_in_schema=False,
    )


def bulk_v1_error(request: Request, code: str, message: str) -> Response:
    """Bulk API 1.0's error: `{exceptionCode, exceptionMessage}` for a JSON request, else its
    XML `<error>`; HTTP 400, as Bulk 1.0 answers its errors."""
    if "json" in request.headers.get("content-type", ""):
        body = {"exceptionCode": code, "exceptionMessage": message}
        return SalesforceJSONResponse(body, status_code=400)
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<error xmlns="{BULK_V1_NAMESPACE}">'
        f"<exceptionCode>{escape(code)}</exceptionCode>"
        f"<exceptionMessage>{escape(message)}</exceptionMessage>"
        "</error>"
    )
    return Response(xml, status_code=400, media_type="application/xml")


@router.api_route(BULK_V1_PATH, methods=METHODS, include_in_schema=False)
async def bulk_v1(request: Request, state: StateDep) -> Response:
    """Bulk API 1.0: a bad session is InvalidSessionId (which its clients answer by logging in
    again); a good one learns the API is not served."""
    token = request.headers.get("x-sfdc-session") or token_in(request.headers)
    resolved = None if not token else await run_in_threadpool(resolve_token, state, token)
    if resolved is None:
        return bulk_v1_error(request, "InvalidSessionId", "Invalid session id")
    feature = FeatureNotSupported("Bulk API 1.0")
    return bulk_v1_error(request, "FeatureNotEnabled", feature.message)
