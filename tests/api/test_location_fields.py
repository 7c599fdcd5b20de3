"""A location field over REST: written through its latitude and longitude, read as a compound,
never written as one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API
from tests.databases import DatabaseFactory
from tests.soql.test_corpus import CORPORA, open_org_with_objects


@pytest.fixture(scope="module")
def sf(
    database_factory: DatabaseFactory,
    seeded_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[TestClient]:
    """The org of tests/soql/fixtures/corpus_distance.yaml, with its Zq_Site__c object."""
    opened = open_org_with_objects(
        CORPORA["corpus_distance"], database_factory, seeded_template, tmp_path_factory.mktemp("s")
    )
    yield next(opened)
    for _ in opened:
        pass


def test_a_location_is_written_through_its_parts(sf: TestClient) -> None:
    created = sf.post(
        f"{API}/sobjects/Zq_Site__c",
        json={
            "Name": "Depot",
            "Location__Latitude__s": 47.6062,
            "Location__Longitude__s": -122.3321,
        },
    )
    assert created.status_code == 201, created.text
    url = f"{API}/sobjects/Zq_Site__c/{created.json()['id']}"
    assert sf.get(url).json()["Location__c"] == {"latitude": 47.6062, "longitude": -122.3321}
    assert sf.patch(url, json={"Location__Longitude__s": None}).status_code == 204
    assert sf.get(url).json()["Location__c"] is None


def test_the_compound_itself_cannot_be_written(sf: TestClient) -> None:
    response = sf.post(
        f"{API}/sobjects/Zq_Site__c",
        json={"Name": "Depot", "Location__c": {"latitude": 1, "longitude": 2}},
    )
    assert response.status_code == 400
    [error] = response.json()
    assert error["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"
    assert error["fields"] == ["Location__c"]


def test_describe_shows_the_compound_and_its_parts(sf: TestClient) -> None:
    fields = {f["name"]: f for f in sf.get(f"{API}/sobjects/Zq_Site__c/describe").json()["fields"]}
    assert fields["Location__c"]["type"] == "location"
    assert fields["Location__Latitude__s"]["compoundFieldName"] == "Location__c"
    assert fields["Location__Longitude__s"]["type"] == "double"
