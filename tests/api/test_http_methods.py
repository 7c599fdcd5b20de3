"""HEAD wherever GET is served: the GET's status and headers, without a body."""

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
    assert api.options("/services/oauth2/token").json() == [
        {
            "message": "HTTP Method 'OPTIONS' not allowed. Allowed are POST",
            "errorCode": "METHOD_NOT_ALLOWED",
        }
    ]
