"""The index follows every write made through the API: the next search sees it."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import API


def found(api: TestClient, sosl: str) -> list[dict[str, Any]]:
    response = api.get(f"{API}/search", params={"q": sosl})
    assert response.status_code == 200, response.text
    records: list[dict[str, Any]] = response.json()["searchRecords"]
    return records


def ids(api: TestClient, sosl: str) -> list[str]:
    return [record["Id"] for record in found(api, sosl)]


def test_create_update_delete_product(api: TestClient) -> None:
    tool = "FIND {{{term}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"
    assert ids(api, tool.format(term="zanzibar kayak")) == []
    created = api.post(
        f"{API}/sobjects/Product2",
        json={"Name": "Zanzibar Sea Kayak", "Description": "A touring kayak for calm seas."},
    )
    assert created.status_code == 201, created.text
    product_id = created.json()["id"]
    assert ids(api, tool.format(term="zanzibar kayak")) == [product_id]
    assert ids(api, tool.format(term="kayaks")) == [product_id]  # stemmed
    assert ids(api, tool.format(term="touring")) == [product_id]  # the description too

    updated = api.patch(f"{API}/sobjects/Product2/{product_id}", json={"Name": "Mombasa Canoe"})
    assert updated.status_code == 204, updated.text
    assert ids(api, tool.format(term="zanzibar")) == []
    assert ids(api, tool.format(term="mombasa canoe")) == [product_id]
    assert ids(api, tool.format(term="touring")) == [product_id]  # untouched field still there
    assert found(api, tool.format(term="mombasa"))[0]["Name"] == "Mombasa Canoe"

    deleted = api.delete(f"{API}/sobjects/Product2/{product_id}")
    assert deleted.status_code == 204, deleted.text
    assert ids(api, tool.format(term="mombasa")) == []
    assert ids(api, f"FIND {{mombasa}} RETURNING Product2(Id WHERE Id = '{product_id}')") == []


def test_contact_name_email_and_phone(api: TestClient) -> None:
    created = api.post(
        f"{API}/sobjects/Contact",
        json={
            "FirstName": "Quintessa",
            "LastName": "Vandermeer",
            "Email": "q.vandermeer@example.org",
            "Phone": "(415) 555-0199",
        },
    )
    assert created.status_code == 201, created.text
    contact_id = created.json()["id"]
    name = "FIND {Quintessa Vandermeer} IN NAME FIELDS RETURNING Contact(Name, Email)"
    assert found(api, name) == [
        {
            "attributes": {"type": "Contact", "url": f"{API}/sobjects/Contact/{contact_id}"},
            "Name": "Quintessa Vandermeer",
            "Email": "q.vandermeer@example.org",
        }
    ]
    email = "FIND {q.vandermeer@example.org} IN EMAIL FIELDS RETURNING Contact"
    assert ids(api, email) == [contact_id]
    phone = "FIND {555-0199} IN PHONE FIELDS RETURNING Contact"
    assert ids(api, phone) == [contact_id]
    assert ids(api, "FIND {vandermeer} IN PHONE FIELDS RETURNING Contact") == []

    # A change to the last name renames the contact (Name is derived) and the index follows.
    api.patch(f"{API}/sobjects/Contact/{contact_id}", json={"LastName": "Okonkwo"})
    assert ids(api, "FIND {Vandermeer} IN NAME FIELDS RETURNING Contact") == []
    assert ids(api, "FIND {Quintessa Okonkwo} IN NAME FIELDS RETURNING Contact") == [contact_id]
    api.delete(f"{API}/sobjects/Contact/{contact_id}")
    assert ids(api, "FIND {Quintessa} RETURNING Contact, Account") == []


def test_a_search_inside_a_failed_write_sees_nothing_of_it(api: TestClient) -> None:
    # A write that fails validation is rolled back: nothing of it reaches the index.
    response = api.post(f"{API}/sobjects/Product2", json={"Name": "Ephemeral Widget", "Bogus": 1})
    assert response.status_code == 400
    assert ids(api, "FIND {ephemeral widget} RETURNING Product2") == []
