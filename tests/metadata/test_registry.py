from __future__ import annotations

from app.config import REPO_ROOT
from app.metadata.loader import label_from_name
from app.metadata.model import FieldType
from app.metadata.registry import SchemaRegistry

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")


def test_the_original_org_has_its_16_objects_and_the_standard_ones() -> None:
    assert [o.name for o in REGISTRY] == [
        "Account", "Campaign", "Case", "CaseHistory__c", "Contact", "EmailMessage", "Event",
        "Group", "Issue__c", "Knowledge__kav", "Lead", "LiveChatTranscript", "Opportunity",
        "Order", "OrderItem", "Organization", "Pricebook2", "PricebookEntry", "Product2",
        "ProductCategory", "ProductCategoryProduct", "Profile", "RecordType", "StaticResource",
        "Task", "User", "UserRole",
    ]  # fmt: skip


def test_an_org_definition_adds_to_the_standard_one_and_wins() -> None:
    account = REGISTRY.get("Account")
    assert account is not None
    names = [f.name for f in account.fields if not f.system]
    # The org's own fields first, in its order; then the standard fields it does not define.
    assert names[:3] == ["Name", "FirstName", "LastName"]
    assert {"BillingState", "NumberOfEmployees", "Industry", "ParentId"} <= set(names)
    own = account.field("ShippingState")
    assert own is not None and own.length == 80
    assert names.count("Description") == 1


def test_object_flags_come_from_the_definition() -> None:
    organization = REGISTRY.get("Organization")
    assert organization is not None
    assert (organization.createable, organization.updateable, organization.deletable) == (
        False,
        True,
        False,
    )
    account = REGISTRY.get("Account")
    assert account is not None and account.createable and account.deletable


def test_every_object_has_the_system_fields() -> None:
    system = ["Id", "IsDeleted", "CreatedDate", "CreatedById", "LastModifiedDate",
              "LastModifiedById", "SystemModstamp"]  # fmt: skip
    for sobject in REGISTRY:
        assert [f.name for f in sobject.fields if f.system] == system
        assert sobject.fields[0].type is FieldType.ID


def test_lookups_are_case_insensitive() -> None:
    item = REGISTRY.get("orderitem")
    assert item is not None and item.name == "OrderItem"
    field = item.field("PriceBookEntryId")
    assert field is not None and field.name == "PricebookEntryId"
    assert item.field_by_relationship("order") is not None
    assert REGISTRY.by_key_prefix("500") is REGISTRY.get("Case")


def test_child_relationships_are_derived_from_lookups() -> None:
    account = REGISTRY.get("Account")
    assert account is not None
    children = {(c.relationship_name, c.child_sobject) for c in account.child_relationships}
    assert {("Contacts", "Contact"), ("Cases", "Case"), ("Orders", "Order")} <= children


def test_the_fields_crmarena_tools_need_exist() -> None:
    knowledge = REGISTRY.get("Knowledge__kav")
    email = REGISTRY.get("EmailMessage")
    assert knowledge is not None and email is not None
    publish = knowledge.field("PublishStatus")
    assert publish is not None and publish.allows_picklist_value("Online")
    assert knowledge.field("Language") is not None
    assert email.field("ToAddress") is not None


def test_labels_come_from_names() -> None:
    assert label_from_name("ShippingCity") == "Shipping City"
    assert label_from_name("AccountId") == "Account ID"
    assert label_from_name("FAQ_Answer__c") == "FAQ Answer"


def test_objects_sosl_leaves_out_are_not_searchable() -> None:
    unsearchable = {o.name for o in REGISTRY if not o.searchable}
    assert unsearchable == {
        "PricebookEntry",
        "OrderItem",
        "ProductCategoryProduct",
        # standard objects of the platform, not of the org's business
        "Organization",
        "Group",
        "Profile",
        "UserRole",
        "RecordType",
        "StaticResource",
    }
