"""Logins into sandboxes: a username's suffix names the sandbox, its own password (returned
once, at its creation) lets one in; server-made ids cannot be guessed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from xml.dom import minidom

import pytest
from fastapi.testclient import TestClient

from app.sandbox.model import SANDBOX_ID, new_sandbox_id
from tests.api.test_auth import soap_login, tag
from tests.conftest import API, open_client
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import CONTROL, as_token, create

REFUSED = {"error": "invalid_grant", "error_description": "authentication failure"}
SERVER_ID = re.compile(r"^sb[0-9a-f]{24}$")


def oauth_login(client: TestClient, username: str, password: str) -> tuple[int, dict[str, str]]:
    response = client.post(
        "/services/oauth2/token",
        data={"grant_type": "password", "username": username, "password": password},
    )
    return response.status_code, dict(response.json())


def soap_refused(client: TestClient, username: str, password: str) -> bool:
    response = soap_login(client, username, password)
    document = minidom.parseString(response.text)
    return (
        response.status_code == 500
        and tag(document, "faultcode") == "sf:INVALID_LOGIN"
        and tag(document, "sf:exceptionMessage")
        == "Invalid username, password, security token; or user locked out."
    )


def new_issue(sf: TestClient, name: str) -> None:
    assert sf.post(f"{API}/sobjects/Issue__c", json={"Name": name}).status_code == 201


def created_names(client: TestClient, sandbox_id: str) -> list[str]:
    diff = client.get(f"{CONTROL}/{sandbox_id}/diff").json()
    return [record["fields"]["Name"] for record in diff["created"]]


def test_a_sandbox_login_with_its_password_reaches_it_only(client: TestClient) -> None:
    mine, other = create(client, id="login-mine"), create(client, id="login-other")
    assert mine["username"].endswith(".login-mine")
    status, body = oauth_login(client, mine["username"], mine["password"])
    assert status == 200, body
    new_issue(as_token(client, body["access_token"]), "Zq by OAuth")
    response = soap_login(client, "someone@example.com.login-mine", mine["password"])
    assert response.status_code == 200, response.text
    session_id = tag(minidom.parseString(response.text), "sessionId")
    new_issue(as_token(client, session_id), "Zq by SOAP")
    assert created_names(client, "login-mine") == ["Zq by OAuth", "Zq by SOAP"]
    assert created_names(client, "login-other") == []
    assert created_names(client, "default") == []
    assert other["password"] != mine["password"]


def test_any_other_password_is_refused_as_a_failed_login(client: TestClient) -> None:
    create(client, id="login-locked")
    another_sandboxs = create(client)["password"]
    username = "agent@example.com.login-locked"
    for password in ("wrong", "", "x", another_sandboxs):
        assert oauth_login(client, username, password) == (400, REFUSED), password
        assert soap_refused(client, username, password), password
    no_password = client.post(
        "/services/oauth2/token", data={"grant_type": "password", "username": username}
    )
    assert (no_password.status_code, no_password.json()) == (400, REFUSED)


def test_an_operator_chosen_id_is_not_reached_by_guessing_it(client: TestClient) -> None:
    made = create(client, id="ep-1")
    # The default org's open login takes any password; the suffix does not carry that over.
    assert oauth_login(client, "agent@example.com", "anything")[0] == 200
    for guess in ("anything", "password", "ep-1", made["access_token"]):
        assert oauth_login(client, "agent@example.com.ep-1", guess) == (400, REFUSED)
        assert soap_refused(client, "agent@example.com.ep-1", guess)
    assert oauth_login(client, "agent@example.com.ep-1", made["password"])[0] == 200


def test_a_suffix_naming_no_sandbox_logs_in_to_the_default_org(client: TestClient) -> None:
    status, body = oauth_login(client, "agent@example.com.nosuchbox", "x")
    assert status == 200, body
    sf = as_token(client, body["access_token"])
    assert sf.get(f"{API}/limits").status_code == 200
    assert client.get(f"{CONTROL}/nosuchbox").status_code == 404


def test_the_password_is_shown_at_creation_only(client: TestClient) -> None:
    made = create(client)
    assert len(made["password"]) >= 24
    shown = [client.get(CONTROL), client.get(f"{CONTROL}/{made['id']}")]
    for response in shown:
        assert response.status_code == 200
        assert made["password"] not in response.text
        assert '"password"' not in response.text


def test_ids_the_server_chooses_are_unguessable(client: TestClient) -> None:
    assert SERVER_ID.match(create(client)["id"])
    ids = [new_sandbox_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert all(SERVER_ID.match(made) and SANDBOX_ID.match(made) for made in ids)


@pytest.fixture(scope="module")
def strict(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[TestClient]:
    yield from open_client(
        database_factory,
        sandbox_ready_template,
        username="admin@localforce.test",
        password="s3cret",
    )


def test_strict_credentials_reach_the_default_org_only(strict: TestClient) -> None:
    made = create(strict, id="strict-box")
    assert oauth_login(strict, "admin@localforce.test", "s3cret")[0] == 200
    assert oauth_login(strict, "admin@localforce.test.strict-box", "s3cret") == (400, REFUSED)
    assert soap_refused(strict, "admin@localforce.test.strict-box", "s3cret")
    status, body = oauth_login(strict, "admin@localforce.test.strict-box", made["password"])
    assert status == 200, body
    new_issue(as_token(strict, body["access_token"]), "Zq strict")
    assert created_names(strict, "strict-box") == ["Zq strict"]
    # The sandbox's password opens that sandbox, not the default org.
    assert oauth_login(strict, "admin@localforce.test", made["password"]) == (400, REFUSED)
