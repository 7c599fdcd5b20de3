"""Bulk API 1.0: jobs and batches in XML, JSON and CSV, their results, query results, and
errors in its own envelope."""

from __future__ import annotations

import csv
import io
import time
from typing import Any
from xml.etree.ElementTree import Element

from defusedxml import ElementTree
from fastapi.testclient import TestClient

from tests.conftest import API

ASYNC = "/services/async/59.0"
NS = {"b": "http://www.force.com/2009/06/asyncapi/dataload"}
XML = {"Content-Type": "application/xml; charset=UTF-8"}
JOB_FIELDS = [
    "id", "operation", "object", "createdById", "createdDate", "systemModstamp", "state",
    "concurrencyMode", "contentType", "numberBatchesQueued", "numberBatchesInProgress",
    "numberBatchesCompleted", "numberBatchesFailed", "numberBatchesTotal",
    "numberRecordsProcessed", "numberRetries", "apiVersion", "numberRecordsFailed",
    "totalProcessingTime", "apiActiveProcessingTime", "apexProcessingTime",
]  # fmt: skip


def session(api: TestClient) -> dict[str, str]:
    return {"X-SFDC-Session": api.headers["Authorization"].split(" ", 1)[1]}


def xml(response: Any) -> Element:
    assert response.headers["content-type"].startswith("application/xml"), response.text
    return ElementTree.fromstring(response.content)  # type: ignore[no-any-return]


def field(element: Element, name: str) -> str:
    return element.findtext(f"b:{name}", default="", namespaces=NS)


def xml_job(api: TestClient, operation: str, sobject: str, content_type: str) -> Element:
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?><jobInfo xmlns="{NS["b"]}">'
        f"<operation>{operation}</operation><object>{sobject}</object>"
        f"<contentType>{content_type}</contentType></jobInfo>"
    )
    response = api.post(f"{ASYNC}/job", content=body, headers={**XML, **session(api)})
    assert response.status_code == 201, response.text
    return xml(response)


def wait_batch(api: TestClient, job_id: str, batch_id: str, headers: dict[str, str]) -> Any:
    deadline = time.monotonic() + 30
    while True:
        response = api.get(f"{ASYNC}/job/{job_id}/batch/{batch_id}", headers=headers)
        info = response.json() if "json" in response.headers["content-type"] else xml(response)
        state = info["state"] if isinstance(info, dict) else field(info, "state")
        if state not in ("Queued", "InProgress") or time.monotonic() > deadline:
            return info
        time.sleep(0.05)


def test_a_csv_job_in_xml(api: TestClient) -> None:
    job = xml_job(api, "insert", "Account", "CSV")
    assert [child.tag.split("}")[1] for child in job] == JOB_FIELDS
    assert (field(job, "state"), field(job, "contentType"), field(job, "apiVersion")) == (
        "Open",
        "CSV",
        "59.0",
    )
    job_id = field(job, "id")
    assert job_id.startswith("750")
    data = "Name,Industry\nBulkone Csv,Retail\n,Retail\n"
    batch = api.post(
        f"{ASYNC}/job/{job_id}/batch",
        content=data,
        headers={"Content-Type": "text/csv", **session(api)},
    )
    assert batch.status_code == 201
    batch_id = field(xml(batch), "id")
    assert batch_id.startswith("751") and field(xml(batch), "state") == "Queued"
    done = wait_batch(api, job_id, batch_id, session(api))
    assert (field(done, "state"), field(done, "numberRecordsProcessed")) == ("Completed", "2")
    assert field(done, "numberRecordsFailed") == "1"
    result = api.get(f"{ASYNC}/job/{job_id}/batch/{batch_id}/result", headers=session(api))
    rows = list(csv.DictReader(io.StringIO(result.text)))
    assert [(r["Success"], r["Created"]) for r in rows] == [("true", "true"), ("false", "false")]
    assert rows[1]["Error"] == "REQUIRED_FIELD_MISSING:Required fields are missing: [Name]:Name --"
    created = api.get(f"{API}/sobjects/Account/{rows[0]['Id']}").json()
    assert created["Name"] == "Bulkone Csv"
    request = api.get(f"{ASYNC}/job/{job_id}/batch/{batch_id}/request", headers=session(api))
    assert request.text == data
    closed = api.post(
        f"{ASYNC}/job/{job_id}",
        content=f'<jobInfo xmlns="{NS["b"]}"><state>Closed</state></jobInfo>',
        headers={**XML, **session(api)},
    )
    closed_info = xml(closed)
    assert field(closed_info, "state") == "Closed"
    assert (
        field(closed_info, "numberBatchesCompleted"),
        field(closed_info, "numberBatchesTotal"),
    ) == ("1", "1")
    listed = xml(api.get(f"{ASYNC}/job/{job_id}/batch", headers=session(api)))
    assert [field(b, "id") for b in listed.findall("b:batchInfo", NS)] == [batch_id]
    late = api.post(
        f"{ASYNC}/job/{job_id}/batch",
        content=data,
        headers={"Content-Type": "text/csv", **session(api)},
    )
    assert (late.status_code, field(xml(late), "exceptionCode")) == (400, "InvalidJobState")


def test_a_json_job_and_its_query(api: TestClient) -> None:
    headers = {"Content-Type": "application/json", **session(api)}
    job = api.post(
        f"{ASYNC}/job",
        json={
            "operation": "insert",
            "object": "Contact",
            "contentType": "JSON",
            "concurrencyMode": 0,
        },
        headers=headers,
    ).json()
    assert list(job) == JOB_FIELDS and job["apiVersion"] == 59.0
    records = [
        {"LastName": "Bulkone Json", "Email": "j@bulkone.example", "HasOptedOutOfEmail": True}
    ]
    batch = api.post(f"{ASYNC}/job/{job['id']}/batch", json=records, headers=headers).json()
    done = wait_batch(api, job["id"], batch["id"], headers)
    assert done["state"] == "Completed"
    [result] = api.get(
        f"{ASYNC}/job/{job['id']}/batch/{batch['id']}/result", headers=headers
    ).json()
    assert result["success"] is True and result["created"] is True and result["errors"] == []

    query = api.post(
        f"{ASYNC}/job",
        json={"operation": "query", "object": "Contact", "contentType": "JSON"},
        headers=headers,
    ).json()
    soql = (
        "SELECT Id, LastName, CreatedDate, Account.Name FROM Contact"
        " WHERE LastName = 'Bulkone Json'"
    )
    qbatch = api.post(f"{ASYNC}/job/{query['id']}/batch", content=soql, headers=headers).json()
    assert wait_batch(api, query["id"], qbatch["id"], headers)["state"] == "Completed"
    [result_id] = api.get(
        f"{ASYNC}/job/{query['id']}/batch/{qbatch['id']}/result", headers=headers
    ).json()
    assert result_id.startswith("752")
    [record] = api.get(
        f"{ASYNC}/job/{query['id']}/batch/{qbatch['id']}/result/{result_id}", headers=headers
    ).json()
    rest = api.get(f"{API}/sobjects/Contact/{result['id']}").json()
    assert (record["Id"], record["LastName"], record["Account"]) == (
        result["id"],
        "Bulkone Json",
        None,
    )
    # Bulk API 1.0's JSON writes datetimes as epoch milliseconds.
    assert isinstance(record["CreatedDate"], int) and record["CreatedDate"] % 1000 == 0
    assert rest["CreatedDate"].startswith(
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record["CreatedDate"] / 1000))
    )


def test_an_xml_job_with_xml_records_and_an_aborted_one(api: TestClient) -> None:
    job = xml_job(api, "insert", "Account", "XML")
    job_id = field(job, "id")
    records = (
        '<sObjects xmlns="urn:partner.soap.sforce.com" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        '<sObject><Name>Bulkone Xml</Name><Industry xsi:nil="true"/></sObject></sObjects>'
    )
    batch = xml(
        api.post(f"{ASYNC}/job/{job_id}/batch", content=records, headers={**XML, **session(api)})
    )
    done = wait_batch(api, job_id, field(batch, "id"), session(api))
    assert field(done, "state") == "Completed"
    results = xml(
        api.get(f"{ASYNC}/job/{job_id}/batch/{field(batch, 'id')}/result", headers=session(api))
    )
    [item] = results.findall("b:result", NS)
    assert (field(item, "success"), field(item, "created")) == ("true", "true")
    assert field(item, "id").startswith("001")

    query = xml_job(api, "query", "Account", "XML")
    soql = "SELECT Id, Name FROM Account WHERE Name = 'Bulkone Xml'"
    qbatch = xml(
        api.post(
            f"{ASYNC}/job/{field(query, 'id')}/batch", content=soql, headers={**XML, **session(api)}
        )
    )
    wait_batch(api, field(query, "id"), field(qbatch, "id"), session(api))
    listed = xml(
        api.get(
            f"{ASYNC}/job/{field(query, 'id')}/batch/{field(qbatch, 'id')}/result",
            headers=session(api),
        )
    )
    result_id = listed.findtext("b:result", namespaces=NS)
    found = xml(
        api.get(
            f"{ASYNC}/job/{field(query, 'id')}/batch/{field(qbatch, 'id')}/result/{result_id}",
            headers=session(api),
        )
    )
    [record] = found.findall("b:records", NS)
    assert (field(record, "type"), field(record, "Name")) == ("Account", "Bulkone Xml")

    aborted = xml_job(api, "insert", "Account", "CSV")
    aborted_id = field(aborted, "id")
    changed = xml(
        api.post(
            f"{ASYNC}/job/{aborted_id}",
            content=f'<jobInfo xmlns="{NS["b"]}"><state>Aborted</state></jobInfo>',
            headers={**XML, **session(api)},
        )
    )
    assert field(changed, "state") == "Aborted"


def test_errors_come_in_bulk_api_1_0s_envelope(api: TestClient, client: TestClient) -> None:
    job = f'<jobInfo xmlns="{NS["b"]}"><operation>insert</operation><object>Nope</object></jobInfo>'
    bad_object = api.post(f"{ASYNC}/job", content=job, headers={**XML, **session(api)})
    assert bad_object.status_code == 400
    assert bad_object.text == (
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<error xmlns="{NS["b"]}">'
        "<exceptionCode>InvalidJob</exceptionCode>"
        "<exceptionMessage>Unable to find object: Nope</exceptionMessage>"
        "</error>"
    )
    bad_session = client.post(
        f"{ASYNC}/job", content=job, headers={**XML, "X-SFDC-Session": "nope"}
    )
    assert bad_session.status_code == 400
    assert field(xml(bad_session), "exceptionCode") == "InvalidSessionId"
    as_json = client.post(
        f"{ASYNC}/job",
        json={"operation": "insert", "object": "Account", "contentType": "JSON"},
        headers={"X-SFDC-Session": "nope"},
    )
    assert as_json.json() == {
        "exceptionCode": "InvalidSessionId",
        "exceptionMessage": "Invalid session id",
    }
    missing = api.get(f"{ASYNC}/job/750000000000000AAA", headers=session(api))
    assert field(xml(missing), "exceptionCode") == "InvalidJob"
    hard = api.post(
        f"{ASYNC}/job",
        json={"operation": "hardDelete", "object": "Account", "contentType": "JSON"},
        headers={"Content-Type": "application/json", **session(api)},
    )
    assert (hard.status_code, hard.json()) == (
        400,
        {
            "exceptionCode": "FeatureNotEnabled",
            "exceptionMessage": "hardDelete operation requires special user profile permission, "
            "please contact your system administrator",
        },
    )
    unknown = api.get(f"{ASYNC}/nothing", headers=session(api))
    assert (unknown.status_code, field(xml(unknown), "exceptionCode")) == (400, "InvalidUrl")


def test_a_batch_is_bounded_as_salesforce_bounds_it(api: TestClient) -> None:
    job_id = field(xml_job(api, "insert", "Account", "CSV"), "id")
    headers = {"Content-Type": "text/csv", **session(api)}
    many = "Name\n" + "".join(f"Many {i}\n" for i in range(10_001))
    batch = xml(api.post(f"{ASYNC}/job/{job_id}/batch", content=many, headers=headers))
    done = wait_batch(api, job_id, field(batch, "id"), session(api))
    assert field(done, "state") == "Failed"
    assert field(done, "stateMessage") == (
        "InvalidBatch : Records in a single batch cannot exceed 10000"
    )
    assert (
        api.get(
            f"{API}/query", params={"q": "SELECT COUNT() FROM Account WHERE Name LIKE 'Many %'"}
        ).json()["totalSize"]
        == 0
    )
    large = api.post(
        f"{ASYNC}/job/{job_id}/batch", content=b"Name\n" + b"x" * 10_000_001, headers=headers
    )
    assert (large.status_code, field(xml(large), "exceptionCode")) == (400, "InvalidBatch")


def test_hostile_bodies_get_bulk_errors(api: TestClient) -> None:
    headers = {"Content-Type": "application/json", **session(api)}
    for body in (b'{"operation":"\\ud800","object":"Account"}', b"[" * 100_000, b"\xff\xfe"):
        response = api.post(f"{ASYNC}/job", content=body, headers=headers)
        assert response.status_code == 400, body[:20]
        assert response.json()["exceptionCode"] == "InvalidJob"
    job = api.post(
        f"{ASYNC}/job",
        json={"operation": "update", "object": "Account", "contentType": "JSON"},
        headers=headers,
    ).json()
    for data in (b'[{"Id":"\\udc00"}]', b"[" * 100_000, b'{"Name":"x"}', b'[{"Parent":{"A":1}}]'):
        batch = api.post(f"{ASYNC}/job/{job['id']}/batch", content=data, headers=headers).json()
        done = wait_batch(api, job["id"], batch["id"], headers)
        assert done["state"] == "Failed", data[:20]
        assert done["stateMessage"].startswith("InvalidBatch : ")
    xml_update = xml_job(api, "update", "Account", "XML")
    records = (
        '<sObjects xmlns="urn:partner.soap.sforce.com">'
        "<sObject><Id>a&lt;b</Id></sObject></sObjects>"
    )
    batch = xml(
        api.post(
            f"{ASYNC}/job/{field(xml_update, 'id')}/batch",
            content=records,
            headers={**XML, **session(api)},
        )
    )
    wait_batch(api, field(xml_update, "id"), field(batch, "id"), session(api))
    result = api.get(
        f"{ASYNC}/job/{field(xml_update, 'id')}/batch/{field(batch, 'id')}/result",
        headers=session(api),
    )
    [item] = xml(result).findall("b:result", NS)
    assert (field(item, "id"), field(item, "success")) == ("a<b", "false")


def test_a_job_made_in_xml_is_answered_in_xml_whatever_its_content_type(api: TestClient) -> None:
    job = xml_job(api, "insert", "Account", "JSON")
    assert field(job, "contentType") == "JSON"
    json_headers = {"Content-Type": "application/json", **session(api)}
    batch = api.post(
        f"{ASYNC}/job/{field(job, 'id')}/batch",
        json=[{"Name": "Bulkone Xml Json"}],
        headers=json_headers,
    ).json()
    # JSON writes a batch's stateMessage as null; XML leaves the element out.
    assert batch["stateMessage"] is None
    done = wait_batch(api, field(job, "id"), batch["id"], json_headers)
    assert (done["state"], done["stateMessage"]) == ("Completed", None)
    closing = (
        f'<?xml version="1.0" encoding="UTF-8"?><jobInfo xmlns="{NS["b"]}">'
        "<state>Closed</state></jobInfo>"
    )
    closed = api.post(
        f"{ASYNC}/job/{field(job, 'id')}", content=closing, headers={**XML, **session(api)}
    )
    assert field(xml(closed), "state") == "Closed"


def test_an_empty_batch_is_refused_at_once(api: TestClient) -> None:
    """What jsforce's bulk tests expect of an empty load: ClientInputError, from the server."""
    job_id = field(xml_job(api, "update", "Account", "CSV"), "id")
    response = api.post(
        f"{ASYNC}/job/{job_id}/batch",
        content=b"",
        headers={"Content-Type": "text/csv", **session(api)},
    )
    assert response.status_code == 400
    error = xml(response)
    assert (field(error, "exceptionCode"), field(error, "exceptionMessage")) == (
        "ClientInputError",
        "Unable to find any data to create batch",
    )
    listed = xml(api.get(f"{ASYNC}/job/{job_id}/batch", headers=session(api)))
    assert listed.findall("b:batchInfo", NS) == []


def test_a_queued_batch_in_xml_has_no_state_message(api: TestClient) -> None:
    job_id = field(xml_job(api, "insert", "Account", "CSV"), "id")
    batch = xml(
        api.post(
            f"{ASYNC}/job/{job_id}/batch",
            content="Name\nBulkone No Message\n",
            headers={"Content-Type": "text/csv", **session(api)},
        )
    )
    assert batch.find("b:stateMessage", NS) is None
