"""The OpenAPI document at /openapi.json says what each route really takes and answers.

FastAPI sees only a handler's signature, and the handlers read most of their input themselves
(SOQL in `q`, raw JSON bodies, the bearer token), so its own document is wrong in both
directions: it promises a 422 no route answers and omits the 400, 401, 404 and 415 they do.
Routes state the parameters they read next to their handler (`query_parameters`); this module
adds what follows from the dependencies a route uses and from the org's metadata."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts

from app.api.control import require_admin
from app.api.deps import AUTHENTICATED, read_body, read_json_body
from app.api.routing import ERROR_ARRAY, JSON
from app.sandbox.model import SANDBOX_ID as SANDBOX_ID_PATTERN

# Why each failure status is answered, as the document words it.
FAILURES = {
    400: "The request is malformed (the HTTP parser, a query, a body or a value refused it)",
    401: "The session is missing, expired or revoked (INVALID_SESSION_ID)",
    404: "No such resource, version, object or record (NOT_FOUND)",
    413: "The body is over LOCALFORCE_MAX_BODY_BYTES (REQUEST_ENTITY_TOO_LARGE)",
    415: "The body is declared as something other than JSON (UNSUPPORTED_MEDIA_TYPE)",
}

# Success answers a route's signature does not show.
CREATED = {"description": "Created", "content": {JSON: {"schema": {"type": "object"}}}}
NO_CONTENT = {"description": "Done, with no body"}
MULTIPLE_MATCHES = {
    "description": "The external id names several records: their URLs",
    "content": {JSON: {"schema": {"type": "array", "items": {"type": "string"}}}},
}
TREE_FAILURE = {
    "description": "A record of the tree failed: nothing was saved",
    "content": {
        JSON: {
            "schema": {
                "anyOf": [
                    ERROR_ARRAY,
                    {"type": "object", "required": ["hasErrors", "results"]},
                ]
            }
        }
    },
}

BEARER = "salesforceSession"
SECURITY_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "An access token from /services/oauth2/token, SOAP login or a sandbox",
}

# 1 to 9 ASCII digits, not all zeros: a count the server reads with parse_count, at least one.
POSITIVE_COUNT = "^(?=[0-9]{1,9}$)0*[1-9][0-9]*$"
RECORD_ID = {"type": "string", "pattern": "^[a-zA-Z0-9]{15}(?:[a-zA-Z0-9]{3})?$"}
SANDBOX_ID = {"type": "string", "pattern": SANDBOX_ID_PATTERN.pattern}


def query_parameters(*parameters: dict[str, Any]) -> dict[str, Any]:
    """`openapi_extra` for a route that reads these query parameters itself."""
    return {"parameters": list(parameters)}


def parameter(
    name: str, description: str, *, required: bool = False, **schema: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": {"type": "string", **schema},
    }


def error_response(status: int) -> dict[str, Any]:
    return {"description": FAILURES[status], "content": {JSON: {"schema": ERROR_ARRAY}}}


def _calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def _failures(path: str, calls: set[Callable[..., Any]]) -> Iterable[int]:
    yield 400  # any request can be one the HTTP parser refuses
    if "{" in path:
        yield 404
    if calls & AUTHENTICATED or require_admin in calls:  # the admin key
        yield 401
    if read_json_body in calls or read_body in calls:
        yield 413
    if read_json_body in calls:
        yield 415


def _api_routes(app: FastAPI) -> Iterator[RouteContext]:
    """The routes the document lists, as mounted (with their routers' prefixes)."""
    for context in iter_route_contexts(app.routes):
        if isinstance(context.original_route, APIRoute) and context.include_in_schema:
            yield context


def json_body(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """`openapi_extra` for a route that reads a JSON body of this shape itself."""
    return {"requestBody": _json_body(schema)}


def _json_body(schema: dict[str, Any] | None = None) -> dict[str, Any]:
    content = {"application/json": {"schema": schema or {"type": "object"}}}
    return {"required": True, "content": content}


Values = dict[str, dict[str, Any]]  # a parameter or property name -> what it may hold


def describe(app: FastAPI, path_values: Values, model_values: dict[str, Values]) -> dict[str, Any]:
    """The document: FastAPI's, with each operation's real failures, body and security, the
    path values (`version`, `sobject`, ...) and the body values (a sandbox's `org`) the
    server accepts."""
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    for route in _api_routes(app):
        path = str(route.path_format)
        calls = set(_calls(route.dependant))
        for method in route.methods or ():
            operation = document["paths"][path][method.lower()]
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status in _failures(path, calls):
                responses.setdefault(str(status), error_response(status))
            if calls & AUTHENTICATED:
                operation["security"] = [{BEARER: []}]
            if read_json_body in calls:
                operation.setdefault("requestBody", _json_body())
            for item in operation.get("parameters", []):
                if item["in"] == "path" and item["name"] in path_values:
                    item["schema"] = {**item["schema"], **path_values[item["name"]]}
    components = document.setdefault("components", {})
    components.setdefault("securitySchemes", {})[BEARER] = SECURITY_SCHEME
    schemas = components.setdefault("schemas", {})
    for model, values in model_values.items():
        properties = schemas[model]["properties"]
        for name, extra in values.items():
            properties[name] = {**properties[name], **extra}
    # FastAPI's validation schemas describe the 422 no route answers.
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return document


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def sandbox_values(orgs: list[str]) -> Values:
    """What `POST /__localforce/sandboxes` takes: the orgs of the seed directory, ids as the
    manager checks them, and a clock as an ISO 8601 date-time."""
    return {
        "id": _or_null(SANDBOX_ID),
        "org": _or_null({"type": "string", "enum": orgs}),
        "clock": _or_null({"type": "string", "format": "date-time"}),
    }


def episode_values(has_task_file: bool) -> Values:
    """What `POST /__localforce/episodes` takes as its task: a task row, or its idx when the
    server has a task file to look it up in."""
    row = {"type": "object"}
    return {"task": {"anyOf": [row, {"type": "integer"}] if has_task_file else [row]}}


def install(app: FastAPI, path_values: Values, model_values: dict[str, Values]) -> None:
    """Serve `describe`'s document, built on first request."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = describe(app, path_values, model_values)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
