"""Standard addresses over the APIs: written through their parts, read as one compound object
(a record's GET, the partner SOAP API's query), never written as one, laid out as one item over
their parts, and refused by a Bulk query as a real org refuses "compound data". What SOQL does
with them is tests/soql/fixtures/corpus_addresses.yaml."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.api.test_bulk1 import ASYNC, field, session, wait_batch, xml, xml_job
from tests.api.test_soap import NIL, NS, call, result_of
from tests.api.test_soap import session_id as session_id  # the module's SOAP session fixture
from tests.conftest import API

EMPTY_ADDRESS = dict.fromkeys(
    (
        "city",
        "country",
        "geocodeAccuracy",
        "latitude",
        "longitude",
        "postalCode",
        "state",
        "street",
    )
)


def account(api: TestClient, **fields: Any) -> str:
    created = api.post(f"{API}/sobjects/Account", json={"Name": "Xaddr Addressed", **fields})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def test_a_record_reads_its_address_as_its_parts_change(api: TestClient) -> None:
    url = f"{API}/sobjects/Account/{account(api, ShippingCity='Xaddrville')}"
    record = api.get(url).json()
    assert record["ShippingAddress"] == {**EMPTY_ADDRESS, "city": "Xaddrville"}
    assert record["BillingAddress"] is None
    changed = {"BillingStreet": "9 Pier", "BillingLatitude": 37.8, "ShippingCity": None}
    assert api.patch(url, json=changed).status_code == 204
    record = api.get(url).json()
    assert record["BillingAddress"] == {**EMPTY_ADDRESS, "street": "9 Pier", "latitude": 37.8}
    assert record["ShippingAddress"] is None
    fields = api.get(url, params={"fields": "BillingAddress"}).json()
    assert list(fields) == ["attributes", "BillingAddress", "Id"]


def test_the_address_itself_cannot_be_written(api: TestClient) -> None:
    response = api.post(
        f"{API}/sobjects/Account", json={"Name": "Xaddr Addressed", "BillingAddress": {"city": "X"}}
    )
    assert response.status_code == 400
    [error] = response.json()
    assert (error["errorCode"], error["fields"]) == (
        "INVALID_FIELD_FOR_INSERT_UPDATE",
        ["BillingAddress"],
    )


def test_a_geocode_accuracy_is_a_restricted_picklist(api: TestClient) -> None:
    response = api.post(
        f"{API}/sobjects/Account",
        json={"Name": "Xaddr Addressed", "BillingGeocodeAccuracy": "Roof"},
    )
    assert response.status_code == 400
    [error] = response.json()
    assert (error["errorCode"], error["fields"]) == (
        "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
        ["BillingGeocodeAccuracy"],
    )


def test_a_layout_places_the_address_over_its_parts(api: TestClient) -> None:
    layout = api.get(f"{API}/sobjects/Contact/describe/layouts").json()["layouts"][0]
    for sections, editing in (
        (layout["detailLayoutSections"], False),
        (layout["editLayoutSections"], True),
    ):
        items = {
            item["layoutComponents"][0]["value"]: item
            for section in sections
            for row in section["layoutRows"]
            for item in row["layoutItems"]
        }
        assert "MailingCity" not in items and "OtherLatitude" not in items, editing
        mailing = items["MailingAddress"]
        assert (mailing["editableForNew"], mailing["editableForUpdate"]) == (True, True)
        [component] = mailing["layoutComponents"]
        assert component["fieldType"] == "address"
        assert [part["value"] for part in component["components"]] == [
            "MailingStreet",
            "MailingCity",
            "MailingState",
            "MailingPostalCode",
            "MailingCountry",
            "MailingLatitude",
            "MailingLongitude",
            "MailingGeocodeAccuracy",
        ]


def test_the_partner_api_writes_an_address_as_its_components(
    client: TestClient, session_id: str, api: TestClient
) -> None:
    record_id = account(api, BillingCity="Xsoapton", BillingPostalCode="02110")
    soql = f"SELECT BillingAddress, ShippingAddress FROM Account WHERE Id = '{record_id}'"
    status, root = call(
        client, session_id, f'<query xmlns="{NS["p"]}"><queryString>{soql}</queryString></query>'
    )
    assert status == 200
    [record] = result_of(root, "query").findall("p:records", NS)
    billing = record.find("sf:BillingAddress", NS)
    assert billing is not None and billing.get(f"{{{NS['xsi']}}}type") == "address"
    components = {child.tag.rsplit("}", 1)[-1]: child for child in billing}
    assert list(components) == list(EMPTY_ADDRESS)
    assert components["city"].text == "Xsoapton" and components["postalCode"].text == "02110"
    assert components["street"].get(NIL) == "true"
    assert record.find("sf:ShippingAddress", NS).get(NIL) == "true"  # type: ignore[union-attr]


def test_a_bulk_query_batch_refuses_compound_data(api: TestClient) -> None:
    job_id = field(xml_job(api, "query", "Account", "CSV"), "id")
    headers = {"Content-Type": "text/csv", **session(api)}
    for query, message in (
        (
            "SELECT Id, BillingAddress FROM Account",
            "InvalidBatch : Failed to process query: FUNCTIONALITY_NOT_ENABLED: "
            "Selecting compound data not supported in Bulk Query",
        ),
        (
            "SELECT Id FROM Contact",
            "InvalidBatch : Failed to process query: INVALID_TYPE_FOR_OPERATION: The root entity "
            "of the requested query (Contact) does not match the entity of the requested Bulk "
            "API Job (Account).",
        ),
    ):
        batch = xml(api.post(f"{ASYNC}/job/{job_id}/batch", content=query, headers=headers))
        done = wait_batch(api, job_id, field(batch, "id"), session(api))
        assert (field(done, "state"), field(done, "stateMessage")) == ("Failed", message)
    parts = "SELECT Id, BillingCity, BillingLatitude FROM Account LIMIT 1"
    batch = xml(api.post(f"{ASYNC}/job/{job_id}/batch", content=parts, headers=headers))
    assert field(wait_batch(api, job_id, field(batch, "id"), session(api)), "state") == "Completed"
