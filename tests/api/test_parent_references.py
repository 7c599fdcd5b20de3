"""A lookup set through its parent's external id: `{"Product2": {"External_ID__c": "P-1"}}`
in a create, update, upsert, composite or Bulk body, and the errors a real org answers."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.test_bulk2 import ingest, rows
from tests.conftest import API


def query(api: TestClient, soql: str) -> list[dict[str, Any]]:
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    return list(response.json()["records"])


def product(api: TestClient, external_id: str) -> str:
    response = api.post(
        f"{API}/sobjects/Product2", json={"Name": external_id, "External_ID__c": external_id}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def category(api: TestClient) -> str:
    return str(query(api, "SELECT Id FROM ProductCategory ORDER BY Id LIMIT 1")[0]["Id"])


def test_create_sets_the_lookup_through_the_parents_external_id(api: TestClient) -> None:
    product_id = product(api, "REF-1")
    response = api.post(
        f"{API}/sobjects/ProductCategoryProduct",
        json={"ProductCategoryId": category(api), "Product": {"external_id__c": "ref-1"}},
    )
    assert response.status_code == 201, response.text
    record_id = response.json()["id"]
    stored = api.get(f"{API}/sobjects/ProductCategoryProduct/{record_id}").json()
    assert stored["ProductId"] == product_id


def test_the_parents_id_and_its_type_in_attributes_are_accepted(api: TestClient) -> None:
    product_id = product(api, "REF-2")
    response = api.post(
        f"{API}/sobjects/ProductCategoryProduct",
        json={
            "ProductCategoryId": category(api),
            "Product": {"attributes": {"type": "Product2"}, "Id": product_id[:15]},
        },
    )
    assert response.status_code == 201, response.text
    stored = api.get(f"{API}/sobjects/ProductCategoryProduct/{response.json()['id']}").json()
    assert stored["ProductId"] == product_id


def test_update_sets_a_polymorphic_lookup_named_by_its_type(api: TestClient) -> None:
    case_id = query(api, "SELECT Id FROM Case ORDER BY Id LIMIT 1")[0]["Id"]
    user_id = query(api, "SELECT Id FROM User ORDER BY Id DESC LIMIT 1")[0]["Id"]
    response = api.patch(
        f"{API}/sobjects/Case/{case_id}",
        json={"Owner": {"attributes": {"type": "User"}, "Id": user_id}},
    )
    assert response.status_code == 204, response.text
    assert api.get(f"{API}/sobjects/Case/{case_id}").json()["OwnerId"] == user_id


def test_composite_collections_and_bulk_resolve_the_reference(api: TestClient) -> None:
    product_id = product(api, "REF-3")
    response = api.post(
        f"{API}/composite/sobjects",
        json={
            "allOrNone": False,
            "records": [
                {
                    "attributes": {"type": "ProductCategoryProduct"},
                    "ProductCategoryId": category(api),
                    "Product": {"External_ID__c": "REF-3"},
                },
                {
                    "attributes": {"type": "ProductCategoryProduct"},
                    "ProductCategoryId": category(api),
                    "Product": {"External_ID__c": "REF-NONE"},
                },
            ],
        },
    )
    assert response.status_code == 200, response.text
    first, second = response.json()
    assert first["success"] is True
    stored = api.get(f"{API}/sobjects/ProductCategoryProduct/{first['id']}").json()
    assert stored["ProductId"] == product_id
    assert second == {
        "id": None,
        "success": False,
        "errors": [
            {
                "statusCode": "INVALID_FIELD",
                "message": "Foreign key external ID: REF-NONE not found for field "
                "External_ID__c in entity Product2",
                "fields": [],
            }
        ],
    }


def test_bulk_reads_a_relationship_column_as_the_parents_external_id(api: TestClient) -> None:
    product_id = product(api, "REF-4")
    data = f"ProductCategoryId,Product.External_ID__c\n{category(api)},REF-4\n{category(api)},X\n"
    job = ingest(api, data, object="ProductCategoryProduct", operation="insert", lineEnding="LF")
    assert (job["state"], job["numberRecordsProcessed"], job["numberRecordsFailed"]) == (
        "JobComplete",
        2,
        1,
    )
    (done,) = rows(api, f"ingest/{job['id']}/successfulResults")
    stored = api.get(f"{API}/sobjects/ProductCategoryProduct/{done['sf__Id']}").json()
    assert stored["ProductId"] == product_id
    (failed,) = rows(api, f"ingest/{job['id']}/failedResults")
    assert failed["sf__Error"] == (
        "INVALID_FIELD:Foreign key external ID: X not found for field External_ID__c in "
        "entity Product2: --"
    )


# (body of a new ProductCategoryProduct beside its category, status, errorCode, message)
# "fields" is [] in each but an unknown field's, which has none, as a body's unknown field.
REFUSALS = [
    pytest.param(
        {"Product": {"External_ID__c": "NOPE"}},
        400,
        "INVALID_FIELD",
        "Foreign key external ID: NOPE not found for field External_ID__c in entity Product2",
        id="no-such-parent",
    ),
    pytest.param(
        {"Product": {"External_ID__c": None}},
        400,
        "INVALID_FIELD",
        "Foreign key external ID: null not found for field External_ID__c in entity Product2",
        id="null-key",
    ),
    pytest.param(
        {"Product": {"ProductCode": "REF-DUP"}},  # Name is an idLookup field: it would do
        400,
        "INVALID_FIELD",
        "Field name provided, ProductCode does not match an External ID, Salesforce Id, or "
        "indexed field for Product2",
        id="not-an-external-id",
    ),
    pytest.param(
        {"Product": {"Nope__c": "x"}},
        400,
        "INVALID_FIELD",
        "No such column 'Nope__c' on sobject of type Product2",
        id="unknown-parent-field",
    ),
    pytest.param(
        {"Product": "REF-DUP"},
        400,
        "INVALID_FIELD",
        "The value provided for foreign key reference Product is not a nested SObject",
        id="not-nested",
    ),
    pytest.param(
        {"Product": {"External_ID__c": {"deeper": 1}}},
        400,
        "INVALID_FIELD",
        "The value provided for foreign key reference Product is not a nested SObject",
        id="nested-twice",
    ),
    pytest.param(
        {"Product": {"External_ID__c": "REF-DUP", "Name": "x"}},
        400,
        "INVALID_FIELD",
        "More than 1 field provided in an external foreign key reference in entity: Product2",
        id="two-keys",
    ),
    pytest.param(
        {"Product": {"attributes": {"type": "Account"}, "Id": "x"}},
        400,
        "INVALID_FIELD",
        "Invalid type Account for foreign key reference Product",
        id="wrong-type",
    ),
    pytest.param(
        {"Product": {"External_ID__c": "REF-DUP"}, "ProductId": None},
        400,
        "INVALID_FIELD",
        "Cannot specify both an external ID reference Product and a salesforce id, ProductId",
        id="both-forms",
    ),
]


@pytest.mark.parametrize(("body", "status", "code", "message"), REFUSALS)
def test_refusals(
    api: TestClient, body: dict[str, Any], status: int, code: str, message: str
) -> None:
    before = len(query(api, "SELECT Id FROM ProductCategoryProduct"))
    response = api.post(
        f"{API}/sobjects/ProductCategoryProduct", json={"ProductCategoryId": category(api), **body}
    )
    assert response.status_code == status, response.text
    expected = {"message": message, "errorCode": code, "fields": []}
    if message.startswith("No such column"):
        del expected["fields"]
    assert response.json() == [expected]
    assert len(query(api, "SELECT Id FROM ProductCategoryProduct")) == before


def test_several_parents_with_the_key_answer_duplicate_external_id(api: TestClient) -> None:
    first, second = product(api, "REF-TWICE"), product(api, "ref-twice")
    response = api.post(
        f"{API}/sobjects/ProductCategoryProduct",
        json={"ProductCategoryId": category(api), "Product": {"External_ID__c": "Ref-Twice"}},
    )
    assert response.status_code == 400, response.text
    assert response.json() == [
        {
            "message": "External ID: more than one record found for external id field: "
            f"[{first}, {second}]",
            "errorCode": "DUPLICATE_EXTERNAL_ID",
            "fields": [],
        }
    ]


def test_a_polymorphic_reference_must_name_its_type(api: TestClient) -> None:
    case_id = query(api, "SELECT Id FROM Case ORDER BY Id LIMIT 1")[0]["Id"]
    response = api.patch(f"{API}/sobjects/Case/{case_id}", json={"Owner": {"Id": "x"}})
    assert response.status_code == 400, response.text
    assert response.json() == [
        {
            "message": "The foreign key reference Owner is polymorphic: its nested SObject "
            "must name its type in attributes",
            "errorCode": "INVALID_FIELD",
            "fields": [],
        }
    ]


def test_a_read_only_lookup_cannot_be_set_through_its_parent(api: TestClient) -> None:
    record_id = query(api, "SELECT Id FROM ProductCategoryProduct ORDER BY Id LIMIT 1")[0]["Id"]
    product(api, "REF-5")
    response = api.patch(
        f"{API}/sobjects/ProductCategoryProduct/{record_id}",
        json={"Product": {"External_ID__c": "REF-5"}},
    )
    assert response.status_code == 400, response.text
    assert response.json()[0]["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"
    assert response.json()[0]["fields"] == ["ProductId"]
