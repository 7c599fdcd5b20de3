"""Geolocation fields: a read-only compound over a latitude and a longitude, as describe shows
them, and the great-circle distance DISTANCE() measures on SQLite."""

from __future__ import annotations

from typing import Any

import pytest

from app.metadata.describe import describe_field
from app.metadata.loader import load_object
from app.metadata.model import FieldType
from app.storage.database import great_circle_distance
from app.storage.derived import apply_derived

SITE = load_object(
    {
        "name": "Zq_Site__c",
        "keyPrefix": "a9L",
        "fields": {"Location__c": {"type": "location", "scale": 6, "label": "Location"}},
    }
)


def test_a_location_is_a_compound_of_two_doubles() -> None:
    names = [field.name for field in SITE.fields if not field.system]
    assert names == ["Location__c", "Location__Latitude__s", "Location__Longitude__s"]
    compound = SITE.field("Location__c")
    assert compound is not None and SITE.compound_fields == [compound]
    assert (compound.type, compound.createable, compound.updateable) == (
        FieldType.LOCATION,
        False,
        False,
    )
    described = describe_field(compound)
    assert (described["type"], described["soapType"]) == ("location", "urn:location")
    for part, label in ((SITE.location_parts(compound)[0], "Location (Latitude)"),):
        shown = describe_field(part)
        assert shown["type"] == "double" and shown["compoundFieldName"] == "Location__c"
        assert shown["label"] == label and shown["scale"] == 6 and shown["createable"] is True


def test_the_compound_mirrors_its_parts() -> None:
    record: dict[str, Any] = {"Location__Latitude__s": 37.7749, "Location__Longitude__s": -122.4194}
    apply_derived(SITE, record)
    assert record["Location__c"] == {"latitude": 37.7749, "longitude": -122.4194}
    record["Location__Longitude__s"] = None
    apply_derived(SITE, record)
    assert record["Location__c"] is None


@pytest.mark.parametrize(
    ("start", "end", "radius", "expected"),
    [
        ((37.7749, -122.4194), (37.7749, -122.4194), 3958.7613, 0.0),
        ((37.7749, -122.4194), (34.0522, -118.2437), 3958.7613, 347.4),
        ((37.7749, -122.4194), (40.7128, -74.006), 3958.7613, 2565.7),
        ((37.7749, -122.4194), (37.8044, -122.2712), 6371.0088, 13.4),
        ((0.0, 0.0), (0.0, 180.0), 6371.0088, 20015.1),
    ],
)
def test_great_circle_distances(
    start: tuple[float, float], end: tuple[float, float], radius: float, expected: float
) -> None:
    distance = great_circle_distance(start[0], start[1], end[0], end[1], radius)
    assert distance == pytest.approx(expected, abs=0.1)


def test_no_location_has_no_distance() -> None:
    assert great_circle_distance(None, -122.4, 0.0, 0.0, 6371.0088) is None
