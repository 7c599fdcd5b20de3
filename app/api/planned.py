"""Salesforce resources not built yet answer a clear error naming the feature, never a fake."""

from __future__ import annotations

from app.api.deps import OrgContextDep
from app.api.routing import SalesforceRouter
from app.errors import FeatureNotSupported
from app.services.org import PLANNED_RESOURCES

router = SalesforceRouter()
METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE"]


def _planned(feature: str) -> object:
    def endpoint(ctx: OrgContextDep) -> None:
        del ctx  # authenticated and version-checked like any other call
        raise FeatureNotSupported(feature)

    return endpoint


for resource, feature in PLANNED_RESOURCES.items():
    for path in (
        f"/services/data/{{version}}/{resource}",
        f"/services/data/{{version}}/{resource}/{{rest:path}}",
    ):
        router.add_api_route(path, _planned(feature), methods=METHODS, include_in_schema=False)  # type: ignore[arg-type]
