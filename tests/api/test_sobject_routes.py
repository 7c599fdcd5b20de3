"""Every route that names an sObject in its path answers one the org does not have alike: the
session first (a bad token is a 401 whatever the type), then what the request's other
dependencies check (its API version, a JSON body's media type), then the type: NOT_FOUND."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient

from app.storage.ids import make_id
from tests.conftest import API

NOT_FOUND = [{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}]
UNKNOWN = "Nope__x"
# What fills each path parameter but the object's.
VALUES = {
    "version": "v59.0",
    "record_id": make_id("001", 1),
    "field": "Name",
    "value": "x",
    "record_type_id": make_id("012", 1),
    "view_id": make_id("00B", 1),
    "name": "UserAlt",
    "blob_field": "Body",
}
_PARAMETER = re.compile(r"{(\w+)(?::\w+)?}")


def _routes_naming_an_object(app: Any) -> list[tuple[str, str]]:
    """(method, path template) of every API route with `{sobject}` in its path."""
    return sorted(
        (method, route.path)
        for context in iter_route_contexts(app.routes)
        if isinstance(route := context.original_route, APIRoute) and "{sobject}" in route.path
        for method in (route.methods or set()) - {"HEAD"}
    )


def _path(template: str, sobject: str, **values: str) -> str:
    filled = {**VALUES, "sobject": sobject, **values}
    return _PARAMETER.sub(lambda match: filled[match[1]], template)


@pytest.fixture(scope="module")
def routes(client: TestClient) -> list[tuple[str, str]]:
    return _routes_naming_an_object(client.app)


def test_the_routes_are_the_ones_expected(routes: list[tuple[str, str]]) -> None:
    assert len(routes) == 33  # 26 of the REST API's, 7 of the Tooling API's
    assert ("GET", "/services/data/{version}/sobjects/{sobject}/{record_id:record}") in routes
    assert ("POST", "/services/data/{version}/composite/tree/{sobject}") in routes
    assert ("GET", "/services/data/{version}/sobjects/{sobject}/listviews/{view_id}") in routes


def _request(client: TestClient, method: str, path: str, **kwargs: Any) -> Any:
    if method in {"POST", "PATCH"}:
        kwargs.setdefault("json", {})
    return client.request(method, path, **kwargs)


def test_an_unknown_object_is_not_found_after_the_session(
    client: TestClient, api: TestClient, routes: list[tuple[str, str]]
) -> None:
    for method, template in routes:
        path = _path(template, UNKNOWN)
        anonymous = _request(client, method, path, headers={"Authorization": "Bearer nope"})
        assert anonymous.status_code == 401, (method, path)
        assert anonymous.json()[0]["errorCode"] == "INVALID_SESSION_ID"
        found = _request(api, method, path)
        assert (found.status_code, found.json()) == (404, NOT_FOUND), (method, path)
        assert api.head(path).status_code in (404, 405)


def test_an_unknown_object_is_not_found_after_the_version_and_the_body(
    api: TestClient, routes: list[tuple[str, str]]
) -> None:
    for method, template in routes:
        path = _path(template, UNKNOWN, version="v1.0")
        response = _request(api, method, path)
        assert (response.status_code, response.json()) == (404, NOT_FOUND), (method, path)
        if method not in {"POST", "PATCH"}:
            continue
        path = _path(template, UNKNOWN)
        plain = api.request(method, path, content=b"{", headers={"Content-Type": "text/plain"})
        assert plain.status_code == 415, (method, path)
        broken = api.request(method, path, content=b"{")  # the type is checked before the body
        assert (broken.status_code, broken.json()) == (404, NOT_FOUND), (method, path)


def test_a_composite_subrequest_naming_an_unknown_object_is_not_found(api: TestClient) -> None:
    body = {
        "compositeRequest": [
            {"method": "GET", "url": f"{API}/sobjects/{UNKNOWN}/describe", "referenceId": "d"},
            {"method": "POST", "url": f"{API}/sobjects/{UNKNOWN}", "referenceId": "c", "body": {}},
        ]
    }
    response = api.post(f"{API}/composite", json=body)
    assert response.status_code == 200, response.text
    answers = [(r["httpStatusCode"], r["body"]) for r in response.json()["compositeResponse"]]
    assert answers[0] == (404, NOT_FOUND)
    assert answers[1][0] in (400, 404)
