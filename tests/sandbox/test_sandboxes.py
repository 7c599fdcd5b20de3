"""Sandboxes through the control plane: isolation by token, reset, diff, call log, snapshots."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.api.state import AppState
from app.seeding.pipeline import stored_content_hash
from tests.conftest import API, open_client
from tests.databases import DatabaseFactory

CONTROL = "/__localforce/sandboxes"
TOUCHED = ["Contact", "Case", "EmailMessage", "Issue__c"]


def create(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(CONTROL, json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def as_token(client: TestClient, token: str) -> TestClient:
    return TestClient(
        client.app, base_url=str(client.base_url), headers={"Authorization": f"Bearer {token}"}
    )


def state_of(client: TestClient) -> AppState:
    state: AppState = client.app.state.localforce  # type: ignore[attr-defined]
    return state


def touched_hash(client: TestClient, sandbox_id: str) -> str:
    sandbox = state_of(client).sandboxes.get(sandbox_id)
    with sandbox.engine.connect() as conn:
        return stored_content_hash(
            conn, sandbox.schema.registry, sandbox.schema.tables, only=TOUCHED
        )


def episode(sf: TestClient, tag: str) -> dict[str, str]:
    """A small agent episode: create, update, delete with a cascade, and query."""
    contact = sf.post(f"{API}/sobjects/Contact", json={"LastName": f"Zq {tag}"}).json()["id"]
    assert (
        sf.patch(f"{API}/sobjects/Contact/{contact}", json={"FirstName": "Ada"}).status_code == 204
    )
    case = sf.post(f"{API}/sobjects/Case", json={"Subject": f"Zq {tag}", "ContactId": contact})
    case_id = case.json()["id"]
    email = sf.post(f"{API}/sobjects/EmailMessage", json={"ParentId": case_id, "Subject": tag})
    issue = sf.post(f"{API}/sobjects/Issue__c", json={"Name": f"Zq {tag}"}).json()["id"]
    assert sf.delete(f"{API}/sobjects/Case/{case_id}").status_code == 204
    return {"contact": contact, "case": case_id, "email": email.json()["id"], "issue": issue}


def names(sf: TestClient, soql: str) -> list[str]:
    response = sf.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    return [r["Name"] for r in response.json()["records"]]


def test_create_answers_the_sandbox_and_a_working_token(client: TestClient) -> None:
    body = create(client, id="shape-check", clock="2024-06-01T09:00:00Z")
    assert body["id"] == "shape-check"
    assert body["org"] == "original" and body["seed"] == 42
    assert body["instance_url"] == "https://testserver"
    assert body["clock"] == {
        "mode": "pinned",
        "start": "2024-06-01T09:00:00Z",
        "now": "2024-06-01T09:00:00Z",
    }
    assert body["username"].endswith(".shape-check")
    sf = as_token(client, body["access_token"])
    assert sf.get(f"{API}/limits/recordCount", params={"sObjects": "Case"}).json() == {
        "sObjects": [{"count": 977, "name": "Case"}]
    }
    listed = client.get(CONTROL).json()["sandboxes"]
    assert {"default", "shape-check"} <= {s["id"] for s in listed}
    assert client.get(f"{CONTROL}/shape-check").json()["id"] == "shape-check"


def test_a_token_reaches_only_its_sandbox(client: TestClient, api: TestClient) -> None:
    first = as_token(client, create(client)["access_token"])
    second = as_token(client, create(client)["access_token"])
    made = episode(first, "isolated")
    soql = "SELECT Name FROM Contact WHERE LastName LIKE 'Zq%'"
    assert names(first, soql) == ["Ada Zq isolated"]
    assert names(second, soql) == []
    assert names(api, soql) == []
    response = second.get(f"{API}/sobjects/Contact/{made['contact']}")
    assert response.status_code == 404


def test_reset_undoes_the_episode_and_replays_identically(client: TestClient) -> None:
    sandbox = create(client, clock="2024-06-01T09:00:00Z")
    sf = as_token(client, sandbox["access_token"])
    baseline = touched_hash(client, sandbox["id"])
    first_run = episode(sf, "replay")
    first_diff = client.get(f"{CONTROL}/{sandbox['id']}/diff").json()
    first_rows = sf.get(f"{API}/sobjects/Contact/{first_run['contact']}").json()
    reset = client.post(f"{CONTROL}/{sandbox['id']}/reset").json()
    assert reset["id"] == sandbox["id"] and reset["undoneWrites"] > 0
    assert touched_hash(client, sandbox["id"]) == baseline
    assert client.get(f"{CONTROL}/{sandbox['id']}/diff").json() == {
        "created": [],
        "updated": [],
        "deleted": [],
    }
    second_run = episode(sf, "replay")
    assert second_run == first_run  # the same ids, handed out again
    assert client.get(f"{CONTROL}/{sandbox['id']}/diff").json() == first_diff
    assert sf.get(f"{API}/sobjects/Contact/{second_run['contact']}").json() == first_rows
    assert first_rows["CreatedDate"] == "2024-06-01T09:00:00.000+0000"


def test_diff_lists_created_updated_and_deleted_records(client: TestClient) -> None:
    sandbox = create(client, clock="2024-06-01T09:00:00Z")
    sf = as_token(client, sandbox["access_token"])
    seeded = sf.get(f"{API}/query", params={"q": "SELECT Id, Subject FROM Case LIMIT 2"}).json()
    updated_case, deleted_case = (r["Id"] for r in seeded["records"])
    issue = sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Zq Diff"}).json()["id"]
    patched = sf.patch(f"{API}/sobjects/Case/{updated_case}", json={"Subject": "Zq changed"})
    assert patched.status_code == 204, patched.text
    assert sf.delete(f"{API}/sobjects/Case/{deleted_case}").status_code == 204
    diff = client.get(f"{CONTROL}/{sandbox['id']}/diff").json()
    assert [(c["type"], c["id"]) for c in diff["created"]] == [("Issue__c", issue)]
    assert diff["created"][0]["fields"]["Name"] == "Zq Diff"
    assert diff["updated"] == [
        {
            "type": "Case",
            "id": updated_case,
            "changes": {
                "Subject": {"before": seeded["records"][0]["Subject"], "after": "Zq changed"}
            },
        }
    ]
    assert {"type": "Case", "id": deleted_case} in diff["deleted"]


def test_the_call_log_records_each_call(client: TestClient) -> None:
    sandbox = create(client)
    sf = as_token(client, sandbox["access_token"])
    sf.get(f"{API}/query", params={"q": "SELECT Id FROM Issue__c"})
    sf.get(f"{API}/sobjects/Nope/describe")
    calls = client.get(f"{CONTROL}/{sandbox['id']}/log").json()["calls"]
    assert [(c["method"], c["path"], c["status"]) for c in calls] == [
        ("GET", f"{API}/query", 200),
        ("GET", f"{API}/sobjects/Nope/describe", 404),
    ]
    assert calls[0]["query"] == "SELECT Id FROM Issue__c"
    assert calls[0]["durationMs"] > 0 and calls[0]["time"].endswith("Z")
    lines = client.get(f"{CONTROL}/{sandbox['id']}/log", params={"format": "jsonl"})
    assert lines.headers["content-type"].startswith("application/x-ndjson")
    assert len(lines.text.splitlines()) == 2
    client.post(f"{CONTROL}/{sandbox['id']}/reset")
    assert client.get(f"{CONTROL}/{sandbox['id']}/log").json() == {"calls": []}


def test_snapshots_restore_a_saved_state(client: TestClient) -> None:
    sandbox = create(client)
    sf = as_token(client, sandbox["access_token"])
    soql = "SELECT Name FROM Issue__c WHERE Name LIKE 'Zq%'"
    sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Zq kept"})
    saved = client.post(f"{CONTROL}/{sandbox['id']}/snapshots", json={"name": "checkpoint"})
    assert saved.status_code == 201
    sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Zq lost"})
    assert sorted(names(sf, soql)) == ["Zq kept", "Zq lost"]
    restored = client.post(f"{CONTROL}/{sandbox['id']}/snapshots/checkpoint/restore")
    assert restored.status_code == 200, restored.text
    assert names(sf, soql) == ["Zq kept"]
    missing = client.post(f"{CONTROL}/{sandbox['id']}/snapshots/nope/restore")
    assert missing.status_code == 404
    assert missing.json()[0]["errorCode"] == "NOT_FOUND"


def test_a_snapshot_survives_reset_and_restores_updates_deletes_and_ids(
    client: TestClient,
) -> None:
    sandbox = create(client)
    sid = sandbox["id"]
    sf = as_token(client, sandbox["access_token"])
    seeded = touched_hash(client, sid)
    ids = episode(sf, "snap")
    saved = client.post(f"{CONTROL}/{sid}/snapshots", json={"name": "after-episode"})
    assert saved.status_code == 201
    at_snapshot = touched_hash(client, sid)
    diff_at_snapshot = client.get(f"{CONTROL}/{sid}/diff").json()

    sf.patch(f"{API}/sobjects/Contact/{ids['contact']}", json={"FirstName": "Changed"})
    sf.delete(f"{API}/sobjects/Issue__c/{ids['issue']}")
    later = sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Zq later"}).json()["id"]
    assert client.post(f"{CONTROL}/{sid}/reset").status_code == 200
    assert touched_hash(client, sid) == seeded

    # Restoring after a reset brings back the snapshot's state, and its diff, exactly.
    restored = client.post(f"{CONTROL}/{sid}/snapshots/after-episode/restore")
    assert restored.status_code == 200, restored.text
    assert touched_hash(client, sid) == at_snapshot
    assert client.get(f"{CONTROL}/{sid}/diff").json() == diff_at_snapshot
    # The id sequences are restored too: the next record gets the id it got after the snapshot.
    again = sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Zq later"}).json()["id"]
    assert again == later
    assert client.get(f"{CONTROL}/{sid}").json()["snapshots"] == ["after-episode"]
    assert client.post(f"{CONTROL}/{sid}/reset").status_code == 200
    assert touched_hash(client, sid) == seeded


def test_deleting_a_sandbox_ends_its_tokens(client: TestClient) -> None:
    sandbox = create(client)
    sf = as_token(client, sandbox["access_token"])
    assert client.delete(f"{CONTROL}/{sandbox['id']}").status_code == 204
    response = sf.get(f"{API}/sobjects")
    assert response.status_code == 401
    assert response.json()[0]["errorCode"] == "INVALID_SESSION_ID"
    assert client.get(f"{CONTROL}/{sandbox['id']}").status_code == 404
    default = client.delete(f"{CONTROL}/default")
    assert default.status_code == 400
    assert default.json()[0]["errorCode"] == "INVALID_OPERATION"


def test_login_picks_a_sandbox_by_username_suffix(client: TestClient) -> None:
    password = create(client, id="ep7")["password"]
    token = client.post(
        "/services/oauth2/token",
        data={"grant_type": "password", "username": "agent@shop.example.ep7", "password": password},
    ).json()["access_token"]
    sf = as_token(client, token)
    sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Zq suffix"})
    assert client.get(f"{CONTROL}/ep7/diff").json()["created"][0]["fields"]["Name"] == "Zq suffix"


def test_a_locator_does_not_cross_sandboxes(client: TestClient, api: TestClient) -> None:
    body = api.get(f"{API}/query", params={"q": "SELECT Id FROM PricebookEntry"}).json()
    other = as_token(client, create(client)["access_token"])
    response = other.get(body["nextRecordsUrl"])
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_QUERY_LOCATOR"


def test_bad_control_plane_input_is_a_salesforce_error(client: TestClient) -> None:
    for body in ({"id": "has spaces"}, {"org": "nope"}, {"clock": "yesterday"}, {"x": 1}):
        response = client.post(CONTROL, json=body)
        assert response.status_code == 400, body
        assert response.json()[0]["errorCode"] == "INVALID_INPUT"
    create(client, id="twice")
    again = client.post(CONTROL, json={"id": "twice"})
    assert again.status_code == 409
    assert again.json() == [
        {"message": "A sandbox with id twice already exists", "errorCode": "DUPLICATE_VALUE"}
    ]
    assert client.post(CONTROL, json={"id": ""}).json()[0]["errorCode"] == "INVALID_INPUT"
    assert client.post(CONTROL, json={"clock": 0}).json()[0]["errorCode"] == "INVALID_INPUT"


@pytest.fixture(scope="module")
def guarded(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[TestClient]:
    yield from open_client(
        database_factory,
        sandbox_ready_template,
        headers={},  # the test sends the key itself
        admin_key="k3y",
        max_sandboxes=2,
        sandbox_pool_size=0,
    )


def test_admin_key_and_sandbox_limit(guarded: TestClient) -> None:
    refused = guarded.post(CONTROL)
    assert refused.status_code == 401
    assert refused.json()[0]["errorCode"] == "INVALID_AUTH_HEADER"
    made = guarded.post(CONTROL, headers={"Authorization": "Bearer k3y"})
    assert made.status_code == 201
    over = guarded.post(CONTROL, headers={"X-Localforce-Admin-Key": "k3y"})
    assert over.status_code == 403
    assert over.json() == [
        {
            "message": "The limit of 2 live sandboxes is reached: delete one, or wait for idle "
            "ones to expire.",
            "errorCode": "REQUEST_LIMIT_EXCEEDED",
        }
    ]


def test_the_control_plane_is_in_the_openapi_schema(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {
        "/__localforce/sandboxes",
        "/__localforce/sandboxes/{sandbox_id}",
        "/__localforce/sandboxes/{sandbox_id}/reset",
        "/__localforce/sandboxes/{sandbox_id}/diff",
        "/__localforce/sandboxes/{sandbox_id}/log",
        "/__localforce/sandboxes/{sandbox_id}/snapshots",
        "/__localforce/sandboxes/{sandbox_id}/snapshots/{name}/restore",
    } <= set(paths)
    assert "post" in paths["/__localforce/sandboxes"]


def test_a_sandbox_can_hold_another_org(client: TestClient) -> None:
    """One server, several orgs: a sandbox of the B2B org beside the default original org."""
    body = create(client, id="pro-b2b", org="b2b")
    assert body["org"] == "b2b"
    sf = as_token(client, body["access_token"])
    counts = sf.get(f"{API}/limits/recordCount", params={"sObjects": "Opportunity,Case"}).json()
    assert counts == {
        "sObjects": [{"count": 1170, "name": "Opportunity"}, {"count": 153, "name": "Case"}]
    }
    described = sf.get(f"{API}/sobjects/Opportunity/describe").json()
    assert "ContractID__c" in {field["name"] for field in described["fields"]}
    default = as_token(client, create(client, id="beside-b2b")["access_token"])
    # The original org has the standard Opportunity too, but none of its records and none of
    # the Pro org's custom fields.
    response = default.get(f"{API}/query", params={"q": "SELECT Id FROM Opportunity"})
    assert response.json() == {"totalSize": 0, "done": True, "records": []}
    response = default.get(f"{API}/query", params={"q": "SELECT ContractID__c FROM Opportunity"})
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_FIELD"
    assert client.delete(f"{CONTROL}/pro-b2b").status_code == 204
