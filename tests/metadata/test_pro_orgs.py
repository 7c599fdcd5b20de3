"""The CRMArena-Pro orgs (b2b, b2c): their 27 objects against the reference schema JSON, and
the standard objects and fields every org has besides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.config import REPO_ROOT, Settings
from app.main import create_app
from app.metadata.describe import describe_global, describe_sobject
from app.metadata.loader import STANDARD_OBJECTS_DIR, with_address_parts
from app.metadata.model import FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import GENERATORS

ORGS = ["b2b", "b2c"]
REGISTRIES = {
    org: SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / org / "objects")
    for org in ORGS
}
SCHEMA_JSON = Path("/work/shared/reference/crmarena-schema.json")
# The standard objects of every org and their standard fields (app/metadata/standard_objects).
STANDARD = {  # the standard objects' fields, an address's parts among them
    raw["name"]: set(with_address_parts(raw["fields"]))
    for raw in (yaml.safe_load(path.read_text()) for path in STANDARD_OBJECTS_DIR.glob("*.yaml"))
}
BASE = "/services/data/v59.0"

PRO_OBJECTS = [
    "Account", "Case", "CaseHistory__c", "Contact", "Contract", "EmailMessage", "Event",
    "Issue__c", "Knowledge__kav", "Lead", "LiveChatTranscript", "Opportunity",
    "OpportunityLineItem", "Order", "OrderItem", "Pricebook2", "PricebookEntry", "Product2",
    "ProductCategory", "ProductCategoryProduct", "Quote", "QuoteLineItem", "Task", "Territory2",
    "User", "UserTerritory2Association", "VoiceCallTranscript__c",
]  # fmt: skip
# The standard objects every org has, which the Pro orgs define none of themselves.
STANDARD_ONLY = [
    "Campaign", "Group", "Organization", "Profile", "RecordType", "StaticResource", "UserRole",
]  # fmt: skip
OBJECTS = sorted(PRO_OBJECTS + STANDARD_ONLY)

# Key prefixes, the same in both orgs. Issue__c (a03) and VoiceCallTranscript__c (a05) were
# observed in the B2B org; CaseHistory__c's was not, a04 is our choice.
KEY_PREFIXES = {
    "User": "005", "Account": "001", "Contact": "003", "Case": "500", "Knowledge__kav": "ka0",
    "ProductCategory": "0ZG", "Product2": "01t", "ProductCategoryProduct": "0ZH",
    "Pricebook2": "01s", "PricebookEntry": "01u", "Order": "801", "OrderItem": "802",
    "EmailMessage": "02s", "LiveChatTranscript": "570", "Issue__c": "a03",
    "CaseHistory__c": "a04", "Opportunity": "006", "OpportunityLineItem": "00k", "Quote": "0Q0",
    "QuoteLineItem": "0QL", "Contract": "800", "VoiceCallTranscript__c": "a05", "Task": "00T",
    "Event": "00U", "Territory2": "0MI", "UserTerritory2Association": "0R0", "Lead": "00Q",
    "Campaign": "701", "Group": "00G", "Organization": "00D", "Profile": "00e",
    "RecordType": "012", "UserRole": "00E", "StaticResource": "081",
}  # fmt: skip

# Lookup targets that are not queryable objects of the org (as in the original org): the field
# keeps Salesforce's referenceTo, the target simply resolves to nothing.
SUPPORTING_OBJECTS = {
    "LiveChatVisitor", "ProductCatalog", "Knowledge__ka", "Territory2Model", "Territory2Type",
}  # fmt: skip

# Deliberate type deviations from the JSON: (object, field) -> the type we use instead.
TYPE_DEVIATIONS: dict[tuple[str, str], FieldType] = {
    # A combobox in a real org (app/metadata/field_properties/Event.yaml, its source).
    ("Event", "Subject"): FieldType.COMBOBOX,
    # A combobox in the Object Reference (app/metadata/field_properties/Task.yaml, its source).
    ("Task", "Subject"): FieldType.COMBOBOX,
}

# Deliberate relationshipName deviations: a real org's describe gives this one none
# (app/metadata/field_properties/Opportunity.yaml, its source).
RELATIONSHIP_DEVIATIONS: dict[tuple[str, str], str | None] = {("Opportunity", "ContactId"): None}
UNTRAVERSABLE = {
    ("Knowledge__kav", "KnowledgeArticleId"),
    ("UserRole", "ParentRoleId"),
    ("Opportunity", "ContactId"),
    ("Event", "RecurrenceActivityId"),  # no relationship name in a real org's describe either
    ("Task", "RecurrenceActivityId"),  # as Event's
}

# Deliberate referenceTo deviations: (object, field) -> what we list instead of the JSON's.
REFERENCE_DEVIATIONS: dict[tuple[str, str], tuple[str, ...]] = {
    # Polymorphic in Salesforce; the Pro data only points them at opportunities.
    ("Task", "WhatId"): ("Account", "Case", "Contract", "Opportunity", "Order", "Quote"),
    ("Event", "WhatId"): ("Account", "Case", "Contract", "Opportunity", "Order", "Quote"),
    # Queues can own these in Salesforce (the original org's YAMLs say the same).
    ("Task", "OwnerId"): ("Group", "User"),
    ("Order", "OwnerId"): ("Group", "User"),
    ("Lead", "OwnerId"): ("Group", "User"),
    ("LiveChatTranscript", "OwnerId"): ("Group", "User"),
}

# Fields the orgs carry that the JSON does not give for that org: standard Salesforce fields
# (owners, auto-numbers, the compound Lead.Name) and the original org's fields carried over.
COMMON_EXTRA_FIELDS = {
    ("Account", "OwnerId"), ("Contact", "OwnerId"), ("Contract", "ContractNumber"),
    ("Contract", "OwnerId"), ("EmailMessage", "Incoming"), ("Issue__c", "OwnerId"),
    ("Lead", "Name"), ("LiveChatTranscript", "Name"), ("LiveChatTranscript", "StartTime"),
    ("LiveChatTranscript", "Status"), ("OrderItem", "OrderItemNumber"),
    ("ProductCategory", "Description"), ("Quote", "QuoteNumber"), ("QuoteLineItem", "LineNumber"),
    ("UserTerritory2Association", "IsActive"), ("VoiceCallTranscript__c", "OwnerId"),
}  # fmt: skip
EXTRA_FIELDS = {
    "b2b": COMMON_EXTRA_FIELDS,
    # Salesforce requires Contact.LastName and builds Name from FirstName and LastName.
    "b2c": COMMON_EXTRA_FIELDS | {("Contact", "FirstName"), ("Contact", "LastName")},
}


def _schema() -> dict[str, Any]:
    if not SCHEMA_JSON.is_file():
        pytest.skip("the CRMArena reference schema is not available here")
    data: dict[str, Any] = json.loads(SCHEMA_JSON.read_text(encoding="utf-8"))
    return data


def _json_fields(org: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (sobject, spec)
        for sobject, fields in _schema()["objects"].items()
        for spec in fields
        if org in spec["orgs"]
    ]


def _get(org: str, name: str) -> SObjectDef:
    sobject = REGISTRIES[org].get(name)
    assert sobject is not None, (org, name)
    return sobject


def _fields(org: str, name: str) -> set[str]:
    return {f.name for f in _get(org, name).fields}


@pytest.mark.parametrize("org", ORGS)
def test_each_pro_org_has_its_27_objects_and_the_standard_ones(org: str) -> None:
    assert [o.name for o in REGISTRIES[org]] == OBJECTS


@pytest.mark.parametrize("org", ORGS)
def test_key_prefixes_are_the_observed_ones_and_unique(org: str) -> None:
    registry = REGISTRIES[org]
    assert {o.name: o.key_prefix for o in registry} == KEY_PREFIXES
    assert len({o.key_prefix for o in registry}) == len(registry)
    assert all(len(o.key_prefix) == 3 for o in registry)


@pytest.mark.parametrize("org", ORGS)
def test_every_field_of_the_reference_schema_exists_with_its_type(org: str) -> None:
    for sobject_name, spec in _json_fields(org):
        field = _get(org, sobject_name).field(spec["name"])
        assert field is not None, (org, sobject_name, spec["name"])
        assert field.name == spec["name"], (org, sobject_name, spec["name"])
        key = (sobject_name, spec["name"])
        wanted = TYPE_DEVIATIONS.get(key, FieldType(spec["type"]))
        assert field.type is wanted, (org, key, field.type)
        if spec.get("reference_to"):
            targets = REFERENCE_DEVIATIONS.get(key, tuple(spec["reference_to"]))
            assert set(field.reference_to) == set(targets), (org, key, field.reference_to)
        if spec.get("relationship_name"):
            wanted_name = RELATIONSHIP_DEVIATIONS.get(key, spec["relationship_name"])
            assert field.relationship_name == wanted_name, (org, key)
        for value in spec.get("picklist") or []:
            if value != "...":
                assert field.allows_picklist_value(value), (org, key, value)


@pytest.mark.parametrize("org", ORGS)
def test_fields_beyond_the_reference_schema_are_the_listed_ones(org: str) -> None:
    known = {(sobject, spec["name"]) for sobject, spec in _json_fields(org)}
    extra = {
        (sobject.name, field.name)
        for sobject in REGISTRIES[org]
        for field in sobject.fields
        if not field.system
        and (sobject.name, field.name) not in known
        and field.name not in STANDARD.get(sobject.name, set())
    }
    standard = {(name, field) for name, fields in STANDARD.items() for field in fields}
    assert extra == EXTRA_FIELDS[org] - standard


def test_account_is_a_business_account_in_b2b_and_a_person_account_in_b2c() -> None:
    b2b, b2c = _get("b2b", "Account"), _get("b2c", "Account")
    business = {"Name", "Phone", "Industry", "Description", "NumberOfEmployees", "ShippingState"}
    person = {"FirstName", "LastName", "PersonEmail", "IsPersonAccount"}
    assert business <= _fields("b2b", "Account")
    assert not person & _fields("b2b", "Account")
    assert b2b.compound_name is None
    assert {"Name", "Phone", "Description", "ShippingState"} | person <= _fields("b2c", "Account")
    assert b2c.compound_name is not None and not b2c.compound_name.always


def test_contact_fields_differ_by_org() -> None:
    assert {"FirstName", "LastName", "Email", "AccountId", "Name"} <= _fields("b2b", "Contact")
    # B2C: only AccountId in the agent schema; LastName stays because Salesforce requires it.
    assert "AccountId" in _fields("b2c", "Contact")
    last_name = _get("b2c", "Contact").field("LastName")
    assert last_name is not None and last_name.required


def test_b2b_only_fields() -> None:
    assert "CompanySignedDate" in _fields("b2b", "Contract")
    assert "CompanySignedDate" not in _fields("b2c", "Contract")
    # Every org has Lead.Company; one without person accounts requires it.
    b2b_company, b2c_company = (
        _get("b2b", "Lead").field("Company"),
        _get("b2c", "Lead").field("Company"),
    )
    assert b2b_company is not None and b2b_company.required
    assert b2c_company is not None and not b2c_company.required


@pytest.mark.parametrize("org", ORGS)
def test_fields_the_pro_orgs_gained(org: str) -> None:
    order = _get(org, "Order").field("OwnerId")
    assert order is not None and "User" in order.reference_to
    related = _get(org, "EmailMessage").field("RelatedToId")
    assert related is not None and set(related.reference_to) == {"Case", "Opportunity"}
    assert "Description__c" in _fields(org, "Issue__c")
    transcript = _fields(org, "VoiceCallTranscript__c")
    assert "Body__c" in transcript and "TranscriptBody__c" not in transcript
    priority = _get(org, "Task").field("Priority")
    assert priority is not None
    assert all(priority.allows_picklist_value(v) for v in ("Normal", "Low", "High"))
    opportunity = _get(org, "Opportunity")
    for name in ("IsClosed", "IsWon"):
        flag = opportunity.field(name)
        assert flag is not None and flag.type is FieldType.BOOLEAN and flag.calculated


@pytest.mark.parametrize("org", ORGS)
def test_the_fields_crmarena_tools_need_exist(org: str) -> None:
    knowledge = _get(org, "Knowledge__kav")
    publish = knowledge.field("PublishStatus")
    assert publish is not None and publish.allows_picklist_value("Online")
    language = knowledge.field("Language")
    assert language is not None and language.allows_picklist_value("en_US")
    assert _get(org, "EmailMessage").field("ToAddress") is not None
    for name in ("User", "Contact", "Lead"):
        compound = _get(org, name).compound_name
        assert compound is not None and compound.always, (org, name)


@pytest.mark.parametrize("org", ORGS)
def test_every_reference_target_resolves(org: str) -> None:
    registry = REGISTRIES[org]
    for sobject in registry:
        for field in sobject.fields:
            if field.type is FieldType.REFERENCE:
                assert field.reference_to, (org, sobject.name, field.name)
                # Knowledge__kav.KnowledgeArticleId is not traversable (as in the original org),
                # nor are UserRole.ParentRoleId and Opportunity.ContactId (RELATIONSHIP_DEVIATIONS).
                if (sobject.name, field.name) not in UNTRAVERSABLE:
                    assert field.relationship_name, (org, sobject.name, field.name)
            for target in field.reference_to:
                assert registry.get(target) is not None or target in SUPPORTING_OBJECTS, (
                    org,
                    sobject.name,
                    field.name,
                    target,
                )
            if field.child_relationship_name:
                assert field.reference_to, (org, sobject.name, field.name)


@pytest.mark.parametrize("org", ORGS)
def test_child_relationships_resolve_and_are_unique(org: str) -> None:
    registry = REGISTRIES[org]
    for parent in registry:
        names = [c.relationship_name for c in parent.child_relationships]
        assert len(names) == len(set(names)), (org, parent.name, names)
        for child in parent.child_relationships:
            child_def = registry.get(child.child_sobject)
            assert child_def is not None
            field = child_def.field(child.field)
            assert field is not None and parent.name in field.reference_to


STANDARD_CHILDREN = [
    ("Account", "Cases", "Case"),
    ("Account", "Contacts", "Contact"),
    ("Account", "Orders", "Order"),
    ("Account", "Opportunities", "Opportunity"),
    ("Account", "Contracts", "Contract"),
    ("Order", "OrderItems", "OrderItem"),
    ("Case", "EmailMessages", "EmailMessage"),
    ("Case", "CaseHistories__r", "CaseHistory__c"),
    ("Opportunity", "OpportunityLineItems", "OpportunityLineItem"),
    ("Opportunity", "Quotes", "Quote"),
    ("Opportunity", "Tasks", "Task"),
    ("Opportunity", "Events", "Event"),
    ("Opportunity", "Emails", "EmailMessage"),
    ("Opportunity", "VoiceCallTranscripts__r", "VoiceCallTranscript__c"),
    ("Lead", "VoiceCallTranscripts__r", "VoiceCallTranscript__c"),
    ("Contract", "Opportunities__r", "Opportunity"),
    ("Contract", "Orders", "Order"),
    ("Quote", "QuoteLineItems", "QuoteLineItem"),
    ("Territory2", "UserTerritory2Associations", "UserTerritory2Association"),
]


@pytest.mark.parametrize("org", ORGS)
@pytest.mark.parametrize(("parent", "relationship", "child"), STANDARD_CHILDREN)
def test_standard_child_relationship_names(
    org: str, parent: str, relationship: str, child: str
) -> None:
    children = {
        (c.relationship_name, c.child_sobject) for c in _get(org, parent).child_relationships
    }
    assert (relationship, child) in children


@pytest.mark.parametrize("org", ORGS)
def test_describe_reports_the_pro_objects(org: str) -> None:
    registry = REGISTRIES[org]
    names = [entry["name"] for entry in describe_global(list(registry), BASE)["sobjects"]]
    assert sorted(names) == OBJECTS
    described = describe_sobject(_get(org, "Opportunity"), BASE, "https://example.test")
    fields = {f["name"]: f for f in described["fields"]}
    assert fields["ContractID__c"]["referenceTo"] == ["Contract"]
    assert fields["ContractID__c"]["custom"] is True
    assert fields["StageName"]["type"] == "picklist"
    children = {c["relationshipName"] for c in described["childRelationships"]}
    assert {"OpportunityLineItems", "Quotes", "Tasks", "VoiceCallTranscripts__r"} <= children
    email = {
        f["name"]: f
        for f in describe_sobject(_get(org, "EmailMessage"), BASE, "https://example.test")["fields"]
    }
    assert email["RelatedToId"]["polymorphicForeignKey"] is True


def _one_user(seed: int) -> dict[str, list[dict[str, Any]]]:
    """A stand-in for the b2b generator: the org's admin and nothing else."""
    return {
        "User": [
            {
                "Id": "005000000000001AAA",
                "Username": f"admin{seed}@b2b.example",
                "FirstName": "Ada",
                "LastName": "Admin",
                "Alias": "aadmin",
                "Email": "admin@b2b.example",
                "ProfileId": "00e000000000001AAA",
                "TimeZoneSidKey": "America/Los_Angeles",
                "LocaleSidKey": "en_US",
                "EmailEncodingKey": "UTF-8",
                "LanguageLocaleKey": "en_US",
            }
        ]
    }


def test_the_app_serves_describe_for_a_b2b_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if "b2b" not in GENERATORS:
        monkeypatch.setitem(GENERATORS, "b2b", _one_user)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'b2b.db'}", data_dir=tmp_path, org="b2b", seed=42
    )
    with TestClient(create_app(settings), base_url="https://testserver") as client:
        login = client.post(
            "/services/oauth2/token",
            data={"grant_type": "password", "username": "agent@example.com", "password": "x"},
        )
        assert login.status_code == 200, login.text
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        described = client.get(f"{BASE}/sobjects/Opportunity/describe", headers=headers)
        listed = client.get(f"{BASE}/sobjects", headers=headers)
    assert described.status_code == 200, described.text
    assert described.json()["keyPrefix"] == "006"
    fields = {f["name"] for f in described.json()["fields"]}
    assert {"StageName", "ContractID__c", "IsWon"} <= fields
    assert listed.status_code == 200, listed.text
    assert sorted(o["name"] for o in listed.json()["sobjects"]) == OBJECTS
