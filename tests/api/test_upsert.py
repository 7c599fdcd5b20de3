"""Upsert, retrieve and delete by external id, and the /updated and /deleted windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import API

PRODUCTS = f"{API}/sobjects/Product2"


def error(response: Any) -> dict[str, Any]:
    body = response.json()
    assert isinstance(body, list) and len(body) == 1, body
    return dict(body[0])


def count(api: TestClient, soql: str) -> int:
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    return int(response.json()["totalSize"])


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S+00:00")


def test_upsert_creates_then_updates(api: TestClient) -> None:
    created = api.patch(f"{PRODUCTS}/External_ID__c/UP-1", json={"Name": "Upserted"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body == {"id": body["id"], "success": True, "errors": [], "created": True}
    assert body["id"].startswith("01t") and len(body["id"]) == 18
    assert created.headers["location"] == f"{PRODUCTS}/{body['id']}"

    updated = api.patch(f"{PRODUCTS}/external_id__c/up-1", json={"Name": "Renamed"})
    assert updated.status_code == 200, updated.text
    assert updated.json() == {"id": body["id"], "success": True, "errors": [], "created": False}

    record = api.get(f"{PRODUCTS}/External_ID__c/UP-1").json()
    assert record["Id"] == body["id"]
    assert record["Name"] == "Renamed"
    assert record["External_ID__c"] == "UP-1"
    assert record["attributes"] == {"type": "Product2", "url": f"{PRODUCTS}/{body['id']}"}
    assert count(api, "SELECT Id FROM Product2 WHERE External_ID__c = 'UP-1'") == 1


def test_upsert_before_v46_answers_204(api: TestClient) -> None:
    api.patch(f"{PRODUCTS}/External_ID__c/UP-OLD", json={"Name": "Old"})
    response = api.patch(
        "/services/data/v45.0/sobjects/Product2/External_ID__c/UP-OLD", json={"Name": "Older"}
    )
    assert response.status_code == 204
    assert response.content == b""


def test_upsert_with_several_matches_answers_300(api: TestClient) -> None:
    ids = []
    for name in ("Twin A", "Twin B"):
        response = api.post(f"{PRODUCTS}/", json={"Name": name, "External_ID__c": "TWIN"})
        assert response.status_code == 201
        ids.append(response.json()["id"])
    response = api.patch(f"{PRODUCTS}/External_ID__c/TWIN", json={"Name": "Which"})
    assert response.status_code == 300
    assert response.json() == [f"{PRODUCTS}/{record_id}" for record_id in sorted(ids)]
    assert api.get(f"{PRODUCTS}/External_ID__c/TWIN").status_code == 300
    assert api.delete(f"{PRODUCTS}/External_ID__c/TWIN").status_code == 300
    assert count(api, "SELECT Id FROM Product2 WHERE Name = 'Which'") == 0


def test_unknown_external_id_field_is_404(api: TestClient) -> None:
    for response in (
        api.patch(f"{PRODUCTS}/Namez/x", json={"Name": "x"}),
        api.get(f"{PRODUCTS}/Namez/x"),
        api.delete(f"{PRODUCTS}/Namez/x"),
        # A field that exists but is not an external id.
        api.patch(f"{PRODUCTS}/ProductCode/x", json={"Name": "x"}),
    ):
        assert response.status_code == 404
        body = error(response)
        assert body["errorCode"] == "NOT_FOUND"
        assert body["message"].startswith(
            "Provided external ID field does not exist or is not accessible: "
        )


def test_upsert_validation_error_writes_nothing(api: TestClient) -> None:
    response = api.patch(f"{PRODUCTS}/External_ID__c/UP-BAD", json={"Family": "Nope"})
    assert response.status_code == 400
    assert error(response)["errorCode"] in {
        "REQUIRED_FIELD_MISSING",
        "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
    }
    assert count(api, "SELECT Id FROM Product2 WHERE External_ID__c = 'UP-BAD'") == 0


def test_upsert_body_may_not_change_the_external_id(api: TestClient) -> None:
    response = api.patch(
        f"{PRODUCTS}/External_ID__c/UP-2", json={"Name": "x", "External_ID__c": "OTHER"}
    )
    assert response.status_code == 400
    assert error(response)["fields"] == ["External_ID__c"]
    same = api.patch(
        f"{PRODUCTS}/External_ID__c/UP-2", json={"Name": "x", "External_ID__c": "UP-2"}
    )
    assert same.status_code == 201


def test_update_only_does_not_create(api: TestClient) -> None:
    response = api.patch(f"{PRODUCTS}/External_ID__c/UP-NONE?updateOnly=true", json={"Name": "x"})
    assert response.status_code == 404
    assert error(response)["errorCode"] == "NOT_FOUND"


def test_upsert_by_id(api: TestClient) -> None:
    record_id = api.patch(f"{PRODUCTS}/External_ID__c/UP-ID", json={"Name": "ById"}).json()["id"]
    response = api.patch(f"{PRODUCTS}/Id/{record_id}", json={"Name": "ById2"})
    assert response.status_code == 200
    assert response.json()["created"] is False
    assert api.get(f"{PRODUCTS}/Id/{record_id}").json()["Name"] == "ById2"
    created = api.post(f"{PRODUCTS}/Id", json={"Name": "Via Id"})
    assert created.status_code == 201
    assert created.json()["success"] is True


def test_get_and_delete_by_external_id(api: TestClient) -> None:
    record_id = api.patch(f"{PRODUCTS}/External_ID__c/UP-DEL", json={"Name": "Gone"}).json()["id"]
    record = api.get(f"{PRODUCTS}/External_ID__c/UP-DEL?fields=Name").json()
    assert list(record) == ["attributes", "Name", "Id"]
    assert api.delete(f"{PRODUCTS}/External_ID__c/UP-DEL").status_code == 204
    missing = api.get(f"{PRODUCTS}/External_ID__c/UP-DEL")
    assert missing.status_code == 404
    assert error(missing) == {
        "errorCode": "NOT_FOUND",
        "message": "The requested resource does not exist",
    }
    assert api.get(f"{PRODUCTS}/{record_id}").status_code == 404


def test_updated_and_deleted_windows(api: TestClient) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    start, end = iso(now - timedelta(minutes=5)), iso(now + timedelta(minutes=5))
    kept = api.post(f"{API}/sobjects/Account/", json={"Name": "Window kept"}).json()["id"]
    dropped = api.post(f"{API}/sobjects/Account/", json={"Name": "Window dropped"}).json()["id"]
    assert api.delete(f"{API}/sobjects/Account/{dropped}").status_code == 204

    updated = api.get(f"{API}/sobjects/Account/updated/", params={"start": start, "end": end})
    assert updated.status_code == 200, updated.text
    body = updated.json()
    assert list(body) == ["ids", "latestDateCovered"]
    assert kept in body["ids"] and dropped not in body["ids"]
    assert body["latestDateCovered"].endswith(":00.000+0000")

    deleted = api.get(f"{API}/sobjects/Account/deleted/", params={"start": start, "end": end})
    assert deleted.status_code == 200, deleted.text
    body = deleted.json()
    assert list(body) == ["deletedRecords", "earliestDateAvailable", "latestDateCovered"]
    entry = next(item for item in body["deletedRecords"] if item["id"] == dropped)
    assert list(entry) == ["id", "deletedDate"]
    assert entry["deletedDate"].endswith("+0000")
    assert kept not in [item["id"] for item in body["deletedRecords"]]

    # simple-salesforce percent-encodes ':' and '+'.
    encoded = start.replace(":", "%3A").replace("+", "%2B")
    raw = api.get(f"{API}/sobjects/Account/updated/?start={encoded}&end={end.replace('+', '%2B')}")
    assert raw.status_code == 200
    assert kept in raw.json()["ids"]


def test_window_errors(api: TestClient) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    old = api.get(
        f"{API}/sobjects/Account/updated",
        params={"start": iso(now - timedelta(days=31)), "end": iso(now)},
    )
    assert old.status_code == 400
    assert error(old)["errorCode"] == "INVALID_REPLICATION_DATE"
    backwards = api.get(
        f"{API}/sobjects/Account/deleted",
        params={"start": iso(now), "end": iso(now - timedelta(hours=1))},
    )
    assert backwards.status_code == 400
    assert error(backwards) == {
        "errorCode": "INVALID_REPLICATION_DATE",
        "message": "startDate must chronologically precede endDate",
    }
    missing = api.get(f"{API}/sobjects/Account/updated")
    assert missing.status_code == 400
    unknown = api.get(
        f"{API}/sobjects/Nope__c/updated", params={"start": iso(now), "end": iso(now)}
    )
    assert unknown.status_code == 404


def test_upsert_by_a_standard_id_lookup_field(api: TestClient) -> None:
    """Contact.Email is idLookup in a real org's describe (not an external id): an upsert
    finds the contact by it; a field that is neither (Title) is not an upsert key."""
    contacts = f"{API}/sobjects/Contact"
    created = api.patch(f"{contacts}/Email/upsert.lookup@example.com", json={"LastName": "Look"})
    assert created.status_code == 201, created.text
    contact_id = created.json()["id"]
    assert created.json() == {"id": contact_id, "success": True, "errors": [], "created": True}
    updated = api.patch(f"{contacts}/Email/Upsert.Lookup@example.com", json={"LastName": "Up"})
    assert updated.status_code == 200, updated.text
    assert updated.json() == {"id": contact_id, "success": True, "errors": [], "created": False}
    found = api.get(f"{contacts}/Email/upsert.lookup@example.com").json()
    assert (found["Id"], found["LastName"]) == (contact_id, "Up")
    refused = api.patch(f"{contacts}/Title/Boss", json={"LastName": "x"})
    assert refused.status_code == 404
    assert error(refused) == {
        "errorCode": "NOT_FOUND",
        "message": "Provided external ID field does not exist or is not accessible: Title",
    }


def test_upsert_by_a_case_number_updates_that_case(api: TestClient) -> None:
    made = api.post(f"{API}/sobjects/Case", json={"Subject": "Upsert by number"})
    assert made.status_code == 201, made.text
    case_id = made.json()["id"]
    number = api.get(f"{API}/sobjects/Case/{case_id}").json()["CaseNumber"]
    response = api.patch(f"{API}/sobjects/Case/CaseNumber/{number}", json={"Priority": "High"})
    assert response.status_code == 200, response.text
    assert response.json() == {"id": case_id, "success": True, "errors": [], "created": False}
    assert api.get(f"{API}/sobjects/Case/{case_id}").json()["Priority"] == "High"


def test_collections_upsert_by_a_standard_id_lookup_field(api: TestClient) -> None:
    records = [
        {"attributes": {"type": "Contact"}, "Email": "batch.lookup@example.com", "LastName": "A"},
        {"attributes": {"type": "Contact"}, "Email": "batch.lookup@example.com", "LastName": "B"},
    ]
    first = api.patch(
        f"{API}/composite/sobjects/Contact/Email", json={"allOrNone": False, "records": records[:1]}
    )
    assert first.status_code == 200, first.text
    [made] = first.json()
    assert (made["success"], made["created"]) == (True, True)
    again = api.patch(
        f"{API}/composite/sobjects/Contact/Email", json={"allOrNone": False, "records": records[1:]}
    )
    [updated] = again.json()
    assert updated == {"id": made["id"], "success": True, "errors": [], "created": False}
    assert count(api, "SELECT Id FROM Contact WHERE Email = 'batch.lookup@example.com'") == 1
