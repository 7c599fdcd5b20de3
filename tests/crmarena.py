"""Facts about the CRMArena orgs (the original one and the Pro orgs b2b and b2c) that several
tests check against, and the checks every generated org's records must pass."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

from app.config import REPO_ROOT
from app.metadata.model import FieldType
from app.metadata.registry import SchemaRegistry
from app.storage.ids import make_id, normalize_id

Records = dict[str, list[dict[str, Any]]]

# Record counts of the CRMArena dump (crmarena_data.db), 41,081 rows in all.
CRMARENA_COUNTS = {
    "User": 152,
    "Account": 201,
    "Contact": 208,
    "Case": 977,
    "Knowledge__kav": 45,
    "ProductCategory": 12,
    "Product2": 501,
    "ProductCategoryProduct": 762,
    "Pricebook2": 46,
    "PricebookEntry": 22000,
    "Order": 2069,
    "OrderItem": 7100,
    "EmailMessage": 3241,
    "LiveChatTranscript": 774,
    "Issue__c": 10,
    "CaseHistory__c": 2983,
}


# CRMArena-Pro paper, Table 6: record counts of the B2B and B2C orgs, in that order.
PRO_PUBLISHED_COUNTS = {
    "User": (212, 212), "Account": (101, 200), "Contact": (886, 200), "Case": (153, 289),
    "Knowledge__kav": (194, 110), "ProductCategory": (10, 5), "Product2": (51, 51),
    "Pricebook2": (2, 2), "PricebookEntry": (50, 50), "Order": (163, 329),
    "OrderItem": (689, 1649), "EmailMessage": (5686, 11403), "LiveChatTranscript": (58, 110),
    "Issue__c": (15, 15), "CaseHistory__c": (393, 741), "Opportunity": (1170, 2292),
    "OpportunityLineItem": (4926, 11913), "Quote": (704, 1379), "QuoteLineItem": (2966, 7107),
    "Contract": (163, 329), "VoiceCallTranscript__c": (4033, 6796), "Task": (4829, 9007),
    "Event": (172, 148), "Territory2": (10, 10), "Lead": (1465, 222),
}  # fmt: skip
# Not in Table 6; B2B's 100 category junctions are from the ETL PR.
PRO_UNPUBLISHED_COUNTS = {
    "ProductCategoryProduct": (100, 51),
    "UserTerritory2Association": (150, 150),
}
PRO_ORGS = ("b2b", "b2c")  # the column order of the Pro counts


# What every org holds besides its generator's records: its Organization and the standard
# profiles; the other standard objects it has (Group, Campaign, Opportunity in the original
# org, ...) hold no records.
STANDARD_COUNTS = {"Organization": 1, "Profile": 4}


def served_counts(org: str) -> dict[str, int]:
    """Every object of the served org `org` and its record count, those with none included."""
    registry = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / org / "objects")
    generated = CRMARENA_COUNTS if org == "original" else pro_counts(org)
    return {sobject.name: 0 for sobject in registry} | STANDARD_COUNTS | generated


def pro_counts(org: str) -> dict[str, int]:
    """Every object's record count in the Pro org `org`, published or not."""
    column = PRO_ORGS.index(org)
    counts = PRO_PUBLISHED_COUNTS | PRO_UNPUBLISHED_COUNTS
    return {name: pair[column] for name, pair in counts.items()}


# The SOQL the CRMArena tool functions send (crmarena.md section 6.2), with a real org's values
# filled in by `tool_queries`. Datetimes are unquoted literals, as the tools write them.
TOOL_QUERY_TEMPLATES = {
    "get_agent_handled_cases_by_period": (
        "SELECT NewValue__c, CreatedDate FROM CaseHistory__c WHERE CreatedDate >= {start} "
        "AND CreatedDate <= {end} AND Field__c = 'Owner Assignment'"
    ),
    "get_cases": (
        "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE CreatedDate >= "
        "{start} AND CreatedDate < {end} AND OwnerId IN ({agents}) AND Status IN ('Closed')"
    ),
    "get_cases_single_values": (
        "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE "
        "IssueId__c = '{issue}' AND Status = 'Closed'"
    ),
    "get_non_transferred_case_ids": (
        "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
        "CreatedDate >= {start} AND CreatedDate <= {end} GROUP BY CaseId__c HAVING COUNT(Id) = 1"
    ),
    "get_agent_transferred_cases_by_period": (
        "SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        "AND OldValue__c != NULL AND CreatedDate >= {start} AND CreatedDate <= {end}"
    ),
    "get_shipping_state": "SELECT Id, ShippingState FROM Account WHERE Id IN ({accounts})",
    "get_order_item_ids_by_product": "SELECT Id FROM OrderItem WHERE Product2Id = '{product}'",
    "get_issue_counts": (
        "SELECT IssueId__c, COUNT(Id) IssueCount FROM Case WHERE OrderItemId__c IN ({items}) "
        "AND CreatedDate >= {start} AND CreatedDate <= {end} GROUP BY IssueId__c "
        "ORDER BY COUNT(Id) DESC"
    ),
    "get_account_id_by_contact_id": "SELECT AccountId FROM Contact WHERE Id = '{contact}' LIMIT 1",
    "get_purchase_history": (
        "SELECT Product2Id FROM OrderItem WHERE OrderItem.Order.AccountId = '{account}' AND "
        "OrderItem.Order.EffectiveDate = {purchase_date} AND Product2Id IN ({products}) AND "
        "OrderItem.Order.Status = 'Activated'"
    ),
    "get_issues": "SELECT Id, Name FROM Issue__c",
    "get_livechat_transcript_by_case_id": (
        "SELECT Body, EndTime FROM LiveChatTranscript WHERE CaseId = '{case}'"
    ),
    "get_email_messages_by_case_id": (
        "SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage "
        "WHERE ParentId = '{case}'"
    ),
}

PERIOD_START = "2023-01-01T00:00:00Z"
PERIOD_END = "2023-07-01T00:00:00Z"


def _quoted(ids: list[str]) -> str:
    return ", ".join(f"'{value}'" for value in ids)


def tool_query_values(rows: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Realistic arguments for the tool queries, picked from the org's own records."""
    cases = rows["Case"]
    in_period = [c for c in cases if "2023-01" <= c["CreatedDate"].isoformat()[:7] <= "2023-06"]
    agents = sorted({c["OwnerId"] for c in in_period})[:3]
    item = rows["OrderItem"][0]
    product = item["Product2Id"]
    items = [i["Id"] for i in rows["OrderItem"] if i["Product2Id"] == product]
    order = next(o for o in rows["Order"] if o["Status"] == "Activated")
    order_products = [i["Product2Id"] for i in rows["OrderItem"] if i["OrderId"] == order["Id"]]
    chat_case = rows["LiveChatTranscript"][0]["CaseId"]
    return {
        "start": PERIOD_START,
        "end": PERIOD_END,
        "agents": _quoted(agents),
        "issue": rows["Issue__c"][0]["Id"],
        "accounts": _quoted([a["Id"] for a in rows["Account"][:5]]),
        "product": product,
        "items": _quoted(items),
        # The tools pass ids as they got them; a 15-character one must work too.
        "contact": rows["Contact"][3]["Id"][:15],
        "account": order["AccountId"],
        "purchase_date": order["EffectiveDate"].isoformat(),
        "products": _quoted([*order_products, rows["Product2"][-1]["Id"]]),
        "case": chat_case,
    }


def tool_queries(rows: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    values = tool_query_values(rows)
    return {name: template.format(**values) for name, template in TOOL_QUERY_TEMPLATES.items()}


# --- checks of generated records -------------------------------------------------------------

# Fields the platform owns or the pipeline derives: a generator must leave them out.
PLATFORM_FIELDS = {"IsDeleted", "LastModifiedDate", "LastModifiedById", "SystemModstamp"}
DERIVED_FIELDS = {("Contact", "Name"), ("User", "Name"), ("Account", "IsPersonAccount")}
PYTHON_TYPES: dict[FieldType, tuple[type, ...]] = {
    FieldType.BOOLEAN: (bool,),
    FieldType.INT: (int,),
    FieldType.DOUBLE: (float,),
    FieldType.CURRENCY: (float,),
    FieldType.PERCENT: (float,),
    FieldType.DATE: (date,),
    FieldType.DATETIME: (datetime,),
    FieldType.JUNCTIONIDLIST: (list,),
}
# One line of a chat or call transcript.
TRANSCRIPT_LINE = re.compile(
    r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\] ([A-Z][A-Za-z' -]+) \((Customer|Agent)\): \S.*$"
)


def all_records(records: Records) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, batch in records.items():
        for record in batch:
            yield name, record


def assert_ids_are_ordinal(records: Records, registry: SchemaRegistry) -> None:
    """Record i of an object has the id make_id(its key prefix, i), already normalized."""
    for name, batch in records.items():
        prefix = registry.get(name).key_prefix  # type: ignore[union-attr]
        for number, record in enumerate(batch, start=1):
            assert record["Id"] == make_id(prefix, number)
            assert normalize_id(record["Id"]) == record["Id"]


def assert_fields_fit(
    records: Records, registry: SchemaRegistry, set_on_purpose: set[tuple[str, str]]
) -> None:
    """Every key is a field of the object, holds a value its definition allows, and every
    required field is set; calculated fields only where the generator sets them on purpose."""
    for name, record in all_records(records):
        sobject = registry.get(name)
        assert sobject is not None
        for field_name, value in record.items():
            field = sobject.field(field_name)
            # The pipeline drops keys that are not fields: a typo would vanish silently.
            assert field is not None and field.name == field_name, (name, field_name)
            assert field_name not in PLATFORM_FIELDS, (name, field_name)
            assert not field.auto_number, (name, field_name)
            assert (name, field_name) not in DERIVED_FIELDS, (name, field_name)
            if field.calculated:
                assert (name, field_name) in set_on_purpose, (name, field_name)
            if value is None:
                continue
            if field.is_text or field.type in (FieldType.ID, FieldType.REFERENCE):
                assert isinstance(value, str), (name, field_name, value)
                assert len(value) <= field.length, (name, field_name, len(value))
            else:
                assert isinstance(value, PYTHON_TYPES[field.type]), (name, field_name, value)
            if field.type is FieldType.DATE:
                assert not isinstance(value, datetime), (name, field_name)
            if isinstance(value, datetime):
                assert value.tzinfo is None and value.microsecond == 0, (name, field_name)
            if field.picklist and field.type is not FieldType.COMBOBOX:  # a combobox takes any
                assert field.allows_picklist_value(value), (name, field_name, value)
        for field in sobject.fields:
            if field.required:
                assert record.get(field.name) is not None, (name, field.name)


def assert_references_resolve(
    records: Records, registry: SchemaRegistry, by_id: dict[str, dict[str, Any]]
) -> int:
    """Every lookup points at an existing record of an object it may point at; returns how
    many lookups were checked."""
    checked = 0
    for name, record in all_records(records):
        sobject = registry.get(name)
        assert sobject is not None
        for field_name, value in record.items():
            field = sobject.field(field_name)
            assert field is not None
            targets = [t for t in field.reference_to if registry.get(t) is not None]
            if value is None or not targets:
                continue
            for target_id in value if isinstance(value, list) else [value]:
                assert by_id[target_id]["Id"] == target_id, (name, field_name)
                target = registry.by_key_prefix(target_id[:3])
                assert target is not None and target.name in targets, (name, field_name)
                checked += 1
    return checked
