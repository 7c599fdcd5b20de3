"""simple-salesforce, unmodified, against a running localforce server.

simple-salesforce only speaks https to `*.salesforce.com` for login and to the instance after;
the test's requests session reroutes those URLs to the local plain-http server, as a proxy or
hosts entry would in real use.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import requests
from localforce.routing import localforce_session
from requests.adapters import HTTPAdapter
from simple_salesforce.api import Salesforce
from simple_salesforce.exceptions import (
    SalesforceExpiredSession,
    SalesforceMalformedRequest,
    SalesforceResourceNotFound,
)

from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread


class LocalRedirectAdapter(HTTPAdapter):
    """Sends every https request to the local server over plain http."""

    def __init__(self, port: int) -> None:
        super().__init__()
        self.port = port

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        parts = urlsplit(request.url or "")
        request.url = urlunsplit(("http", f"127.0.0.1:{self.port}", parts.path, parts.query, ""))
        request.headers["Host"] = f"127.0.0.1:{self.port}"
        return super().send(request, **kwargs)


@pytest.fixture(scope="module")
def server_port(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[int]:
    with serve_in_thread(private_org_app(database_factory, seeded_template)) as port:
        yield port


@pytest.fixture
def session(server_port: int) -> requests.Session:
    http = requests.Session()
    http.mount("https://", LocalRedirectAdapter(server_port))
    return http


def test_soap_login_and_crud(session: requests.Session, server_port: int) -> None:
    sf: Any = Salesforce(
        username="agent@example.com", password="pw", security_token="tok", session=session
    )
    assert sf.sf_instance == f"127.0.0.1:{server_port}"
    created = sf.Contact.create({"FirstName": "Grace", "LastName": "Hopper"})
    assert created["success"] is True
    record_id = created["id"]
    assert sf.Contact.get(record_id)["Name"] == "Grace Hopper"
    assert sf.Contact.get(record_id[:15])["Id"] == record_id
    assert sf.Contact.update(record_id, {"LastName": "Murray Hopper"}) == 204
    assert sf.Contact.get(record_id)["Name"] == "Grace Murray Hopper"
    assert sf.Contact.delete(record_id) == 204
    with pytest.raises(SalesforceResourceNotFound) as deleted:
        sf.Contact.get(record_id)
    content: Any = deleted.value.content
    assert content[0]["errorCode"] == "ENTITY_IS_DELETED"


def test_direct_session_describe_and_errors(session: requests.Session, server_port: int) -> None:
    token = session.post(
        f"https://127.0.0.1:{server_port}/services/oauth2/token",
        data={"grant_type": "password", "username": "a", "password": "b"},
    ).json()["access_token"]
    sf: Any = Salesforce(
        instance_url=f"https://127.0.0.1:{server_port}", session_id=token, session=session
    )
    names = {entry["name"] for entry in sf.describe()["sobjects"]}
    assert {"Case", "Knowledge__kav", "CaseHistory__c"} <= names
    assert sf.Case.describe()["keyPrefix"] == "500"
    assert sf.Case.metadata()["objectDescribe"]["name"] == "Case"
    counts = sf.restful("limits/recordCount", params={"sObjects": "Case"})
    assert counts == {"sObjects": [{"count": 977, "name": "Case"}]}
    with pytest.raises(SalesforceMalformedRequest) as missing:
        sf.Contact.create({"FirstName": "No Last Name"})
    missing_content: Any = missing.value.content
    assert missing_content == [
        {
            "message": "Required fields are missing: [LastName]",
            "errorCode": "REQUIRED_FIELD_MISSING",
            "fields": ["LastName"],
        }
    ]
    assert sf.limits()["DailyApiRequests"]["Max"] == 15000


def test_query_all_follows_next_records_url(session: requests.Session, server_port: int) -> None:
    sf: Any = Salesforce(
        username="agent@example.com", password="pw", security_token="", session=session
    )
    result = sf.query_all("SELECT Id, Product2.Name FROM PricebookEntry")
    assert result["totalSize"] == 22000
    ids = [record["Id"] for record in result["records"]]
    assert len(set(ids)) == 22000
    assert result["records"][0]["Product2"]["attributes"]["type"] == "Product2"
    assert sf.query("SELECT COUNT() FROM Case")["totalSize"] == 977
    deleted_aware = sf.query_all("SELECT Id FROM Issue__c", include_deleted=True)
    assert deleted_aware["totalSize"] == 10
    with pytest.raises(SalesforceMalformedRequest) as bad:
        sf.query("SELECT Id FROM Case WHERE CreatedDate > '2020-01-01'")
    content: Any = bad.value.content
    assert content[0]["errorCode"] == "INVALID_FIELD"
    assert content[0]["message"].endswith(
        "value of filter criterion for field 'CreatedDate' must be of type dateTime and should "
        "not be enclosed in quotes"
    )


@pytest.fixture
def oauth_sf(server_port: int) -> Any:
    """A client logged in by the OAuth password flow at login.salesforce.com (routed here)."""
    return Salesforce(
        username="agent@example.com",
        password="pw",
        consumer_key="localforce-client",
        consumer_secret="localforce-secret",
        session=localforce_session(f"http://127.0.0.1:{server_port}"),
    )


def test_oauth_password_login(oauth_sf: Any, server_port: int) -> None:
    assert oauth_sf.sf_instance == f"127.0.0.1:{server_port}"
    assert oauth_sf.session_id
    assert oauth_sf.query("SELECT COUNT() FROM Case")["totalSize"] == 977
    resources = oauth_sf.restful("")
    assert "sobjects" in resources
    assert "query" in resources


def test_query_more_by_locator_and_by_url(oauth_sf: Any) -> None:
    first = oauth_sf.query("SELECT Id FROM PricebookEntry")
    assert first["done"] is False
    assert len(first["records"]) == 2000
    next_url = first["nextRecordsUrl"]
    locator = next_url.rsplit("/", 1)[-1]
    by_locator = oauth_sf.query_more(locator)
    by_url = oauth_sf.query_more(next_url, identifier_is_url=True)
    assert by_locator["records"] == by_url["records"]
    assert len(by_url["records"]) == 2000
    first_ids = {record["Id"] for record in first["records"]}
    assert first_ids.isdisjoint(record["Id"] for record in by_url["records"])
    assert by_url["nextRecordsUrl"] != next_url


def test_search_and_quick_search(oauth_sf: Any) -> None:
    found = oauth_sf.search("FIND {racing} IN ALL FIELDS RETURNING Product2(Id, Name)")
    records = found["searchRecords"]
    assert records
    assert {record["attributes"]["type"] for record in records} == {"Product2"}
    assert all(record["Id"].startswith("01t") for record in records)
    quick = oauth_sf.quick_search("racing")
    assert quick["searchRecords"]
    assert {record["Id"] for record in records} <= {r["Id"] for r in quick["searchRecords"]}


def test_upsert_through_the_client(oauth_sf: Any) -> None:
    assert oauth_sf.Product2.upsert("External_ID__c/X-1", {"Name": "Client Upsert"}) == 201
    record = oauth_sf.Product2.get_by_custom_id("External_ID__c", "X-1")
    assert record["Name"] == "Client Upsert"
    assert oauth_sf.Product2.upsert("External_ID__c/X-1", {"Name": "Renamed"}) in (200, 204)
    again = oauth_sf.Product2.get_by_custom_id("External_ID__c", "X-1")
    assert again["Id"] == record["Id"]
    assert again["Name"] == "Renamed"
    found = oauth_sf.query("SELECT Id FROM Product2 WHERE External_ID__c = 'X-1'")
    assert found["totalSize"] == 1


def test_restful_and_error_exceptions(oauth_sf: Any, server_port: int) -> None:
    described = oauth_sf.restful("sobjects/Contact/describe")
    assert described["name"] == "Contact"
    queried = oauth_sf.restful("query", params={"q": "SELECT Id FROM Contact LIMIT 1"})
    assert queried["totalSize"] == 1
    with pytest.raises(SalesforceMalformedRequest) as bad:
        oauth_sf.query("SELECT Nope__c FROM Case")
    bad_content: Any = bad.value.content
    assert bad.value.status == 400
    assert bad_content[0]["errorCode"] == "INVALID_FIELD"
    with pytest.raises(SalesforceResourceNotFound) as missing:
        oauth_sf.restful("sobjects/NoSuchThing__c/describe")
    assert missing.value.status == 404
    missing_content: Any = missing.value.content
    assert missing_content[0]["errorCode"] == "NOT_FOUND"
    expired: Any = Salesforce(
        instance_url=f"https://127.0.0.1:{server_port}",
        session_id="not-a-session",
        session=localforce_session(f"http://127.0.0.1:{server_port}"),
    )
    with pytest.raises(SalesforceExpiredSession) as unauthorized:
        expired.query("SELECT Id FROM Case LIMIT 1")
    assert unauthorized.value.status == 401
    expired_content: Any = unauthorized.value.content
    assert expired_content[0]["errorCode"] == "INVALID_SESSION_ID"


def test_query_all_with_child_subqueries_and_aggregates(oauth_sf: Any) -> None:
    """Part 2 of SOQL through the client: children on every page, ROLLUP rows, TYPEOF."""
    result = oauth_sf.query_all(
        "SELECT Id, (SELECT Id, OrderId FROM OrderItems ORDER BY Id) FROM Order ORDER BY Id"
    )
    assert result["totalSize"] == 2069
    with_items = [r for r in result["records"] if r["OrderItems"] is not None]
    assert sum(r["OrderItems"]["totalSize"] for r in with_items) == 7100
    assert all(
        item["OrderId"] == order["Id"]
        for order in with_items
        for item in order["OrderItems"]["records"]
    )
    rollup = oauth_sf.query(
        "SELECT Priority, COUNT(Id) n, GROUPING(Priority) total FROM Case GROUP BY ROLLUP(Priority)"
    )
    assert rollup["records"][-1]["n"] == 977 and rollup["records"][-1]["total"] == 1
    typed = oauth_sf.query(
        "SELECT TYPEOF Owner WHEN User THEN Email END FROM Case WHERE Owner.Email != null LIMIT 1"
    )
    assert typed["records"][0]["Owner"]["attributes"]["type"] == "User"


def test_bulk2_insert_update_upsert_delete_and_query(oauth_sf: Any) -> None:
    """`sf.bulk2`: each call is a Bulk API 2.0 job (create, upload, close, poll, results)."""
    bulk = oauth_sf.bulk2.Product2
    inserted = bulk.insert(
        records=[{"Name": f"Bulk2 {i}", "External_ID__c": f"B2-{i}"} for i in range(3)], wait=0
    )
    assert [(r["numberRecordsProcessed"], r["numberRecordsFailed"]) for r in inserted] == [(3, 0)]
    ids = {
        r["External_ID__c"]: r["Id"]
        for r in oauth_sf.query(
            "SELECT Id, External_ID__c FROM Product2 WHERE Name LIKE 'Bulk2 %'"
        )["records"]
    }
    assert set(ids) == {"B2-0", "B2-1", "B2-2"}
    updated = bulk.update(records=[{"Id": ids["B2-0"], "Description": "updated"}], wait=0)
    assert updated[0]["numberRecordsFailed"] == 0
    upserted = bulk.upsert(
        records=[
            {"External_ID__c": "B2-1", "Name": "Bulk2 one"},
            {"External_ID__c": "B2-9", "Name": "Bulk2 nine"},
        ],
        external_id_field="External_ID__c",
        wait=0,
    )
    assert upserted[0]["numberRecordsProcessed"] == 2
    deleted = bulk.delete(records=[{"Id": ids["B2-2"]}], wait=0)
    assert deleted[0]["numberRecordsFailed"] == 0

    soql = "SELECT External_ID__c, Name, Description FROM Product2 WHERE Name LIKE 'Bulk2 %'"
    pages = list(bulk.query(soql + " ORDER BY External_ID__c", max_records=2, wait=0))
    assert len(pages) == 2  # three rows, two to a page
    rows = [line for page in pages for line in page.splitlines()[1:]]
    assert rows == [
        '"B2-0","Bulk2 0","updated"',
        '"B2-1","Bulk2 one",',
        '"B2-9","Bulk2 nine",',
    ]
    every = "".join(bulk.query_all(soql.replace("Name, Description", "IsDeleted"), wait=0))
    assert '"B2-2","true"' in every.splitlines()
    via_rest = list(oauth_sf.query_all_iter("SELECT Id FROM Product2 WHERE Name LIKE 'Bulk2 %'"))
    assert len(via_rest) == 3


def test_bulk_insert_update_upsert_delete_and_query(oauth_sf: Any) -> None:
    """`sf.bulk`: Bulk API 1.0 JSON jobs, one batch each, results in the order sent."""
    inserted = oauth_sf.bulk.Account.insert(
        [{"Name": "Bulkone Ss", "Industry": "Retail"}, {"Industry": "Retail"}], batch_size=10
    )
    assert [(r["success"], r["created"]) for r in inserted] == [(True, True), (False, False)]
    assert inserted[1]["errors"] == [
        {
            "message": "Required fields are missing: [Name]",
            "fields": ["Name"],
            "statusCode": "REQUIRED_FIELD_MISSING",
        }
    ]
    record_id = inserted[0]["id"]
    updated = oauth_sf.bulk.Account.update([{"Id": record_id, "Industry": "Banking"}])
    assert updated == [{"success": True, "created": False, "id": record_id, "errors": []}]
    upserted = oauth_sf.bulk.Product2.upsert(
        [{"External_ID__c": "BS-1", "Name": "Bulkone product"}], "External_ID__c"
    )
    assert upserted[0]["created"] is True
    found = oauth_sf.bulk.Account.query(
        "SELECT Id, Name, Industry, CreatedDate FROM Account WHERE Name = 'Bulkone Ss'"
    )
    assert [(r["Id"], r["Industry"]) for r in found] == [(record_id, "Banking")]
    assert isinstance(found[0]["CreatedDate"], int)  # epoch milliseconds, as Bulk 1.0 writes
    deleted = oauth_sf.bulk.Account.delete([{"Id": record_id}])
    assert deleted[0]["success"] is True
    assert oauth_sf.bulk.Account.query("SELECT Id FROM Account WHERE Name = 'Bulkone Ss'") == []
    every = oauth_sf.bulk.Account.query_all(
        "SELECT Id, IsDeleted FROM Account WHERE Name = 'Bulkone Ss'"
    )
    assert [(r["Id"], r["IsDeleted"]) for r in every] == [(record_id, True)]
