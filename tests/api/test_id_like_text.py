"""Text that looks like an id is text: only lookups and id lists are checked as references. A
Case subject "500 units damaged!" is 18 characters that start with Case's key prefix; it must be
stored, on every text field of every object, not answered INVALID_CROSS_REFERENCE_KEY."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.config import REPO_ROOT
from app.metadata.model import FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.seeding.standard_records import standard_records
from tests.conftest import API

# 18 characters each, starting with the key prefix of a seeded object (Case, Account, User).
ID_LIKE_TEXTS = ("500 units damaged!", "001 pairs of shoes", "005 said: call me!")
_FREE_TEXT = (FieldType.STRING, FieldType.TEXTAREA)


def _text_fields(registry: SchemaRegistry) -> list[Any]:
    return [
        pytest.param(sobject.name, field.name, id=f"{sobject.name}.{field.name}")
        for sobject in registry
        if sobject.name in SEEDED
        for field in sobject.fields
        if field.type in _FREE_TEXT and field.updateable and field.length >= 18
    ]


OBJECTS_DIR = REPO_ROOT / "seed" / "orgs" / "original" / "objects"
REGISTRY = SchemaRegistry.from_directory(OBJECTS_DIR)
# The objects the original org has records of: its own and the standard records every org has
# (the standard objects it holds none of, such as Opportunity, have no record to update).
SEEDED = {path.stem for path in OBJECTS_DIR.glob("*.yaml")} | set(standard_records("original"))


def _first_id(api: TestClient, sobject: SObjectDef) -> str:
    response = api.get(f"{API}/query", params={"q": f"SELECT Id FROM {sobject.name} LIMIT 1"})
    assert response.status_code == 200, response.text
    records = response.json()["records"]
    assert records, f"the seeded org has no {sobject.name}"
    return str(records[0]["Id"])


@pytest.mark.parametrize(("sobject_name", "field_name"), _text_fields(REGISTRY))
def test_id_like_text_is_stored_as_text(
    api: TestClient, sobject_name: str, field_name: str
) -> None:
    sobject = REGISTRY.get(sobject_name)
    assert sobject is not None
    record_id = _first_id(api, sobject)
    for text in ID_LIKE_TEXTS:
        url = f"{API}/sobjects/{sobject_name}/{record_id}"
        response = api.patch(url, json={field_name: text})
        assert response.status_code == 204, (text, response.text)
        stored = api.get(url, params={"fields": field_name}).json()
        assert stored[field_name] == text


def test_a_case_is_created_with_an_id_like_subject(api: TestClient) -> None:
    response = api.post(f"{API}/sobjects/Case", json={"Subject": "500 units damaged!"})
    assert response.status_code == 201, response.text


def test_a_lookup_to_no_record_is_still_refused(api: TestClient) -> None:
    response = api.post(
        f"{API}/sobjects/Case", json={"Subject": "x", "AccountId": "001Lf0000zzzzzzAAA"}
    )
    assert response.status_code == 400
    assert response.json() == [
        {
            "message": "invalid cross reference id",
            "errorCode": "INVALID_CROSS_REFERENCE_KEY",
            "fields": [],
        }
    ]
