"""The standard objects every org has, whatever it holds: described, listed, queryable, and
written only as the object allows (the Organization is edited, never created or deleted)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.storage.ids import ORGANIZATION_ID
from tests.conftest import API

STANDARD = ["Organization", "Group", "Profile", "UserRole", "RecordType", "Campaign"]
SALES = ["Opportunity", "Lead", "Task", "Event"]


def test_describe_global_lists_the_standard_objects(api: TestClient) -> None:
    body = api.get(f"{API}/sobjects").json()
    entries = {entry["name"]: entry for entry in body["sobjects"]}
    for name in STANDARD + SALES:
        assert name in entries, name
    organization = entries["Organization"]
    assert (organization["keyPrefix"], organization["createable"], organization["deletable"]) == (
        "00D",
        False,
        False,
    )
    assert organization["updateable"] is True
    assert entries["Group"]["keyPrefix"] == "00G"


@pytest.mark.parametrize(
    ("sobject", "fields"),
    [
        ("Opportunity", {"StageName", "CloseDate", "Amount", "AccountId", "IsWon"}),
        ("Lead", {"Company", "Status", "IsConverted", "ConvertedAccountId", "State"}),
        ("Task", {"Subject", "Status", "WhatId", "WhoId", "ActivityDate"}),
        ("Event", {"StartDateTime", "DurationInMinutes", "WhatId"}),
        ("Account", {"BillingState", "NumberOfEmployees", "Industry", "ShippingState"}),
        ("Organization", {"Name", "IsSandbox", "TimeZoneSidKey", "OrganizationType"}),
    ],
)
def test_describe_has_the_standard_fields(api: TestClient, sobject: str, fields: set[str]) -> None:
    response = api.get(f"{API}/sobjects/{sobject}/describe")
    assert response.status_code == 200, response.text
    assert fields <= {field["name"] for field in response.json()["fields"]}


def test_a_case_owner_is_polymorphic_now_queues_exist(api: TestClient) -> None:
    fields = {f["name"]: f for f in api.get(f"{API}/sobjects/Case/describe").json()["fields"]}
    owner = fields["OwnerId"]
    assert (owner["referenceTo"], owner["polymorphicForeignKey"]) == (["Group", "User"], True)


def test_the_organization_is_read_and_edited_never_created_or_deleted(api: TestClient) -> None:
    url = f"{API}/sobjects/Organization/{ORGANIZATION_ID}"
    assert api.get(url, params={"fields": "Name"}).json()["Name"] == "Shoes & Clothings"
    created = api.post(f"{API}/sobjects/Organization", json={"Name": "Another"})
    assert created.status_code == 400
    assert created.json() == [
        {
            "message": "entity type cannot be inserted: Organization",
            "errorCode": "INVALID_TYPE_FOR_OPERATION",
        }
    ]
    deleted = api.delete(url)
    assert deleted.status_code == 400
    assert deleted.json() == [
        {
            "message": "entity type cannot be deleted: Organization",
            "errorCode": "INVALID_TYPE_FOR_OPERATION",
        }
    ]
    assert api.patch(url, json={"Phone": "(415) 555-0100"}).status_code == 204
    assert api.get(url, params={"fields": "Phone"}).json()["Phone"] == "(415) 555-0100"
    count = api.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Organization"})
    assert count.json()["totalSize"] == 1


def test_a_fixed_organization_field_is_not_writable(api: TestClient) -> None:
    url = f"{API}/sobjects/Organization/{ORGANIZATION_ID}"
    response = api.patch(url, json={"IsSandbox": True})
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"


def test_an_opportunity_is_created_on_the_original_org(api: TestClient) -> None:
    body = {"Name": "First deal", "StageName": "Prospecting", "CloseDate": "2024-06-30"}
    response = api.post(f"{API}/sobjects/Opportunity", json=body)
    assert response.status_code == 201, response.text
    query = "SELECT Name, StageName, IsClosed FROM Opportunity"
    records = api.get(f"{API}/query", params={"q": query}).json()["records"]
    assert [(r["Name"], r["StageName"], r["IsClosed"]) for r in records] == [
        ("First deal", "Prospecting", False)
    ]
