"""Composite subrequests go through the application's own routes: a resource added to the app
(here a test-only /widgets, unknown to the composite code) is reachable from /composite and
/composite/batch, in the composite's transaction, with its own errors and a SAVEPOINT each."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from app.api.deps import ConnectionDep, JsonBodyDep, OrgContextDep
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.errors import SalesforceError
from app.main import create_app
from app.services import records
from app.services.json_body import parse_object
from tests.conftest import ADMIN_HEADERS, API, login, make_settings
from tests.databases import DatabaseFactory

widgets = SalesforceRouter(prefix="/services/data/{version}/widgets")


@widgets.post("", status_code=201)
def create_widget(
    raw: JsonBodyDep, ctx: OrgContextDep, conn: ConnectionDep
) -> SalesforceJSONResponse:
    """A widget is stored as an Account of its name. One named `bad...` is written, then
    refused: only its subrequest's SAVEPOINT can undo the write."""
    body = parse_object(raw, "widget")
    account = records.resolve_sobject(ctx.registry, "Account")
    record_id = records.create_record(conn, ctx, account, body)
    if str(body.data.get("Name", "")).startswith("bad"):
        raise SalesforceError("Widgets may not be bad", error_code="INVALID_WIDGET")
    return SalesforceJSONResponse(
        {"id": record_id, "version": ctx.api_version},
        status_code=201,
        headers={"Location": f"{ctx.base_path}/widgets/{record_id}", "X-Widget": "made"},
    )


@widgets.get("/{widget_id}")
def get_widget(
    widget_id: str, request: Request, ctx: OrgContextDep, conn: ConnectionDep
) -> dict[str, Any]:
    account = records.resolve_sobject(ctx.registry, "Account")
    record = records.get_record(conn, ctx, account, widget_id, ["Name"])
    return {
        "name": record["Name"],
        "version": ctx.api_version,
        "shout": request.query_params.get("shout"),
    }


@pytest.fixture(scope="module")
def api(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[TestClient]:
    """A logged-in client on an app that serves /widgets too."""
    url = database_factory.new_url(template=sandbox_ready_template)
    app = create_app(make_settings(url, database_factory.workdir))
    app.include_router(widgets)
    with TestClient(app, base_url="https://testserver") as client:
        token = login(client)
        yield TestClient(
            app, base_url="https://testserver", headers={"Authorization": f"Bearer {token}"}
        )


def count(api: TestClient, name: str) -> int:
    soql = f"SELECT Id FROM Account WHERE Name = '{name}'"
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    return int(response.json()["totalSize"])


def sub(method: str, url: str, reference_id: str, body: Any = None) -> dict[str, Any]:
    return {"method": method, "url": url, "referenceId": reference_id, "body": body}


def composite(api: TestClient, subrequests: list[dict[str, Any]], **flags: Any) -> list[Any]:
    response = api.post(f"{API}/composite", json={**flags, "compositeRequest": subrequests})
    assert response.status_code == 200, response.text
    return list(response.json()["compositeResponse"])


def test_a_new_route_is_reachable_from_composite(api: TestClient) -> None:
    answers = composite(
        api,
        [
            sub("POST", f"{API}/widgets", "made", {"Name": "Zw One"}),
            sub("GET", f"{API}/widgets/@{{made.id}}?shout=yes", "got"),
            sub("GET", "/services/data/v58.0/widgets/@{made.id}", "old"),
            sub("POST", f"{API}/widgets", "bad", {"Name": "bad"}),
            sub("PATCH", f"{API}/widgets/x", "patch", {}),
            sub("GET", f"{API}/widgets/x/y", "nowhere"),
        ],
    )
    made, got, old, bad, patch, nowhere = answers
    widget_id = made["body"]["id"]
    assert made == {
        "body": {"id": widget_id, "version": "59.0"},
        "httpHeaders": {"Location": f"{API}/widgets/{widget_id}", "X-Widget": "made"},
        "httpStatusCode": 201,
        "referenceId": "made",
    }
    # The GET sees the POST's write: both run in the composite's one transaction.
    assert got["httpStatusCode"] == 200
    assert got["body"] == {"name": "Zw One", "version": "59.0", "shout": "yes"}
    assert old["body"]["version"] == "58.0"  # each subrequest at its own API version
    assert bad["httpStatusCode"] == 400
    assert bad["body"] == [{"errorCode": "INVALID_WIDGET", "message": "Widgets may not be bad"}]
    assert patch["httpStatusCode"] == 405
    assert patch["body"][0]["message"] == "HTTP Method 'PATCH' not allowed. Allowed are GET"
    assert nowhere["httpStatusCode"] == 404
    assert nowhere["body"][0]["errorCode"] == "NOT_FOUND"
    assert count(api, "Zw One") == 1
    assert count(api, "bad") == 0  # the refused widget's write was undone with its SAVEPOINT


def test_all_or_none_rolls_back_a_new_routes_writes(api: TestClient) -> None:
    answers = composite(
        api,
        [
            sub("POST", f"{API}/widgets", "a", {"Name": "Zw Two"}),
            sub("POST", f"{API}/widgets", "b", {"Name": "bad 2"}),
        ],
        allOrNone=True,
    )
    assert [answer["httpStatusCode"] for answer in answers] == [400, 400]
    assert answers[0]["body"][0]["errorCode"] == "PROCESSING_HALTED"
    assert answers[1]["body"][0]["errorCode"] == "INVALID_WIDGET"
    assert count(api, "Zw Two") == 0


def test_a_new_route_is_reachable_from_batch(api: TestClient) -> None:
    created = api.post(f"{API}/widgets", json={"Name": "Zw Three"})
    assert created.status_code == 201, created.text
    widget_id = created.json()["id"]
    requests = [
        {"method": "GET", "url": f"v59.0/widgets/{widget_id}"},
        {"method": "POST", "url": "v59.0/widgets", "richInput": {"Name": "Zw Four"}},
        {"method": "POST", "url": "v59.0/widgets", "richInput": {"Name": "bad 4"}},
    ]
    body = api.post(f"{API}/composite/batch", json={"batchRequests": requests}).json()
    assert body["hasErrors"] is True
    assert [result["statusCode"] for result in body["results"]] == [200, 201, 400]
    assert body["results"][0]["result"] == {"name": "Zw Three", "version": "59.0", "shout": None}
    assert count(api, "Zw Four") == 1
    assert count(api, "bad 4") == 0


def logged_calls(api: TestClient, sandbox_id: str) -> list[tuple[str, str]]:
    """The sandbox's call log once it shows a call: the background flusher may be writing the
    latest calls just when the log is read."""
    deadline = time.monotonic() + 10
    while True:
        log = api.get(f"/__localforce/sandboxes/{sandbox_id}/log", headers=ADMIN_HEADERS)
        calls = log.json()["calls"]
        if calls or time.monotonic() > deadline:
            return [(call["method"], call["path"]) for call in calls]
        time.sleep(0.05)


def test_a_composite_is_one_call_in_the_log(api: TestClient) -> None:
    """Subrequests do not pass through the HTTP middleware again: the sandbox's call log has
    the composite, not its parts (a call's subrequests would be queued before it)."""
    created = api.post("/__localforce/sandboxes", json={"id": "logged"}, headers=ADMIN_HEADERS)
    assert created.status_code == 201, created.text
    headers = {"Authorization": f"Bearer {created.json()['access_token']}"}
    subrequests = [
        sub("GET", f"{API}/sobjects/Account/describe", "one"),
        sub("GET", f"{API}/query?q=SELECT+Id+FROM+Account+LIMIT+1", "two"),
    ]
    response = api.post(f"{API}/composite", json={"compositeRequest": subrequests}, headers=headers)
    assert response.status_code == 200, response.text
    assert logged_calls(api, "logged") == [("POST", f"{API}/composite")]


@pytest.mark.parametrize(
    "url",
    [
        f"{API}/sobjects/Account/describe%0A",  # a control character names no resource
        f"{API}/widgets/x%00",
        "//[",  # no URL at all: an unclosed IPv6 host
    ],
)
def test_a_url_naming_no_resource_is_not_found(api: TestClient, url: str) -> None:
    [answer] = composite(api, [sub("GET", url, "r")])
    assert answer["httpStatusCode"] == 404
    assert answer["body"] == [
        {"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}
    ]
