"""The /query and /queryAll endpoints: response shape, pagination, cursors and locators."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from app.storage.ids import normalize_id
from tests.conftest import API

LOCATOR_URL = re.compile(r"^/services/data/v(\d+\.0)/query/(01g\w{15})-(\d+)$")


def query(api: TestClient, soql: str, path: str = "query", **headers: str) -> dict:  # type: ignore[type-arg]
    response = api.get(f"{API}/{path}", params={"q": soql}, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json;charset=UTF-8"
    body: dict = response.json()  # type: ignore[type-arg]
    return body


def test_record_shape_and_key_order(api: TestClient) -> None:
    body = query(api, "select name, id, account.name, account.owner.alias from contact limit 2")
    assert list(body) == ["totalSize", "done", "records"]
    assert body["totalSize"] == 2 and body["done"] is True
    record = body["records"][0]
    assert list(record) == ["attributes", "Name", "Id", "Account"]
    assert record["attributes"] == {
        "type": "Contact",
        "url": f"{API}/sobjects/Contact/{record['Id']}",
    }
    account = record["Account"]
    assert list(account) == ["attributes", "Name", "Owner"]
    assert account["attributes"]["type"] == "Account"
    assert account["Owner"]["attributes"]["type"] == "User"
    assert set(account["Owner"]) == {"attributes", "Alias"}


def test_urls_echo_the_request_version(api: TestClient) -> None:
    response = api.get("/services/data/v42.0/query/", params={"q": "SELECT Id FROM Issue__c"})
    url = response.json()["records"][0]["attributes"]["url"]
    assert url.startswith("/services/data/v42.0/sobjects/Issue__c/")


def test_count_answers_in_total_size(api: TestClient) -> None:
    assert query(api, "SELECT COUNT() FROM PricebookEntry") == {
        "totalSize": 22000,
        "done": True,
        "records": [],
    }
    assert query(api, "SELECT count() FROM Case LIMIT 5")["totalSize"] == 5


def test_paginating_22000_pricebook_entries_returns_each_once(api: TestClient) -> None:
    body = query(api, "SELECT Id, UnitPrice FROM PricebookEntry")
    assert body["totalSize"] == 22000 and body["done"] is False
    assert len(body["records"]) == 2000
    seen = [r["Id"] for r in body["records"]]
    pages = 1
    while not body["done"]:
        match = LOCATOR_URL.match(body["nextRecordsUrl"])
        assert match is not None, body["nextRecordsUrl"]
        assert match.group(1) == "59.0" and int(match.group(3)) == len(seen)
        # query_all-style clients alternate between the two locator paths; both must serve it.
        path = (
            body["nextRecordsUrl"]
            if pages % 2
            else body["nextRecordsUrl"].replace("/query/", "/queryAll/")
        )
        response = api.get(path)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["totalSize"] == 22000
        seen += [r["Id"] for r in body["records"]]
        pages += 1
    assert "nextRecordsUrl" not in body
    assert pages == 11
    assert len(seen) == 22000 == len(set(seen))


def test_batch_size_header_is_a_hint_within_200_and_2000(api: TestClient) -> None:
    soql = "SELECT Id FROM Case"
    assert len(query(api, soql, **{"Sforce-Query-Options": "batchSize=500"})["records"]) == 500
    assert len(query(api, soql, **{"Sforce-Query-Options": "batchSize=10"})["records"]) == 200
    assert len(query(api, soql, **{"Sforce-Query-Options": "batchSize=9999"})["records"]) == 977
    assert len(query(api, soql, **{"Sforce-Query-Options": "nonsense"})["records"]) == 977


def test_cursor_results_are_stable_while_the_cursor_lives(api: TestClient) -> None:
    options = {"Sforce-Query-Options": "batchSize=200"}
    body = query(api, "SELECT Id FROM Issue__c", **options)
    assert body["done"] is True  # ten issues fit in one batch
    body = query(api, "SELECT Id, Name FROM Product2", **options)
    created = api.post(f"{API}/sobjects/Product2", json={"Name": "Zz Late Arrival"})
    assert created.status_code == 201
    rest = []
    url = body.get("nextRecordsUrl")
    while url:
        page = api.get(url).json()
        assert page["totalSize"] == body["totalSize"]
        rest += page["records"]
        url = page.get("nextRecordsUrl")
    assert len(body["records"]) + len(rest) == body["totalSize"] == 501
    assert created.json()["id"] not in {r["Id"] for r in rest}


def test_invalid_locators(api: TestClient) -> None:
    body = query(api, "SELECT Id FROM OrderItem")
    locator = body["nextRecordsUrl"].rsplit("/", 1)[1]
    cursor_id = locator.split("-")[0]
    expected = [{"message": "invalid query locator", "errorCode": "INVALID_QUERY_LOCATOR"}]
    for bad in ("nonsense", f"{cursor_id}-99999", f"{cursor_id}-abc", "01gLf0000000zzzAAA-2000"):
        response = api.get(f"{API}/query/{bad}")
        assert response.status_code == 400, bad
        assert response.json() == expected
    # Paging to the end closes the cursor: replaying a locator afterwards is invalid.
    last = None
    url = body["nextRecordsUrl"]
    while url:
        last = api.get(url).json()
        url = last.get("nextRecordsUrl")
    assert last is not None and last["done"] is True
    assert api.get(body["nextRecordsUrl"]).json() == expected


def test_query_all_sees_deleted_records(api: TestClient) -> None:
    issue_id = api.post(f"{API}/sobjects/Issue__c", json={"Name": "Zz Deleted Issue"}).json()["id"]
    assert api.delete(f"{API}/sobjects/Issue__c/{issue_id}").status_code == 204
    soql = "SELECT Id, IsDeleted FROM Issue__c WHERE Name = 'zz deleted issue'"
    assert query(api, soql)["totalSize"] == 0
    body = query(api, soql, path="queryAll/")
    assert body["records"] == [
        {
            "attributes": {"type": "Issue__c", "url": f"{API}/sobjects/Issue__c/{issue_id}"},
            "Id": issue_id,
            "IsDeleted": True,
        }
    ]


def test_ids_match_in_both_forms(api: TestClient) -> None:
    record_id = query(api, "SELECT Id FROM Account LIMIT 1")["records"][0]["Id"]
    for form in (record_id, record_id[:15], record_id.lower()):
        body = query(api, f"SELECT Id FROM Account WHERE Id = '{form}'")
        assert [r["Id"] for r in body["records"]] == [normalize_id(form)]


def test_missing_query_is_malformed(api: TestClient) -> None:
    response = api.get(f"{API}/query")
    assert response.status_code == 400
    assert response.json() == [
        {"message": "A query string has to be specified", "errorCode": "MALFORMED_QUERY"}
    ]


def test_positional_error_message(api: TestClient) -> None:
    response = api.get(f"{API}/query", params={"q": "SELECT Id, Nme FROM Account"})
    assert response.status_code == 400
    assert response.json() == [
        {
            "message": "\nSELECT Id, Nme FROM Account\n           ^\nERROR at Row:1:Column:12\n"
            "No such column 'Nme' on entity 'Account'. If you are attempting to use a custom "
            "field, be sure to append the '__c' after the custom field name. Please reference "
            "your WSDL or the describe call for the appropriate names.",
            "errorCode": "INVALID_FIELD",
        }
    ]


def test_aggregate_results_never_paginate(api: TestClient) -> None:
    response = api.get(
        f"{API}/query", params={"q": "SELECT Id, COUNT(Name) FROM PricebookEntry GROUP BY Id"}
    )
    assert response.status_code == 400
    assert response.json() == [
        {
            "message": "Aggregate query does not support queryMore(), use LIMIT to restrict the "
            "results to a single batch",
            "errorCode": "EXCEEDED_ID_LIMIT",
        }
    ]
