"""The Tooling API's reads: its objects described, queried and retrieved, over rows computed
from the org's schema; the refusals Salesforce keeps for its virtual entities; Apex's named
error. On both back ends (the rows are computed the same for each)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

V = "/services/data/v59.0"
T = f"{V}/tooling"
UNSUPPORTED = "EXTERNAL_OBJECT_UNSUPPORTED_EXCEPTION"
NO_AGGREGATES = (
    "The requested operation is not yet supported by this SObject storage type, contact "
    "salesforce.com support for more information."
)


def tooling_query(api: TestClient, soql: str, **headers: str) -> Any:
    return api.get(f"{T}/query", params={"q": soql}, headers=headers)


def test_an_entity_definition_is_named_by_its_durable_id(api: TestClient) -> None:
    soql = (
        "SELECT Id, DurableId, QualifiedApiName, Label, PluralLabel, KeyPrefix, IsCustomSetting"
        " FROM EntityDefinition WHERE QualifiedApiName = 'Account'"
    )
    response = tooling_query(api, soql)
    assert response.status_code == 200
    assert response.json() == {
        "totalSize": 1,
        "done": True,
        "records": [
            {
                "attributes": {
                    "type": "EntityDefinition",
                    "url": f"{T}/sobjects/EntityDefinition/Account",
                },
                "Id": "000000000000000AAA",
                "DurableId": "Account",
                "QualifiedApiName": "Account",
                "Label": "Account",
                "PluralLabel": "Accounts",
                "KeyPrefix": "001",
                "IsCustomSetting": False,
            }
        ],
    }


# (field, DataType, IsNillable, IsApiFilterable, IsApiSortable, IsApiGroupable) of Case.
CASE_FIELDS = [
    ("Id", "Lookup()", False, True, True, True),
    ("Subject", "Text(255)", True, True, True, True),
    ("Description", "Long Text Area(32000)", True, False, False, False),
    ("Status", "Picklist", True, True, True, True),
    ("IsEscalated", "Checkbox", False, True, True, True),
    ("ClosedDate", "Date/Time", True, True, True, False),
    ("AccountId", "Lookup(Account)", True, True, True, True),
    ("OwnerId", "Lookup(Group,User)", False, True, True, True),
]


@pytest.mark.parametrize(
    ("name", "data_type", "nillable", "filterable", "sortable", "groupable"), CASE_FIELDS
)
def test_a_field_definition_says_what_describe_says(
    api: TestClient,
    name: str,
    data_type: str,
    nillable: bool,
    filterable: bool,
    sortable: bool,
    groupable: bool,
) -> None:
    soql = (
        "SELECT DurableId, DataType, IsNillable, IsApiFilterable, IsApiSortable, IsApiGroupable,"
        " EntityDefinition.QualifiedApiName FROM FieldDefinition"
        f" WHERE EntityDefinition.QualifiedApiName = 'Case' AND QualifiedApiName = '{name}'"
    )
    [row] = tooling_query(api, soql).json()["records"]
    assert row == {
        "attributes": {
            "type": "FieldDefinition",
            "url": f"{T}/sobjects/FieldDefinition/Case.{name}",
        },
        "DurableId": f"Case.{name}",
        "DataType": data_type,
        "IsNillable": nillable,
        "IsApiFilterable": filterable,
        "IsApiSortable": sortable,
        "IsApiGroupable": groupable,
        "EntityDefinition": {
            "attributes": {
                "type": "EntityDefinition",
                "url": f"{T}/sobjects/EntityDefinition/Case",
            },
            "QualifiedApiName": "Case",
        },
    }
    described = {f["name"]: f for f in api.get(f"{V}/sobjects/Case/describe").json()["fields"]}
    field = described[name]
    assert (field["nillable"], field["filterable"], field["sortable"], field["groupable"]) == (
        nillable,
        filterable,
        sortable,
        groupable,
    )


def test_every_field_of_every_object_has_its_definition(api: TestClient) -> None:
    """FieldDefinition holds each object's fields as describe lists them, in name order."""
    described = api.get(f"{V}/sobjects").json()["sobjects"]
    for entry in described[:8]:
        name = entry["name"]
        fields = [f["name"] for f in api.get(f"{V}/sobjects/{name}/describe").json()["fields"]]
        soql = (
            "SELECT QualifiedApiName FROM FieldDefinition"
            f" WHERE EntityDefinition.QualifiedApiName = '{name}' ORDER BY QualifiedApiName"
        )
        rows = [r["QualifiedApiName"] for r in tooling_query(api, soql).json()["records"]]
        assert rows == sorted(fields, key=str.upper), name


def test_an_entity_lists_its_fields_as_a_child_relationship(api: TestClient) -> None:
    soql = (
        "SELECT QualifiedApiName, (SELECT QualifiedApiName FROM Fields WHERE DataType = 'Checkbox'"
        " ORDER BY QualifiedApiName) FROM EntityDefinition WHERE QualifiedApiName = 'Case'"
    )
    [row] = tooling_query(api, soql).json()["records"]
    names = [child["QualifiedApiName"] for child in row["Fields"]["records"]]
    assert names == ["IsClosed", "IsDeleted", "IsEscalated"]


def test_custom_objects_and_fields_are_rows_with_ids(api: TestClient) -> None:
    objects = tooling_query(api, "SELECT Id, DeveloperName FROM CustomObject").json()
    by_name = {r["DeveloperName"]: r["Id"] for r in objects["records"]}
    assert set(by_name) == {"CaseHistory", "Issue"}
    assert all(
        record_id.startswith("01I") and len(record_id) == 18 for record_id in by_name.values()
    )
    history = by_name["CaseHistory"][:15]
    fields = tooling_query(
        api, f"SELECT DeveloperName FROM CustomField WHERE TableEnumOrId = '{history}'"
    ).json()["records"]
    assert "CaseId" in {f["DeveloperName"] for f in fields}
    on_case = tooling_query(
        api, "SELECT DeveloperName FROM CustomField WHERE TableEnumOrId = 'Case'"
    ).json()["records"]
    assert "IssueId" in {f["DeveloperName"] for f in on_case}
    entity = tooling_query(
        api, "SELECT DurableId FROM EntityDefinition WHERE QualifiedApiName = 'Issue__c'"
    ).json()["records"]
    assert entity[0]["DurableId"] == by_name["Issue"][:15]


def test_a_fresh_org_has_no_apex(api: TestClient) -> None:
    assert tooling_query(api, "SELECT Id, Name FROM ApexClass").json() == {
        "totalSize": 0,
        "done": True,
        "records": [],
    }
    assert tooling_query(api, "SELECT COUNT() FROM ApexTrigger").json()["totalSize"] == 0


REFUSED = [
    (
        "SELECT Id FROM FieldDefinition",
        "FieldDefinition: a filter on a reified column is required.",
    ),
    (
        "SELECT Id FROM FieldDefinition WHERE DataType = 'Checkbox'",
        "FieldDefinition: a filter on a reified column is required.",
    ),
    ("SELECT COUNT() FROM EntityDefinition", NO_AGGREGATES),
    (
        "SELECT COUNT(QualifiedApiName), IsSearchable FROM EntityDefinition GROUP BY IsSearchable",
        NO_AGGREGATES,
    ),
    (
        "SELECT QualifiedApiName FROM EntityDefinition WHERE QualifiedApiName != 'Account'",
        "Only equals comparisons permitted",
    ),
    (
        "SELECT QualifiedApiName FROM EntityDefinition WHERE NOT QualifiedApiName = 'Account'",
        "Only equals comparisons permitted",
    ),
    (
        "SELECT QualifiedApiName FROM EntityDefinition WHERE QualifiedApiName NOT IN ('Case')",
        "Only equals comparisons permitted",
    ),
    (
        "SELECT QualifiedApiName FROM EntityDefinition"
        " WHERE QualifiedApiName = 'Case' OR QualifiedApiName = 'Account'",
        "Disjunctions not supported",
    ),
    (
        "SELECT ComplianceGroup FROM FieldDefinition"
        " WHERE EntityDefinitionId = 'Account' AND ComplianceGroup INCLUDES ('GDPR')",
        "Unsupported filter type",
    ),
]


@pytest.mark.parametrize(("soql", "message"), REFUSED)
def test_what_a_virtual_entity_refuses(api: TestClient, soql: str, message: str) -> None:
    response = tooling_query(api, soql)
    assert response.status_code == 400
    assert response.json() == [{"message": message, "errorCode": UNSUPPORTED}]


def test_an_unknown_tooling_object_is_the_query_languages_error(api: TestClient) -> None:
    response = tooling_query(api, "SELECT Id FROM Account")
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_TYPE"


def test_later_batches_are_under_the_tooling_path(api: TestClient) -> None:
    soql = "SELECT DurableId FROM FieldDefinition WHERE EntityDefinition.IsQueryable = true"
    first = tooling_query(api, soql, **{"Sforce-Query-Options": "batchSize=200"}).json()
    assert first["done"] is False and len(first["records"]) == 200
    assert first["nextRecordsUrl"].startswith(f"{T}/query/")
    second = api.get(first["nextRecordsUrl"]).json()
    assert second["totalSize"] == first["totalSize"]
    seen = {r["DurableId"] for r in first["records"]} | {r["DurableId"] for r in second["records"]}
    assert len(seen) == len(first["records"]) + len(second["records"])


def test_query_all_reads_the_same_rows(api: TestClient) -> None:
    soql = "SELECT DurableId FROM EntityDefinition WHERE QualifiedApiName = 'Case'"
    response = api.get(f"{T}/queryAll", params={"q": soql})
    assert response.status_code == 200
    assert [r["DurableId"] for r in response.json()["records"]] == ["Case"]


def test_global_describe_and_describe(api: TestClient) -> None:
    listed = api.get(f"{T}/sobjects").json()
    assert {o["name"] for o in listed["sobjects"]} == {
        "ApexClass",
        "ApexTrigger",
        "CustomField",
        "CustomObject",
        "EntityDefinition",
        "FieldDefinition",
        "StaticResource",
    }
    entity = next(o for o in listed["sobjects"] if o["name"] == "EntityDefinition")
    assert entity["urls"]["describe"] == f"{T}/sobjects/EntityDefinition/describe"
    described = api.get(f"{T}/sobjects/fielddefinition/describe").json()
    assert described["name"] == "FieldDefinition"
    assert described["childRelationships"] == []
    lookup = next(f for f in described["fields"] if f["name"] == "EntityDefinitionId")
    assert (lookup["referenceTo"], lookup["relationshipName"]) == (
        ["EntityDefinition"],
        "EntityDefinition",
    )
    info = api.get(f"{T}/sobjects/ApexClass").json()
    assert info == {"objectDescribe": info["objectDescribe"], "recentItems": []}
    assert info["objectDescribe"]["keyPrefix"] == "01p"


def test_a_record_is_retrieved_by_its_durable_id(api: TestClient) -> None:
    response = api.get(f"{T}/sobjects/FieldDefinition/Case.Subject", params={"fields": "DataType"})
    assert response.status_code == 200
    assert response.json() == {
        "attributes": {
            "type": "FieldDefinition",
            "url": f"{T}/sobjects/FieldDefinition/Case.Subject",
        },
        "DataType": "Text(255)",
        "Id": "000000000000000AAA",
    }
    missing = api.get(f"{T}/sobjects/EntityDefinition/NoSuchObject")
    assert missing.status_code == 404
    assert missing.json() == [
        {"message": "The requested resource does not exist", "errorCode": "NOT_FOUND"}
    ]
    unknown = api.get(f"{T}/sobjects/Account/describe")
    assert unknown.status_code == 404


def test_tooling_reads_need_a_session(client: TestClient) -> None:
    response = client.get(f"{T}/query", params={"q": "SELECT Id FROM ApexClass"})
    assert response.status_code == 401
    assert response.json()[0]["errorCode"] == "INVALID_SESSION_ID"
