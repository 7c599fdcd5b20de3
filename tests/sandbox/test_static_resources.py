"""Static resources belong to the sandbox that created them, like any record: absent from
other sandboxes, the server's own org and new sandboxes of the same template; gone when the
sandbox is reset; kept across a restart. Through the Tooling API and the REST API alike."""

from __future__ import annotations

import base64
from typing import Any

from fastapi.testclient import TestClient

from app.main import create_app
from tests.conftest import ADMIN_HEADERS, API, login, make_settings
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import CONTROL, as_token, create

TOOLING = f"{API}/tooling"
CONTENT = b"PK\x05\x06" + bytes(18)  # an empty zip
FIND = "SELECT Id, Name FROM StaticResource WHERE Name = '{name}'"


def new_sandbox(client: TestClient, sandbox_id: str) -> TestClient:
    return as_token(client, str(create(client, id=sandbox_id)["access_token"]))


def create_resource(sf: TestClient, name: str) -> str:
    body = {
        "Name": name,
        "ContentType": "application/zip",
        "CacheControl": "Public",
        "Body": base64.b64encode(CONTENT).decode(),
    }
    response = sf.post(f"{TOOLING}/sobjects/StaticResource", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def found(sf: TestClient, name: str) -> list[dict[str, Any]]:
    """The resources of that name the Tooling API and the REST API find (the same ones)."""
    soql = FIND.format(name=name)
    tooling = sf.get(f"{TOOLING}/query", params={"q": soql}).json()["records"]
    rest = sf.get(f"{API}/query", params={"q": soql}).json()["records"]
    assert [r["Id"] for r in tooling] == [r["Id"] for r in rest]
    return list(tooling)


def test_a_resource_lives_in_its_sandbox_only(client: TestClient) -> None:
    sf_a = new_sandbox(client, "sr-a")
    sf_b = new_sandbox(client, "sr-b")
    record_id = create_resource(sf_a, "Sr_Isolated")
    assert [r["Id"] for r in found(sf_a, "Sr_Isolated")] == [record_id]
    assert found(sf_b, "Sr_Isolated") == []
    assert found(new_sandbox(client, "sr-later"), "Sr_Isolated") == []
    assert found(as_token(client, login(client)), "Sr_Isolated") == []
    for sf in (sf_b, as_token(client, login(client))):
        missing = sf.get(f"{TOOLING}/sobjects/StaticResource/{record_id}/Body")
        assert missing.status_code == 404
    # Another sandbox may take the same name: it is unique per org, and each is an org.
    create_resource(sf_b, "Sr_Isolated")


def test_a_reset_takes_the_sandbox_resources_away(client: TestClient) -> None:
    sf = new_sandbox(client, "sr-reset")
    record_id = create_resource(sf, "Sr_Reset")
    assert client.post(f"{CONTROL}/sr-reset/reset").status_code == 200
    assert found(sf, "Sr_Reset") == []
    gone = sf.get(f"{TOOLING}/sobjects/StaticResource/{record_id}")
    assert gone.status_code == 404
    assert gone.json() == [
        {"message": "The requested resource does not exist", "errorCode": "NOT_FOUND"}
    ]
    # The replayed episode gets the same id back, as any record's.
    assert create_resource(sf, "Sr_Reset") == record_id


def test_a_resource_survives_a_restart(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> None:
    url = database_factory.new_url(template=sandbox_ready_template)
    settings = make_settings(url, database_factory.workdir)
    with TestClient(
        create_app(settings), base_url="https://testserver", headers=ADMIN_HEADERS
    ) as first:
        token = str(create(first, id="sr-restart")["access_token"])
        record_id = create_resource(as_token(first, token), "Sr_Restart")
    with TestClient(
        create_app(settings), base_url="https://testserver", headers=ADMIN_HEADERS
    ) as second:
        sf = as_token(second, token)
        assert [r["Id"] for r in found(sf, "Sr_Restart")] == [record_id]
        blob = sf.get(f"{TOOLING}/sobjects/StaticResource/{record_id}/Body")
        assert (blob.status_code, blob.content) == (200, CONTENT)
