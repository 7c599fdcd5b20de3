"""HEAD wherever GET is served (the GET's status and headers, without a body), OPTIONS and the
405 naming what is allowed, and 415 for a body that is not JSON."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.storage.ids import make_id
from tests.conftest import API


@pytest.mark.parametrize(
    "path",
    [
        "/services/data",
        f"{API}/limits",
        f"{API}/sobjects/Account/describe",
        f"{API}/sobjects/Account/{make_id('001', 1)}",
        f"{API}/query?q=SELECT+Id+FROM+Account+LIMIT+3",
    ],
)
def test_head_answers_what_get_answers_without_the_body(api: TestClient, path: str) -> None:
    got, head = api.get(path), api.head(path)
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    assert head.headers["content-length"] == str(len(got.content))


def test_head_of_a_missing_record_is_the_gets_404(api: TestClient) -> None:
    path = f"{API}/sobjects/Account/{make_id('001', 999_999)}"
    head = api.head(path)
    assert head.status_code == 404 and head.content == b""
    assert head.headers["content-length"] == str(len(api.get(path).content))


def test_head_where_no_get_is_served_is_a_405_naming_what_is(api: TestClient) -> None:
    response = api.head("/services/oauth2/token")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, OPTIONS"
    assert api.put("/services/oauth2/token").json() == [
        {
            "message": "HTTP Method 'PUT' not allowed. Allowed are POST",
            "errorCode": "METHOD_NOT_ALLOWED",
        }
    ]


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/services/oauth2/token", "POST, OPTIONS"),
        (f"{API}/sobjects/Account/{make_id('001', 1)}", "HEAD, GET, PATCH, DELETE, OPTIONS"),
        (f"{API}/query", "HEAD, GET, OPTIONS"),
        (f"{API}/composite/sobjects", "POST, PATCH, DELETE, OPTIONS"),
    ],
)
def test_options_answers_the_allowed_methods_without_a_session(
    client: TestClient, path: str, allowed: str
) -> None:
    response = client.options(path)
    assert response.status_code == 200
    assert response.headers["allow"] == allowed
    assert response.content == b""
    assert client.request("TRACE", path).headers["allow"] == allowed


def test_options_of_an_unknown_path_is_the_404(client: TestClient) -> None:
    response = client.options("/services/data/v59.0/nothing/here")
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("path", "media_type"),
    [
        (f"{API}/sobjects/Account", "text/plain"),
        (f"{API}/sobjects/Account", "application/x-www-form-urlencoded"),
        (f"{API}/composite/sobjects", "application/xml"),
        (f"{API}/parameterizedSearch", "text/plain; charset=utf-8"),
    ],
)
def test_a_body_declared_as_not_json_is_a_415(api: TestClient, path: str, media_type: str) -> None:
    before = api.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Account"}).json()
    body = b'{"Name": "Zq typed wrong", "q": "Zq"}'
    response = api.post(path, content=body, headers={"Content-Type": media_type})
    assert response.status_code == 415
    kind = media_type.partition(";")[0]
    assert response.json() == [
        {
            "message": f"MediaType of '{kind}' is not supported by this resource",
            "errorCode": "UNSUPPORTED_MEDIA_TYPE",
        }
    ]
    after = api.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Account"}).json()
    assert after["totalSize"] == before["totalSize"]


@pytest.mark.parametrize(
    "media_type", [None, "application/json", "application/json; charset=UTF-8"]
)
def test_json_bodies_are_read_declared_or_not(api: TestClient, media_type: str | None) -> None:
    headers = {"Content-Type": media_type} if media_type else {}
    response = api.post(f"{API}/sobjects/Account", content=b'{"Name": "Zq"}', headers=headers)
    assert response.status_code == 201, response.text


def test_a_bad_token_is_a_401_before_the_body_is_judged(client: TestClient) -> None:
    response = client.post(
        f"{API}/sobjects/Account",
        content=b"x",
        headers={"Authorization": "Bearer nope", "Content-Type": "text/plain"},
    )
    assert response.status_code == 401
