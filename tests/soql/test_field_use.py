"""What describe says a query may do with a field is what the binder allows, for the field types
the seeded org has none of (the corpus covers the rest: fixtures/corpus_field_use.yaml)."""

from __future__ import annotations

import pytest

from app.metadata.describe import describe_field
from app.metadata.loader import load_object
from app.metadata.registry import SchemaRegistry
from app.soql.bind_context import LIMITS
from app.soql.binder import bind
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.errors import SoqlError
from app.soql.function_registry import FUNCTIONS
from app.soql.parser import parse

SURVEYS = SchemaRegistry(
    [
        load_object(
            {
                "name": "Zq_Survey__c",
                "keyPrefix": "a7Y",
                "fields": {
                    "Name": {"type": "string"},
                    "Colors__c": {"type": "multipicklist", "picklist": ["Red", "Blue"]},
                    "Ratio__c": {"type": "percent", "precision": 5, "scale": 2},
                    "Score__c": {"type": "int", "digits": 9},
                    "Notes__c": {"type": "textarea", "length": 131072},
                    "Opens__c": {"type": "time"},
                    "Done__c": {"type": "boolean"},
                },
            }
        )
    ]
)
SURVEY = SURVEYS.get("Zq_Survey__c")


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (
            "SELECT Id FROM Zq_Survey__c ORDER BY Colors__c",
            "field 'Colors__c' can not be sorted in a query call",
        ),
        (
            "SELECT COUNT(Id) FROM Zq_Survey__c GROUP BY Colors__c",
            "field 'Colors__c' can not be grouped in a query call",
        ),
        (
            "SELECT COUNT(Id) FROM Zq_Survey__c GROUP BY Ratio__c",
            "field 'Ratio__c' can not be grouped in a query call",
        ),
        (
            "SELECT Id FROM Zq_Survey__c WHERE Notes__c != null",
            "field 'Notes__c' can not be filtered in a query call",
        ),
    ],
)
def test_the_binder_refuses_what_describe_refuses(query: str, reason: str) -> None:
    with pytest.raises(SoqlError) as caught:
        bind(
            SURVEYS,
            query,
            parse(query),
            calendar=UTC_EPOCH_CALENDAR,
            functions=FUNCTIONS,
            limits=LIMITS,
        )
    assert caught.value.error_code == "INVALID_FIELD"
    assert caught.value.reason == reason


@pytest.mark.parametrize(
    ("query", "field", "function"),
    [
        ("SELECT COUNT(Opens__c) FROM Zq_Survey__c", "Opens__c", "COUNT"),
        ("SELECT MAX(Opens__c) FROM Zq_Survey__c", "Opens__c", "MAX"),
        ("SELECT COUNT_DISTINCT(Done__c) FROM Zq_Survey__c", "Done__c", "COUNT_DISTINCT"),
    ],
)
def test_no_aggregate_takes_a_time_or_a_checkbox(query: str, field: str, function: str) -> None:
    with pytest.raises(SoqlError) as caught:
        bind(
            SURVEYS,
            query,
            parse(query),
            calendar=UTC_EPOCH_CALENDAR,
            functions=FUNCTIONS,
            limits=LIMITS,
        )
    assert caught.value.error_code == "MALFORMED_QUERY"
    assert caught.value.reason == f"field {field} does not support aggregate operator {function}"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT Id FROM Zq_Survey__c WHERE Colors__c INCLUDES ('Red') ORDER BY Score__c",
        "SELECT Score__c, COUNT(Id) FROM Zq_Survey__c GROUP BY Score__c",
        "SELECT Notes__c FROM Zq_Survey__c ORDER BY Ratio__c",
    ],
)
def test_the_binder_allows_what_describe_allows(query: str) -> None:
    bind(
        SURVEYS,
        query,
        parse(query),
        calendar=UTC_EPOCH_CALENDAR,
        functions=FUNCTIONS,
        limits=LIMITS,
    )


def test_describe_and_the_binder_read_the_same_flags() -> None:
    assert SURVEY is not None
    flags = {
        field.name: {
            key: describe_field(field)[key] for key in ("filterable", "sortable", "groupable")
        }
        for field in SURVEY.fields
        if field.name in ("Colors__c", "Ratio__c", "Score__c", "Notes__c")
    }
    assert flags == {
        "Colors__c": {"filterable": True, "sortable": False, "groupable": False},
        "Ratio__c": {"filterable": True, "sortable": True, "groupable": False},
        "Score__c": {"filterable": True, "sortable": True, "groupable": True},
        "Notes__c": {"filterable": False, "sortable": False, "groupable": False},
    }
    # Salesforce's table of field types in aggregate functions: no boolean or time field.
    refused = {field.name for field in SURVEY.fields if not describe_field(field)["aggregatable"]}
    assert refused == {"Notes__c", "Opens__c", "Done__c", "IsDeleted"}
