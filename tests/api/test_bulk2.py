"""Bulk API 2.0: ingest and query jobs through their states, their CSV results, their errors,
a sandbox reset undoing an ingest job's writes, and jobs outliving the server."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from tests.conftest import API, login, make_settings
from tests.databases import DatabaseFactory

JOBS = f"{API}/jobs"
INGEST_KEYS = [
    "id", "operation", "object", "createdById", "createdDate", "systemModstamp", "state",
    "concurrencyMode", "contentType", "apiVersion", "contentUrl", "lineEnding", "columnDelimiter",
]  # fmt: skip
FINISHED = {"JobComplete", "Failed", "Aborted"}


def create(api: TestClient, kind: str, **spec: Any) -> dict[str, Any]:
    response = api.post(f"{JOBS}/{kind}", json=spec)
    assert response.status_code == 200, response.text
    return dict(response.json())


def upload(api: TestClient, job_id: str, data: str) -> None:
    response = api.put(
        f"{JOBS}/ingest/{job_id}/batches",
        content=data.encode(),
        headers={"Content-Type": "text/csv"},
    )
    assert (response.status_code, response.content) == (201, b"")


def close(api: TestClient, job_id: str) -> dict[str, Any]:
    response = api.patch(f"{JOBS}/ingest/{job_id}", json={"state": "UploadComplete"})
    assert response.status_code == 200, response.text
    return dict(response.json())


def wait(api: TestClient, kind: str, job_id: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        info = api.get(f"{JOBS}/{kind}/{job_id}").json()
        if info["state"] in FINISHED or time.monotonic() > deadline:
            return dict(info)
        time.sleep(0.05)


def ingest(api: TestClient, data: str, **spec: Any) -> dict[str, Any]:
    job = create(api, "ingest", contentType="CSV", **spec)
    upload(api, job["id"], data)
    close(api, job["id"])
    return wait(api, "ingest", job["id"])


def rows(api: TestClient, path: str) -> list[dict[str, str]]:
    response = api.get(f"{JOBS}/{path}")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.text)))


def soql(api: TestClient, query: str) -> list[dict[str, Any]]:
    return list(api.get(f"{API}/query", params={"q": query}).json()["records"])


def test_an_ingest_job_goes_through_its_states(api: TestClient) -> None:
    job = create(api, "ingest", object="Account", operation="insert", contentType="CSV")
    assert list(job) == INGEST_KEYS
    assert (job["state"], job["apiVersion"], job["concurrencyMode"]) == ("Open", 59.0, "Parallel")
    assert job["id"].startswith("750") and len(job["id"]) == 18
    assert job["contentUrl"] == f"services/data/v59.0/jobs/ingest/{job['id']}/batches"
    upload(api, job["id"], "Name,Industry\nBulk Alpha,Retail\nBulk Beta,Banking\n,Retail\n")
    closed = close(api, job["id"])
    assert closed["state"] == "UploadComplete" and "contentUrl" not in closed
    done = wait(api, "ingest", job["id"])
    assert done["state"] == "JobComplete"
    assert (done["numberRecordsProcessed"], done["numberRecordsFailed"]) == (3, 1)
    assert (done["jobType"], done["retries"], done["apexProcessingTime"]) == ("V2Ingest", 0, 0)

    succeeded = rows(api, f"ingest/{job['id']}/successfulResults")
    assert [(r["sf__Created"], r["Name"], r["Industry"]) for r in succeeded] == [
        ("true", "Bulk Alpha", "Retail"),
        ("true", "Bulk Beta", "Banking"),
    ]
    stored = soql(api, "SELECT Id, Name FROM Account WHERE Name LIKE 'Bulk %' ORDER BY Name")
    assert [(r["Id"], r["Name"]) for r in stored] == [(r["sf__Id"], r["Name"]) for r in succeeded]
    [failure] = rows(api, f"ingest/{job['id']}/failedResults")
    assert failure == {
        "sf__Id": "",
        "sf__Error": "REQUIRED_FIELD_MISSING:Required fields are missing: [Name]:Name --",
        "Name": "",
        "Industry": "Retail",
    }
    assert rows(api, f"ingest/{job['id']}/unprocessedrecords") == []
    raw = api.get(f"{JOBS}/ingest/{job['id']}/successfulResults").text
    assert raw.splitlines()[0] == '"sf__Id","sf__Created","Name","Industry"'

    listed = api.get(f"{JOBS}/ingest").json()
    assert listed["done"] is True and listed["nextRecordsUrl"] is None
    assert job["id"] in [item["id"] for item in listed["records"]]
    assert api.delete(f"{JOBS}/ingest/{job['id']}").status_code == 204
    assert api.get(f"{JOBS}/ingest/{job['id']}").status_code == 404


def test_update_upsert_and_delete_go_through_the_record_service(api: TestClient) -> None:
    inserted = ingest(
        api, "Name,External_ID__c\nBulk Up One,BU-1\n", object="Product2", operation="insert"
    )
    assert inserted["numberRecordsFailed"] == 0
    [one] = soql(api, "SELECT Id FROM Product2 WHERE External_ID__c = 'BU-1'")
    updated = ingest(
        api,
        f"Id,Description\n{one['Id']},changed\n001000000000000AAA,nope\n",
        object="Product2",
        operation="update",
    )
    assert (updated["numberRecordsProcessed"], updated["numberRecordsFailed"]) == (2, 1)
    upserted = ingest(
        api,
        "External_ID__c,Name\nBU-1,Bulk Up One Again\nBU-2,Bulk Up Two\n",
        object="Product2",
        operation="upsert",
        externalIdFieldName="External_ID__c",
    )
    assert upserted["externalIdFieldName"] == "External_ID__c"
    created = {
        r["Name"]: r["sf__Created"] for r in rows(api, f"ingest/{upserted['id']}/successfulResults")
    }
    assert created == {"Bulk Up One Again": "false", "Bulk Up Two": "true"}
    products = soql(
        api, "SELECT Name, Description FROM Product2 WHERE External_ID__c LIKE 'BU-%' ORDER BY Name"
    )
    assert [(p["Name"], p["Description"]) for p in products] == [
        ("Bulk Up One Again", "changed"),
        ("Bulk Up Two", None),
    ]
    # "#N/A" sets a field to null; an empty cell leaves it alone.
    ingest(api, f"Id,Description,Name\n{one['Id']},#N/A,\n", object="Product2", operation="update")
    [after] = soql(api, f"SELECT Name, Description FROM Product2 WHERE Id = '{one['Id']}'")
    assert (after["Name"], after["Description"]) == ("Bulk Up One Again", None)
    # Upserting on Id: a row without an Id is a new record.
    by_id = ingest(
        api,
        f"Id,Name\n{one['Id']},Bulk Up One By Id\n,Bulk Up New By Id\n",
        object="Product2",
        operation="upsert",
        externalIdFieldName="Id",
    )
    made = rows(api, f"ingest/{by_id['id']}/successfulResults")
    assert [(r["sf__Created"], r["Name"]) for r in made] == [
        ("false", "Bulk Up One By Id"),
        ("true", "Bulk Up New By Id"),
    ]
    deleted = ingest(api, f"Id\n{one['Id']}\n", object="Product2", operation="delete")
    assert deleted["numberRecordsFailed"] == 0
    assert soql(api, f"SELECT Id FROM Product2 WHERE Id = '{one['Id']}'") == []


def test_unreadable_data_fails_the_job(api: TestClient) -> None:
    unknown = ingest(api, "Name,Nope__c\nx,y\n", object="Account", operation="insert")
    assert unknown["state"] == "Failed"
    assert unknown["errorMessage"] == "InvalidBatch : Field name not found : Nope__c"
    assert unknown["numberRecordsProcessed"] == 0
    crlf = ingest(api, "Name\r\nx\r\n", object="Account", operation="insert", lineEnding="LF")
    assert crlf["errorMessage"].startswith("ClientInputError : LineEnding is invalid")
    # A job that failed as a whole left its rows unprocessed.
    assert rows(api, f"ingest/{crlf['id']}/unprocessedrecords") == [{"Name": "x"}]
    piped = ingest(
        api, "Name|Industry\r\nPiped Co|Retail\r\n", object="Account", operation="insert",
        columnDelimiter="PIPE", lineEnding="CRLF",
    )  # fmt: skip
    assert (piped["state"], piped["numberRecordsFailed"]) == ("JobComplete", 0)
    result = api.get(f"{JOBS}/ingest/{piped['id']}/successfulResults").text
    assert result.startswith('"sf__Id"|"sf__Created"|"Name"|"Industry"\r\n')


ACCOUNT = {"object": "Account"}
REFUSED = [
    ("ingest", {"object": "Nope", "operation": "insert"}, 400, "INVALIDENTITY"),
    ("ingest", {**ACCOUNT, "operation": "merge"}, 400, "INVALIDJOB"),
    ("ingest", {**ACCOUNT, "operation": "upsert"}, 400, "INVALIDJOB"),
    ("ingest", {**ACCOUNT, "operation": "insert", "contentType": "JSON"}, 400, "INVALIDJOB"),
    ("ingest", {**ACCOUNT, "operation": "insert", "lineEnding": "CR"}, 400, "INVALIDJOB"),
    ("ingest", {**ACCOUNT, "operation": "hardDelete"}, 400, "FEATURENOTENABLED"),
    ("query", {"operation": "query", "query": "SELECT Nope FROM Account"}, 400, "INVALID_FIELD"),
    ("query", {"operation": "query", "query": "SELECT COUNT() FROM Account"}, 400, "INVALIDJOB"),
    (
        "query",
        {"operation": "query", "query": "SELECT Id, (SELECT Id FROM Contacts) FROM Account"},
        400,
        "INVALIDJOB",
    ),
    ("query", {"operation": "search", "query": "SELECT Id FROM Account"}, 400, "INVALIDJOB"),
    (
        "query",
        {"operation": "query", "query": "SELECT Id, BillingAddress FROM Account"},
        400,
        "FUNCTIONALITY_NOT_ENABLED",
    ),
    ("query", {"operation": "query"}, 400, "INVALIDJOB"),
]


@pytest.mark.parametrize(("kind", "spec", "status", "code"), REFUSED)
def test_a_job_salesforce_would_refuse_is_refused(
    api: TestClient, kind: str, spec: dict[str, Any], status: int, code: str
) -> None:
    response = api.post(f"{JOBS}/{kind}", json=spec)
    assert response.status_code == status
    assert response.json()[0]["errorCode"] == code


def test_hard_delete_is_refused_as_to_a_user_without_its_permission(api: TestClient) -> None:
    response = api.post(f"{JOBS}/ingest", json={**ACCOUNT, "operation": "hardDelete"})
    assert (response.status_code, response.json()) == (
        400,
        [
            {
                "errorCode": "FEATURENOTENABLED",
                "message": "hardDelete operation requires special user profile permission, "
                "please contact your system administrator",
            }
        ],
    )


def test_states_move_only_as_salesforce_allows(api: TestClient) -> None:
    job = create(api, "ingest", object="Account", operation="insert")
    early = api.get(f"{JOBS}/ingest/{job['id']}/successfulResults")
    assert (early.status_code, early.json()[0]["errorCode"]) == (400, "INVALIDJOBSTATE")
    assert api.delete(f"{JOBS}/ingest/{job['id']}").status_code == 400
    wrong_type = api.put(
        f"{JOBS}/ingest/{job['id']}/batches",
        content=b"{}",
        headers={"Content-Type": "application/json"},
    )
    assert wrong_type.status_code == 415
    upload(api, job["id"], "Name\nAborted Co\n")
    again = api.put(
        f"{JOBS}/ingest/{job['id']}/batches",
        content=b"Name\nx\n",
        headers={"Content-Type": "text/csv"},
    )
    assert (again.status_code, again.json()[0]["errorCode"]) == (400, "INVALIDJOBSTATE")
    aborted = api.patch(f"{JOBS}/ingest/{job['id']}", json={"state": "Aborted"}).json()
    assert aborted["state"] == "Aborted"
    reopened = api.patch(f"{JOBS}/ingest/{job['id']}", json={"state": "UploadComplete"})
    assert (reopened.status_code, reopened.json()[0]["errorCode"]) == (400, "INVALIDJOBSTATE")
    assert rows(api, f"ingest/{job['id']}/unprocessedrecords") == [{"Name": "Aborted Co"}]
    assert soql(api, "SELECT Id FROM Account WHERE Name = 'Aborted Co'") == []
    bad = api.patch(f"{JOBS}/ingest/{job['id']}", json={"state": "Done"})
    assert (bad.status_code, bad.json()[0]["errorCode"]) == (400, "INVALIDJOB")
    for path in ("ingest/750000000000000AAA", "query/750000000000000AAA", "ingest/nope"):
        assert api.get(f"{JOBS}/{path}").status_code == 404, path
    # An ingest job is not a query job.
    assert api.get(f"{JOBS}/query/{job['id']}").status_code == 404


def test_a_query_job_pages_its_csv_by_locator(api: TestClient) -> None:
    query = "SELECT Id, Subject, Account.Name, CreatedDate, IsEscalated FROM Case ORDER BY Id"
    job = create(api, "query", operation="query", query=query)
    assert (job["state"], job["object"], job["operation"]) == ("UploadComplete", "Case", "query")
    done = wait(api, "query", job["id"])
    expected = soql(api, query.replace("FROM Case", "FROM Case"))
    assert (done["state"], done["jobType"]) == ("JobComplete", "V2Query")
    assert done["numberRecordsProcessed"] == len(expected)
    seen: list[dict[str, str]] = []
    locator = None
    pages = 0
    while locator != "null":
        params = {"maxRecords": "400", **({"locator": locator} if locator else {})}
        response = api.get(f"{JOBS}/query/{job['id']}/results", params=params)
        assert response.status_code == 200
        page = list(csv.DictReader(io.StringIO(response.text)))
        assert int(response.headers["Sforce-NumberOfRecords"]) == len(page)
        seen += page
        locator = response.headers["Sforce-Locator"]
        pages += 1
    assert pages == -(-len(expected) // 400)
    assert [row["Id"] for row in seen] == [record["Id"] for record in expected]
    first = expected[0]
    assert seen[0]["Account.Name"] == ((first["Account"] or {}).get("Name") or "")
    assert seen[0]["CreatedDate"].endswith("Z") and seen[0]["IsEscalated"] in ("true", "false")
    header = api.get(f"{JOBS}/query/{job['id']}/results", params={"maxRecords": "1"}).text
    assert header.splitlines()[0] == '"Id","Subject","Account.Name","CreatedDate","IsEscalated"'
    for locator in ("!!", "é", "%00"):
        bad = api.get(f"{JOBS}/query/{job['id']}/results", params={"locator": locator})
        assert (bad.status_code, bad.json()[0]["errorCode"]) == (400, "INVALID_LOCATOR"), locator
    assert api.delete(f"{JOBS}/query/{job['id']}").status_code == 204


def test_query_all_sees_deleted_records(api: TestClient) -> None:
    record_id = api.post(f"{API}/sobjects/Account", json={"Name": "Gone Bulk"}).json()["id"]
    api.delete(f"{API}/sobjects/Account/{record_id}")
    query = f"SELECT Id, IsDeleted FROM Account WHERE Id = '{record_id}'"
    live = wait(api, "query", create(api, "query", operation="query", query=query)["id"])
    every = wait(api, "query", create(api, "query", operation="queryAll", query=query)["id"])
    assert (live["numberRecordsProcessed"], every["numberRecordsProcessed"]) == (0, 1)
    text = api.get(f"{JOBS}/query/{every['id']}/results").text
    assert list(csv.DictReader(io.StringIO(text))) == [{"Id": record_id, "IsDeleted": "true"}]


def test_a_reset_undoes_an_ingest_jobs_writes(client: TestClient) -> None:
    sandbox = client.post("/__localforce/sandboxes", json={"id": "bulkreset"})
    assert sandbox.status_code == 201, sandbox.text
    token = sandbox.json()["access_token"]
    box = TestClient(
        client.app, base_url=str(client.base_url), headers={"Authorization": f"Bearer {token}"}
    )
    job = ingest(box, "Name\nReset Me One\nReset Me Two\n", object="Account", operation="insert")
    assert job["numberRecordsProcessed"] == 2
    assert len(soql(box, "SELECT Id FROM Account WHERE Name LIKE 'Reset Me%'")) == 2
    diff = client.get("/__localforce/sandboxes/bulkreset/diff").json()
    assert len(diff["created"]) == 2
    reset = client.post("/__localforce/sandboxes/bulkreset/reset")
    assert reset.status_code == 200
    # Two inserts, each with its id sequence's move; the job's journal mark is not a write.
    assert reset.json()["undoneWrites"] == 4
    assert soql(box, "SELECT Id FROM Account WHERE Name LIKE 'Reset Me%'") == []
    assert box.get(f"{JOBS}/ingest/{job['id']}").status_code == 404
    assert client.get("/__localforce/sandboxes/bulkreset/diff").json()["created"] == []
    assert client.delete("/__localforce/sandboxes/bulkreset").status_code == 204


def test_a_job_outlives_the_server(database_factory: DatabaseFactory, seeded_template: str) -> None:
    """One server takes a job and closes it but runs no jobs (its runner is off); the next
    server, on the same databases, runs it; a third still serves its results."""
    url = database_factory.new_url(template=seeded_template)

    def server(**overrides: object) -> TestClient:
        app = create_app(make_settings(url, database_factory.workdir, **overrides))
        return TestClient(app, base_url="https://testserver")

    with server(bulk_runner=False) as first:
        api = TestClient(first.app, base_url="https://testserver", headers={
            "Authorization": f"Bearer {login(first)}"
        })  # fmt: skip
        job = create(api, "ingest", object="Account", operation="insert")
        upload(api, job["id"], "Name\nSurvivor Co\n")
        close(api, job["id"])
        time.sleep(0.3)
        assert api.get(f"{JOBS}/ingest/{job['id']}").json()["state"] == "UploadComplete"
        token = api.headers["Authorization"]
    with server(bulk_stale_seconds=0.2) as second:
        api = TestClient(
            second.app, base_url="https://testserver", headers={"Authorization": token}
        )
        done = wait(api, "ingest", job["id"])
        assert (done["state"], done["numberRecordsProcessed"]) == ("JobComplete", 1)
    with server() as third:
        api = TestClient(third.app, base_url="https://testserver", headers={"Authorization": token})
        [row] = rows(api, f"ingest/{job['id']}/successfulResults")
        assert row["Name"] == "Survivor Co"
        assert len(soql(api, "SELECT Id FROM Account WHERE Name = 'Survivor Co'")) == 1


def test_an_upsert_job_matches_on_a_standard_id_lookup_field(api: TestClient) -> None:
    """Contact.Email is idLookup in a real org's describe: a Bulk upsert may match on it."""
    data = "Email,LastName\nbulk.lookup@example.com,First\n"
    made = ingest(api, data, object="Contact", operation="upsert", externalIdFieldName="Email")
    assert (made["state"], made["numberRecordsFailed"]) == ("JobComplete", 0)
    again = ingest(
        api,
        "Email,LastName\nBULK.LOOKUP@example.com,Second\n",
        object="Contact",
        operation="upsert",
        externalIdFieldName="Email",
    )
    [result] = rows(api, f"ingest/{again['id']}/successfulResults")
    assert (result["sf__Created"], result["LastName"]) == ("false", "Second")
    [contact] = soql(api, "SELECT LastName FROM Contact WHERE Email = 'bulk.lookup@example.com'")
    assert contact["LastName"] == "Second"


@pytest.mark.parametrize("operation", ["insert", "delete"])
def test_an_empty_upload_completes_with_no_rows(api: TestClient, operation: str) -> None:
    """jsforce's bulk2 tests load an empty input and expect three empty result lists: a real
    org completes the job."""
    done = ingest(api, "", object="Account", operation=operation)
    assert (done["state"], done["numberRecordsProcessed"], done["numberRecordsFailed"]) == (
        "JobComplete",
        0,
        0,
    )
    for part in ("successfulResults", "failedResults", "unprocessedrecords"):
        assert rows(api, f"ingest/{done['id']}/{part}") == []


def test_an_upsert_on_id_without_an_id_column_inserts(api: TestClient) -> None:
    done = ingest(
        api,
        "Name\nBulk No Id Column\n",
        object="Account",
        operation="upsert",
        externalIdFieldName="Id",
    )
    assert (done["state"], done["numberRecordsProcessed"], done["numberRecordsFailed"]) == (
        "JobComplete",
        1,
        0,
    )
    [made] = rows(api, f"ingest/{done['id']}/successfulResults")
    assert (made["sf__Created"], made["Name"]) == ("true", "Bulk No Id Column")
    assert soql(api, "SELECT Id FROM Account WHERE Name = 'Bulk No Id Column'") == [
        {
            "attributes": {"type": "Account", "url": f"{API}/sobjects/Account/{made['sf__Id']}"},
            "Id": made["sf__Id"],
        }
    ]


def test_a_query_job_writes_typeof_fields_under_the_lookup(api: TestClient) -> None:
    account = api.post(f"{API}/sobjects/Account", json={"Name": "Bulk Typeof Co"}).json()["id"]
    event = api.post(
        f"{API}/sobjects/Event",
        json={
            "Subject": "Bulk Typeof",
            "WhatId": account,
            "StartDateTime": "2026-01-05T09:00:00Z",
            "EndDateTime": "2026-01-05T10:00:00Z",
            "DurationInMinutes": 60,
        },
    )
    assert event.status_code == 201, event.text
    query = (
        "SELECT Subject, TYPEOF What WHEN Account THEN Name, Phone WHEN Case THEN Subject "
        "ELSE Name END FROM Event WHERE Subject = 'Bulk Typeof'"
    )
    done = wait(api, "query", create(api, "query", operation="query", query=query)["id"])
    assert (done["state"], done["numberRecordsProcessed"]) == ("JobComplete", 1)
    response = api.get(f"{JOBS}/query/{done['id']}/results")
    assert response.text.splitlines() == [
        '"Subject","What.Name","What.Phone","What.Subject"',
        '"Bulk Typeof","Bulk Typeof Co",,',  # a null is an empty, unquoted cell
    ]
