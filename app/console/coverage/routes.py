"""The resources of the report: the application's route table, each route's API (by path
prefix), whether it is supported, and the tests whose strings name it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from starlette.convertors import CONVERTOR_TYPES
from starlette.routing import BaseRoute, Mount, WebSocketRoute

from app.api import planned, soap_calls
from app.console.coverage.sources import TestIndex
from app.errors import FeatureNotSupported
from app.services.org import PLANNED_RESOURCES

REST_BASE = "/services/data/{version}"
# The API each route belongs to, by path prefix (whole segments; the longest prefix wins). The
# order is the report's. The planned REST resources (app.services.org.PLANNED_RESOURCES) get an
# entry each, after these, named by their feature.
API_PREFIXES: tuple[tuple[str, str], ...] = (
    ("/services/data", "REST API"),
    (REST_BASE, "REST API"),
    (f"{REST_BASE}/limits", "REST API"),
    (f"{REST_BASE}/query", "REST API: query"),
    (f"{REST_BASE}/queryAll", "REST API: query"),
    (f"{REST_BASE}/search", "REST API: search"),
    (f"{REST_BASE}/parameterizedSearch", "REST API: search"),
    (f"{REST_BASE}/sobjects", "REST API: sObjects"),
    (f"{REST_BASE}/sobjects/{{sobject}}/describe/layouts", "REST API: UI resources"),
    (f"{REST_BASE}/sobjects/{{sobject}}/describe/compactLayouts", "REST API: UI resources"),
    (f"{REST_BASE}/sobjects/{{sobject}}/describe/approvalLayouts", "REST API: UI resources"),
    (f"{REST_BASE}/sobjects/{{sobject}}/listviews", "REST API: UI resources"),
    (f"{REST_BASE}/sobjects/{{sobject}}/quickActions", "REST API: UI resources"),
    (f"{REST_BASE}/quickActions", "REST API: UI resources"),
    (f"{REST_BASE}/tabs", "REST API: UI resources"),
    (f"{REST_BASE}/theme", "REST API: UI resources"),
    (f"{REST_BASE}/recent", "REST API: UI resources"),
    (f"{REST_BASE}/process", "REST API: UI resources"),
    (f"{REST_BASE}/composite", "Composite"),
    (f"{REST_BASE}/jobs", "Bulk API 2.0"),
    ("/services/async", "Bulk API 1.0"),
    ("/services/Soap", "SOAP API"),
    ("/services/oauth2", "OAuth"),
    ("/services/oauth2/userinfo", "Identity"),
    ("/id", "Identity"),
    ("/services/apexrest", "Apex REST"),
    ("/cometd", "Streaming API"),
    ("/__localforce", "localforce control plane"),
    ("/mcp", "MCP"),
    ("/openenv", "OpenEnv"),
    ("/console", "Web console"),
    ("/openapi.json", "localforce"),
    ("/docs", "localforce"),
    ("/redoc", "localforce"),
)
OTHER_API = "Other"

# A route parameter: {name} or {name:convertor}.
_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([A-Za-z_][A-Za-z0-9_]*))?\}")
# One path segment as test code writes it: text, or an f-string's placeholder in it.
_SEGMENT = r"[^/?#\s]+"
_PLACEHOLDER_SEGMENT = r"[^/?#\s]*\{\}[^/?#\s]*"
# What may follow a path in a string: an optional slash, then a query string or nothing.
_PATH_END = r"/?(?:[?#][\s\S]*)?\Z"


@dataclass(frozen=True)
class Route:
    """One route of the table, in matching order."""

    path: str  # as registered: /services/data/{version}/sobjects/{record_id:record}
    methods: tuple[str, ...]
    unsupported: str | None  # the feature FeatureNotSupported names, when it is one
    mount: bool = False

    @property
    def shown(self) -> str:
        return display_path(self.path)


def display_path(path: str) -> str:
    """A route's path as the report shows it: the REST API's version as `vXX.X` (the other
    APIs' as `XX.X`), parameters without their convertor, but for `:path`."""
    if path == REST_BASE or path.startswith(REST_BASE + "/"):
        path = "/services/data/vXX.X" + path[len(REST_BASE) :]
    path = path.replace("{version}", "XX.X")

    def parameter(match: re.Match[str]) -> str:
        name, convertor = match[1], match[2]
        return f"{{{name}:path}}" if convertor == "path" else f"{{{name}}}"

    return _PARAM.sub(parameter, path)


def app_routes(app: FastAPI) -> list[Route]:
    """Every route of `app`, in the order the router tries them (included routers flattened;
    a mounted app is one route, or its own routes when it has a route table)."""

    routes: list[Route] = []
    for context in iter_route_contexts(app.routes):
        routes.extend(_flatten(context.original_route, context.path or "", context.endpoint))
    return routes


def _flatten(route: BaseRoute, path: str, endpoint: Any) -> Iterator[Route]:

    if isinstance(route, Mount):
        inner = list(route.routes)
        if not inner:
            yield Route(f"{route.path}/{{path:path}}", ("*",), None, mount=True)
        for child in inner:
            child_path = getattr(child, "path", "")
            yield from _flatten(child, route.path + child_path, getattr(child, "endpoint", None))
        return
    if isinstance(route, WebSocketRoute):
        yield Route(path, ("WEBSOCKET",), None)
        return
    methods = tuple(sorted(getattr(route, "methods", None) or ())) or ("*",)
    yield Route(path, methods, _unsupported_feature(path, endpoint))


def _unsupported_feature(path: str, endpoint: Any) -> str | None:
    """The feature a route's endpoint refuses, when all it does is answer FeatureNotSupported:
    the routes of app/api/planned.py, and the SOAP APIs that app/api/soap_calls.py names but
    does not build."""

    module = getattr(endpoint, "__module__", None)
    if module == planned.__name__:
        feature = planned.feature_of(path)
        if feature is not None:
            return feature
        resource = path.removeprefix(REST_BASE + "/").split("/")[0]
        return PLANNED_RESOURCES.get(resource, "this resource")
    qualname = getattr(endpoint, "__qualname__", "")
    if module == soap_calls.__name__ and qualname.startswith("_unbuilt_endpoint."):
        letter = path.removeprefix("/services/Soap/").split("/")[0]
        return soap_calls.UNBUILT_APIS[letter][0]
    return None


def _api_of(path: str, prefixes: Sequence[tuple[str, str]]) -> str:
    best, name = -1, OTHER_API
    for prefix, api in prefixes:
        if (path == prefix or path.startswith(prefix.rstrip("/") + "/")) and len(prefix) > best:
            best, name = len(prefix), api
    return name


def _feature_name(feature: str) -> str:
    """`the Tooling API` -> `Tooling API`: a planned feature as an API's name."""
    return feature.removeprefix("the ")[:1].upper() + feature.removeprefix("the ")[1:]


def apis(routes: list[Route], tests: TestIndex) -> list[dict[str, Any]]:

    planned = [
        (f"{REST_BASE}/{resource}", _feature_name(feature))
        for resource, feature in sorted(PLANNED_RESOURCES.items())
    ]
    prefixes = [*API_PREFIXES, *planned]
    proofs = route_tests(tests, routes)
    # One resource per path (and support): its routes' methods together.
    rows: dict[tuple[str, bool], dict[str, Any]] = {}
    for index, route in enumerate(routes):
        supported = route.unsupported is None
        key = (route.shown, supported)
        row = rows.setdefault(
            key,
            {
                "api": _api_of(route.path, prefixes),
                "path": route.shown,
                "methods": set(),
                "supported": supported,
                "note": "" if supported else FeatureNotSupported(str(route.unsupported)).message,
                "tests": set(),
            },
        )
        row["methods"].update(route.methods)
        row["tests"].update(proofs[index])
    # A planned resource the table lacks is still listed, as not supported.
    for resource, feature in PLANNED_RESOURCES.items():
        path = f"{REST_BASE}/{resource}"
        if not any(shown == display_path(path) for shown, _ in rows):
            rows[(display_path(path), False)] = {
                "api": _api_of(path, prefixes),
                "path": display_path(path),
                "methods": set(),
                "supported": False,
                "note": FeatureNotSupported(feature).message,
                "tests": set(),
            }
    order = [*dict.fromkeys(api for _, api in prefixes), OTHER_API]
    apis: list[dict[str, Any]] = []
    for api in order:
        resources = [
            {
                "path": row["path"],
                "methods": sorted(row["methods"]),
                "supported": row["supported"],
                "note": row["note"],
                "tests": sorted(row["tests"]),
            }
            for row in rows.values()
            if row["api"] == api
        ]
        if resources:
            resources.sort(key=lambda item: (item["path"], item["supported"]))
            apis.append({"api": api, "resources": resources})
    return apis


def route_pattern(route: Route) -> re.Pattern[str]:
    """What a string must end with to name `route`: its path, or for a REST route its path
    after the version (alone, or behind `/services/data/<anything>` or a placeholder); each
    parameter one segment (a `:path` one, several) or one holding a placeholder; then an
    optional query string."""

    path = route.path
    if route.mount:  # "/openenv/{path:path}": "/openenv" alone names the mount too
        mounted = re.escape(path.removesuffix("/{path:path}"))
        return re.compile(mounted + r"(?:/[^?#\s]*)?" + _PATH_END)
    rest = path.startswith(REST_BASE + "/")
    if rest:
        path = path[len(REST_BASE) :]
    pattern, position = "", 0
    for match in _PARAM.finditer(path):
        pattern += re.escape(path[position : match.start()])
        convertor = match[2] or "str"
        if convertor == "path":
            value = r"[^?#\s]*"
        elif convertor == "str":
            value = _SEGMENT
        else:
            value = CONVERTOR_TYPES[convertor].regex.replace("[^/]+", _SEGMENT)
        pattern += f"(?:{value}|{_PLACEHOLDER_SEGMENT})"
        position = match.end()
    pattern += re.escape(path[position:])
    if rest:  # behind the version, a placeholder for it, or alone (a helper adds the base)
        pattern = r"(?:/services/data/[^/?#\s]+|(?<!\S)\{\}|^)" + pattern
    return re.compile(pattern + _PATH_END)


def route_tests(suite: TestIndex, routes: list[Route]) -> list[set[str]]:
    """For each route, the tests with a string naming it (each string names the first route
    that matches it, as the router would pick)."""
    patterns = [route_pattern(route) for route in routes]
    first: dict[str, int | None] = {}
    proofs: list[set[str]] = [set() for _ in routes]
    for case in suite.cases:
        for text in case.strings:
            if "/" not in text:
                continue
            if text not in first:
                first[text] = next(
                    (i for i, pattern in enumerate(patterns) if pattern.search(text)), None
                )
            index = first[text]
            if index is not None:
                proofs[index].add(case.test_id)
    return proofs
