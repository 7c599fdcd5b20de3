"""APIs localforce does not serve answer an error naming them (after authentication), and
every path under /services/ asks for a session before it is looked up: a bad token on any of
them, existing or not, is 401 INVALID_SESSION_ID."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

V = "/services/data/v59.0"
BAD = {"Authorization": "Bearer 00Dnot-a-session"}
EXPIRED = [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]

UNBUILT = [
    ("POST", f"{V}/tooling/sobjects/ApexClass", "writing the Tooling API's records"),
    (
        "PATCH",
        f"{V}/tooling/sobjects/ApexClass/01pLf0000000001AAA",
        "writing the Tooling API's records",
    ),
    (
        "DELETE",
        f"{V}/tooling/sobjects/ApexClass/01pLf0000000001AAA",
        "writing the Tooling API's records",
    ),
    ("POST", f"{V}/tooling/composite/sobjects", "the Tooling API"),
    (
        "GET",
        f"{V}/tooling/executeAnonymous?anonymousBody=System.debug(1);",
        "executing anonymous Apex (there is no Apex runtime)",
    ),
    ("POST", f"{V}/tooling/runTestsSynchronous", "running Apex tests (there is no Apex runtime)"),
    ("POST", f"{V}/tooling/runTestsAsynchronous", "running Apex tests (there is no Apex runtime)"),
    (
        "GET",
        f"{V}/tooling/completions?type=apex",
        "Apex code completions (there is no Apex runtime)",
    ),
    ("GET", f"{V}/tooling/sobjects/ApexClass/describe/layouts", "the Tooling API"),
    ("GET", f"{V}/analytics/reports", "the Analytics REST API (reports and dashboards)"),
    ("GET", f"{V}/chatter/users/me", "Chatter REST API (Connect)"),
    ("GET", f"{V}/connect/communities", "the Connect REST API"),
    ("GET", f"{V}/wave/datasets", "the CRM Analytics REST API"),
    ("POST", f"{V}/async-queries", "Async SOQL"),
    ("POST", f"{V}/metadata/deployRequest", "the Metadata API's REST resources (deployRequest)"),
    (
        "GET",
        f"{V}/metadata/deployRequest/0Af000000000001",
        "the Metadata API's REST resources (deployRequest)",
    ),
    (
        "PATCH",
        f"{V}/sobjects/Event/00ULf0000000001MAA/fromThisEventOnwards",
        "changing an event series from one event onwards (eventSeriesUpdates)",
    ),
    (
        "GET",
        f"{V}/sobjects/Case/suggestedArticles?subject=warranty",
        "knowledge article suggestions for cases (caseArticleSuggestions)",
    ),
    (
        "GET",
        f"{V}/sobjects/Case/500Lf0000000001IAA/suggestedArticles",
        "knowledge article suggestions for cases (caseRowArticleSuggestions)",
    ),
    ("GET", "/services/apexrest/Orders/42", "Apex REST (Apex classes exposed as REST resources)"),
    ("POST", "/cometd/59.0/handshake", "the Streaming API (CometD)"),
]


@pytest.mark.parametrize(("method", "path", "feature"), UNBUILT)
def test_an_unbuilt_api_names_itself(api: TestClient, method: str, path: str, feature: str) -> None:
    response = api.request(method, path, json={} if method in ("POST", "PATCH") else None)
    assert response.status_code == 501
    assert response.json() == [
        {
            "message": f"localforce does not support {feature} yet",
            "errorCode": "FUNCTIONALITY_NOT_ENABLED",
        }
    ]


@pytest.mark.parametrize(
    "path",
    [
        f"{V}/nothing-here",
        f"{V}/sobjects/Account/describe/layouts",
        f"{V}/sobjects",
        f"{V}/query?q=SELECT+Id+FROM+Account",
        f"{V}/tooling/query?q=SELECT+Id+FROM+ApexClass",
        "/services/apexrest/Orders",
        "/services/no/such/api",
        "/cometd/59.0/handshake",
    ],
)
@pytest.mark.parametrize("headers", [BAD, {}], ids=["bad token", "no token"])
def test_a_bad_session_is_told_so_on_every_path(
    client: TestClient, path: str, headers: dict[str, str]
) -> None:
    response = client.get(path, headers=headers)
    assert response.status_code == 401
    assert response.json() == EXPIRED


def test_a_path_that_does_not_exist_is_404_for_a_session(api: TestClient) -> None:
    response = api.get(f"{V}/nothing-here")
    assert response.status_code == 404
    assert response.json() == [
        {"message": "The requested resource does not exist", "errorCode": "NOT_FOUND"}
    ]


def test_the_open_paths_need_no_session(client: TestClient) -> None:
    assert client.get("/services/data").status_code == 200
    assert client.options(f"{V}/nothing-here").status_code == 404  # a preflight has none
