"""Salesforce APIs not built yet answer a clear error naming the API, never a fake and never a
404: the REST API's resources of other APIs (Tooling, Analytics, Chatter), Apex REST, the
Streaming API, and the sObject resources describe's urls name that localforce lacks."""

from __future__ import annotations

from app.api import tooling as tooling  # registers the convertor of REST_OF's Tooling paths
from app.api.deps import OrgContextDep, SessionDep
from app.api.routing import SalesforceRouter
from app.errors import FeatureNotSupported
from app.services.org import PLANNED_RESOURCES

router = SalesforceRouter()
# Matched before the sObject and Tooling routes, whose paths would take these.
sobject_router = SalesforceRouter()
METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE"]
# Paths of APIs outside /services/data, and the API each one is.
PLANNED_PATHS = {
    "/services/apexrest/{rest:path}": "Apex REST (Apex classes exposed as REST resources)",
    "/cometd/{rest:path}": "the Streaming API (CometD)",
}
# Resources matched before the sObject and Tooling routes: those a real org's describe lists
# in its urls (eventSeriesUpdates, caseArticleSuggestions, caseRowArticleSuggestions) and
# Apex's: the path, its method and the feature.
SOBJECT_BASE = "/services/data/{version}/sobjects"
PLANNED_SOBJECT_PATHS = {
    f"{SOBJECT_BASE}/Event/{{record_id}}/fromThisEventOnwards": (
        "PATCH",
        "changing an event series from one event onwards (eventSeriesUpdates)",
    ),
    f"{SOBJECT_BASE}/Case/suggestedArticles": (
        "GET",
        "knowledge article suggestions for cases (caseArticleSuggestions)",
    ),
    f"{SOBJECT_BASE}/Case/{{record_id}}/suggestedArticles": (
        "GET",
        "knowledge article suggestions for cases (caseRowArticleSuggestions)",
    ),
    # The Tooling API's Apex resources (its reads are app.api.tooling's): no Apex runtime.
    **{
        f"/services/data/{{version}}/tooling/{resource}": (
            method,
            f"{feature} (there is no Apex runtime)",
        )
        for resource, method, feature in (
            ("executeAnonymous", "GET", "executing anonymous Apex"),
            ("runTestsSynchronous", "POST", "running Apex tests"),
            ("runTestsAsynchronous", "POST", "running Apex tests"),
            ("completions", "GET", "Apex code completions"),
        )
    },
}


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


# The rest of a planned resource's path: any, but for the Tooling API's built paths.
REST_OF = {"tooling": "{rest:tooling_unbuilt}"}

for resource, feature in PLANNED_RESOURCES.items():
    for path in (
        f"/services/data/{{version}}/{resource}",
        f"/services/data/{{version}}/{resource}/{REST_OF.get(resource, '{rest:path}')}",
    ):
        router.add_api_route(path, _planned(feature), methods=METHODS, include_in_schema=False)  # type: ignore[arg-type]

for path, feature in PLANNED_PATHS.items():
    router.add_api_route(
        path,
        _planned_outside_rest(feature),  # type: ignore[arg-type]
        methods=METHODS,
        include_in_schema=False,
    )

for path, (method, feature) in PLANNED_SOBJECT_PATHS.items():
    sobject_router.add_api_route(
        path,
        _planned(feature),  # type: ignore[arg-type]
        methods=[method],
        include_in_schema=False,
    )


def feature_of(path: str) -> str | None:
    """The API a planned path outside the planned resources is."""
    if path in PLANNED_PATHS:
        return PLANNED_PATHS[path]
    if path in PLANNED_SOBJECT_PATHS:
        return PLANNED_SOBJECT_PATHS[path][1]
    return None
