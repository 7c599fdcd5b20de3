"""The Metadata API's reads (`/services/Soap/m/`): describeMetadata, listMetadata and
readMetadata of CustomObject and CustomField, computed from the schema describe serves."""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

import pytest
from fastapi.testclient import TestClient

from app.api.soap_metadata import element_values
from tests.api.test_soap import call, fault  # a fixture
from tests.api.test_soap import session_id as session_id

METADATA = "/services/Soap/m/59.0"
M = "http://soap.sforce.com/2006/04/metadata"
NS = {"m": M, "xsi": "http://www.w3.org/2001/XMLSchema-instance"}


def metadata_call(client: TestClient, session: str, body: str) -> tuple[int, Element]:
    return call(client, session, body, path=METADATA)


def results(root: Element, operation: str) -> list[Element]:
    return root.findall(f".//m:{operation}Response/m:result", NS)


def as_dict(element: Element) -> dict[str, Any]:
    found: dict[str, Any] = element_values(element)
    return found


def test_describe_metadata_lists_the_types_served(client: TestClient, session_id: str) -> None:
    status, root = metadata_call(
        client,
        session_id,
        f'<describeMetadata xmlns="{M}"><asOfVersion>59.0</asOfVersion></describeMetadata>',
    )
    assert status == 200
    [result] = results(root, "describeMetadata")
    described = as_dict(result)
    objects = {o["xmlName"]: o for o in described["metadataObjects"]}
    assert objects["CustomObject"] == {
        "childXmlNames": "CustomField",
        "directoryName": "objects",
        "inFolder": "false",
        "metaFile": "false",
        "suffix": "object",
        "xmlName": "CustomObject",
    }
    assert set(objects) == {"CustomObject", "ApexClass", "ApexTrigger"}
    assert described["partialSaveAllowed"] == "true"


def test_list_metadata_lists_objects_and_custom_fields(client: TestClient, session_id: str) -> None:
    body = (
        f'<listMetadata xmlns="{M}"><queries><type>CustomObject</type></queries>'
        "<queries><type>CustomField</type></queries><asOfVersion>59.0</asOfVersion></listMetadata>"
    )
    status, root = metadata_call(client, session_id, body)
    assert status == 200
    listed = [as_dict(r) for r in results(root, "listMetadata")]
    by_name = {(r["type"], r["fullName"]): r for r in listed}
    account = by_name[("CustomObject", "Account")]
    assert account == {
        "createdById": "",
        "createdByName": "",
        "createdDate": "1970-01-01T00:00:00.000Z",
        "fileName": "objects/Account.object",
        "fullName": "Account",
        "id": "",
        "lastModifiedById": "",
        "lastModifiedByName": "",
        "lastModifiedDate": "1970-01-01T00:00:00.000Z",
        "type": "CustomObject",
    }
    issue = by_name[("CustomObject", "Issue__c")]
    assert str(issue["id"]).startswith("01I") and issue["manageableState"] == "unmanaged"
    field = by_name[("CustomField", "Case.IssueId__c")]
    assert field["fileName"] == "objects/Case.object"
    assert str(field["id"]).startswith("00N")
    assert all(not name.startswith("Case.Subject") for _, name in by_name)


def test_list_and_tooling_give_the_same_ids(
    client: TestClient, api: TestClient, session_id: str
) -> None:
    body = f'<listMetadata xmlns="{M}"><queries><type>CustomField</type></queries></listMetadata>'
    _, root = metadata_call(client, session_id, body)
    listed = {str(as_dict(r)["id"]) for r in results(root, "listMetadata")}
    rows = api.get("/services/data/v59.0/tooling/query", params={"q": "SELECT Id FROM CustomField"})
    assert listed == {row["Id"] for row in rows.json()["records"]}


def test_read_metadata_of_a_custom_object_and_field(client: TestClient, session_id: str) -> None:
    body = (
        f'<readMetadata xmlns="{M}"><type>CustomObject</type><fullNames>Issue__c</fullNames>'
        "<fullNames>NoSuch__c</fullNames></readMetadata>"
    )
    status, root = metadata_call(client, session_id, body)
    assert status == 200
    [result] = results(root, "readMetadata")
    issue, missing = result.findall("m:records", NS)
    assert issue.get(f"{{{NS['xsi']}}}type") == "CustomObject"
    assert as_dict(issue) == {
        "fullName": "Issue__c",
        "deploymentStatus": "Deployed",
        "enableSearch": "true",
        "label": "Issue",
        "nameField": {"label": "Issue Name", "type": "Text"},
        "pluralLabel": "Issues",
        "sharingModel": "ReadWrite",
    }
    assert missing.get(f"{{{NS['xsi']}}}nil") == "true"

    body = (
        f'<readMetadata xmlns="{M}"><type>CustomField</type>'
        "<fullNames>CaseHistory__c.CaseId__c</fullNames>"
        "<fullNames>Case.IssueId__c</fullNames></readMetadata>"
    )
    _, root = metadata_call(client, session_id, body)
    master, text = results(root, "readMetadata")[0].findall("m:records", NS)
    assert as_dict(master) == {
        "fullName": "CaseHistory__c.CaseId__c",
        "externalId": "false",
        "label": "Case",
        "referenceTo": "Case",
        "relationshipLabel": "Case Histories",
        "relationshipName": "CaseHistories",
        "type": "MasterDetail",
    }
    assert as_dict(text) == {
        "fullName": "Case.IssueId__c",
        "externalId": "false",
        "label": "Issue Id",
        "length": "18",
        "required": "false",
        "type": "Text",
        "unique": "false",
    }


@pytest.mark.parametrize("type_name", ["Layout", "Flow"])
def test_a_type_not_modelled_is_refused_by_name(
    client: TestClient, session_id: str, type_name: str
) -> None:
    body = f'<listMetadata xmlns="{M}"><queries><type>{type_name}</type></queries></listMetadata>'
    status, root = metadata_call(client, session_id, body)
    assert status == 500
    assert fault(root)[1] == "FUNCTIONALITY_NOT_ENABLED"
    assert f"the Metadata API's {type_name} components" in str(root.findtext(".//faultstring"))


def test_apex_components_are_none(client: TestClient, session_id: str) -> None:
    body = f'<listMetadata xmlns="{M}"><queries><type>ApexClass</type></queries></listMetadata>'
    status, root = metadata_call(client, session_id, body)
    assert status == 200
    assert results(root, "listMetadata") == []
