"""Routing helpers: the router every API module uses, the paths routes match, JSON responses."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.convertors import StringConvertor, register_url_convertor
from starlette.routing import BaseRoute, Match

from app.api.direct_routes import DirectRoute
from app.api.transactions import in_request_transaction
from app.errors import SalesforceError

JSON = "application/json;charset=UTF-8"
# The JSON schema of every error body: Salesforce's array of {message, errorCode[, fields]}.
ERROR_ARRAY: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "required": ["message", "errorCode"],
        "properties": {
            "message": {"type": "string"},
            "errorCode": {"type": "string"},
            "fields": {"type": "array", "items": {"type": "string"}},
        },
    },
}


class SalesforceJSONResponse(JSONResponse):
    """JSON as Salesforce sends it, rendered with orjson: query results can be large."""

    media_type = JSON

    def render(self, content: Any) -> bytes:
        try:
            return orjson.dumps(content)
        except TypeError:
            # What orjson refuses, an agent's tool arguments may hold, kept in a trajectory: an
            # integer past 64 bits, a lone surrogate (escaped: no UTF-8 holds it).
            return json.dumps(content, separators=(",", ":")).encode()


def error_response(
    error: SalesforceError, headers: dict[str, str] | None = None
) -> SalesforceJSONResponse:
    """The error as Salesforce answers it: its status, and the array of {message, errorCode}."""
    return SalesforceJSONResponse(error.to_body(), status_code=error.status_code, headers=headers)


async def salesforce_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    """The exception handler of SalesforceError, for any app that serves Salesforce's API."""
    assert isinstance(error, SalesforceError)
    return error_response(error)


# An object's own resources, which a record id in the same place must not shadow: PATCH
# /sobjects/Account/describe is a 405 naming GET, not an update of a record "describe".
OBJECT_RESOURCES = ("describe", "updated", "deleted", "Id", "listviews", "quickActions")


class RecordIdConvertor(StringConvertor):
    """`{name:record}`: one path segment that is not one of OBJECT_RESOURCES."""

    regex = "(?!(?:" + "|".join(OBJECT_RESOURCES) + ")(?:/|$))[^/]+"


register_url_convertor("record", RecordIdConvertor())


class FieldNameConvertor(StringConvertor):
    """`{name:field}`: the external id field of /sobjects/{sobject}/{field}/{value}, one path
    segment that is not one of OBJECT_RESOURCES other than Id (/sobjects/Account/Id/001...
    names the Id field): PATCH /sobjects/Account/describe/layouts is a 405 naming GET, not an
    upsert by a field "describe"."""

    regex = "(?!(?:" + "|".join(set(OBJECT_RESOURCES) - {"Id"}) + ")(?:/|$))[^/]+"


register_url_convertor("field", FieldNameConvertor())


class SalesforceRouter(APIRouter):
    """An APIRouter whose synchronous routes begin the request's transaction in the thread that
    runs them (transactions.in_request_transaction) and whose routes are answered directly where
    their dependencies allow (direct_routes). Each path is registered once, without a trailing
    slash: PathMiddleware drops one before routing, so `/x/` is served as `/x`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("route_class", DirectRoute)
        kwargs.setdefault("default_response_class", SalesforceJSONResponse)
        super().__init__(**kwargs)

    def add_api_route(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().add_api_route(path, in_request_transaction(endpoint), **kwargs)


_REPEATED_SLASHES = re.compile(r"//+")


def route_path(path: str) -> str:
    """The path the routes are matched on: Salesforce serves `/x/` as `/x`, never redirecting,
    and `//x` as `/x` (clients join an instance URL ending in a slash to an absolute path)."""
    if "//" in path:
        path = _REPEATED_SLASHES.sub("/", path)
    return path[:-1] if len(path) > 1 and path.endswith("/") else path


def public_base_url(request: Request) -> str:
    """scheme://host[:port] as the client reached us, honouring proxy headers."""
    scheme = request.headers.get("x-forwarded-proto", request.url.scheme).split(",")[0].strip()
    host = request.headers.get("x-forwarded-host") or request.headers.get("host")
    if not host:
        host = request.url.netloc
    return f"{scheme}://{host.split(',')[0].strip()}"


def serves(routes: Sequence[BaseRoute], path: str, method: str) -> bool:
    """Whether some route answers `method` at `path` (the 405 message and HEAD both ask)."""
    probe = {"type": "http", "path": route_path(path), "root_path": "", "method": method}
    return any(route.matches(probe)[0] is Match.FULL for route in routes)
