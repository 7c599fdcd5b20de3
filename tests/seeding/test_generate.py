"""The original-org generator: counts, determinism, consistency between objects, value formats,
and conformance to the object definitions. The org is generated once per module."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import date, datetime
from itertools import pairwise
from typing import Any

import pytest

from app.metadata.registry import SchemaRegistry
from app.seeding.generate import GeneratedOrg, generate, generate_original_org
from app.seeding.generate.text import OBJECTS_DIR, TEXT_FILES, load_text, placeholders
from app.seeding.standard_records import standard_records
from app.storage.ids import make_id
from tests.crmarena import (
    CRMARENA_COUNTS,
    TRANSCRIPT_LINE,
    assert_fields_fit,
    assert_ids_are_ordinal,
    assert_references_resolve,
)

SEED = 7
REGISTRY = SchemaRegistry.from_directory(OBJECTS_DIR)
ISSUE_NAMES = {
    "Billing/Payment Issue",
    "Return Policy Issue",
    "Product Defect",
    "Size Mismatch",
    "Shipping Delay",
    "Product Availability",
    "Order Cancellation",
    "Warranty Issue",
    "Incorrect Item Received",
    "Loyalty Program Inquiry",
}
SET_ON_PURPOSE = {("PricebookEntry", "Name")}  # calculated, but the generator provides it
# Placeholders the case texts may use beyond the policy parameters and agreement words.
CASE_CONTEXT = {
    "company", "product", "category", "days_since", "order_date", "price", "quantity", "amount",
    "size_ordered", "size_received", "carrier", "late_days", "points", "goodwill_over",
    "customer_first", "customer_name", "agent_first", "agent_name", "subject",
    "is", "has", "was", "does", "it", "It", "them", "s",
}  # fmt: skip


@pytest.fixture(scope="module")
def org() -> GeneratedOrg:
    return generate(SEED)


@pytest.fixture(scope="module")
def records(org: GeneratedOrg) -> dict[str, list[dict[str, Any]]]:
    return org.records


@pytest.fixture(scope="module")
def by_id(records: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Every record of the org as seeded: the generator's and the standard ones."""
    seeded = {**standard_records("original"), **records}
    return {record["Id"]: record for batch in seeded.values() for record in batch}


def test_exact_counts(records: dict[str, list[dict[str, Any]]]) -> None:
    assert {name: len(batch) for name, batch in records.items()} == CRMARENA_COUNTS
    assert sum(CRMARENA_COUNTS.values()) == 41081
    history = Counter(h["Field__c"] for h in records["CaseHistory__c"])
    assert history == {"Case Creation": 977, "Owner Assignment": 1088, "Case Closed": 918}
    assert Counter(c["Status"] == "Closed" for c in records["Case"])[True] == 918


def test_same_seed_same_org_other_seed_other_org(
    records: dict[str, list[dict[str, Any]]],
) -> None:
    assert generate_original_org(SEED) == records
    other = generate_original_org(SEED + 1)
    for name in ("Account", "Product2", "Case", "EmailMessage", "Knowledge__kav"):
        assert other[name] != records[name]


def test_ids_are_ordinal_and_use_the_object_prefix(
    records: dict[str, list[dict[str, Any]]],
) -> None:
    assert_ids_are_ordinal(records, REGISTRY)


def test_fields_exist_and_values_fit_their_definitions(
    records: dict[str, list[dict[str, Any]]],
) -> None:
    assert_fields_fit(records, REGISTRY, SET_ON_PURPOSE)


def test_references_point_at_existing_records(
    records: dict[str, list[dict[str, Any]]], by_id: dict[str, dict[str, Any]]
) -> None:
    assert assert_references_resolve(records, REGISTRY, by_id) > 0


def test_people(records: dict[str, list[dict[str, Any]]], by_id: dict[str, Any]) -> None:
    users = records["User"]
    assert len({u["Username"] for u in users}) == len(users)
    assert len({u["Alias"] for u in users}) == len(users)
    assert all(len(u["Alias"]) <= 8 and u["IsActive"] for u in users)
    accounts = records["Account"]
    assert all(a["Name"] == f"{a['FirstName']} {a['LastName']}" for a in accounts)
    addresses = [c["Email"] for c in records["Contact"]] + [u["Email"] for u in users]
    assert len(set(addresses)) == len(addresses)
    assert all(re.fullmatch(r"[a-z0-9._]+@[a-z.]+\.(com|net|org|example)", a) for a in addresses)
    assert all(re.fullmatch(r"[A-Z]{2}", a["ShippingState"]) for a in accounts)
    assert all(isinstance(a["Phone"], str) for a in accounts + users)
    for account, contact in zip(accounts, records["Contact"], strict=False):
        assert contact["AccountId"] == account["Id"]
        assert (contact["FirstName"], contact["LastName"], contact["Email"]) == (
            account["FirstName"],
            account["LastName"],
            account["PersonEmail"],
        )
    for contact in records["Contact"][len(accounts) :]:
        assert by_id[contact["AccountId"]]["LastName"] == contact["LastName"]


def test_catalog_formats_and_links(records: dict[str, list[dict[str, Any]]]) -> None:
    categories = {c["Id"]: c["Name"] for c in records["ProductCategory"]}
    homes: dict[str, set[str]] = defaultdict(set)
    for link in records["ProductCategoryProduct"]:
        homes[link["ProductId"]].add(categories[link["ProductCategoryId"]])
    pairs = [
        (link["ProductId"], link["ProductCategoryId"]) for link in records["ProductCategoryProduct"]
    ]
    assert len(set(pairs)) == len(pairs)
    for number, product in enumerate(records["Product2"], start=1):
        category, _, suffix = product["External_ID__c"].rpartition("_")
        assert suffix == str(number) and category in homes[product["Id"]]
        assert product["Description"]
    assert {i["Name"] for i in records["Issue__c"]} == ISSUE_NAMES


def test_pricebooks_entries_orders_and_items_agree(
    records: dict[str, list[dict[str, Any]]], by_id: dict[str, dict[str, Any]]
) -> None:
    standard = [b for b in records["Pricebook2"] if b.get("IsStandard")]
    assert [b["Name"] for b in standard] == ["Standard Price Book"]
    entries = records["PricebookEntry"]
    pairs = {(e["Pricebook2Id"], e["Product2Id"]) for e in entries}
    assert len(pairs) == len(entries)
    assert {p["Id"] for p in records["Product2"]} <= {
        product for book, product in pairs if book == standard[0]["Id"]
    }
    assert all(e["Name"] == by_id[e["Product2Id"]]["Name"] for e in entries)
    assert Counter(o["Status"] for o in records["Order"]).keys() == {"Activated", "Draft"}
    for order in records["Order"]:
        book = by_id[order["Pricebook2Id"]]
        if book["ValidFrom"] is not None:
            assert book["ValidFrom"].date() <= order["EffectiveDate"] <= book["ValidTo"].date()
    for item in records["OrderItem"]:
        entry = by_id[item["PricebookEntryId"]]
        order = by_id[item["OrderId"]]
        assert entry["Pricebook2Id"] == order["Pricebook2Id"]
        assert entry["Product2Id"] == item["Product2Id"]
        assert entry["UnitPrice"] == item["UnitPrice"]
        assert item["Quantity"] >= 1.0 and item["Quantity"].is_integer()


def test_cases_point_at_their_customers_purchase(
    records: dict[str, list[dict[str, Any]]], by_id: dict[str, dict[str, Any]]
) -> None:
    issue_ids = {i["Id"] for i in records["Issue__c"]}
    agent_ids = {u["Id"] for u in records["User"][1:]}
    for case in records["Case"]:
        assert date(2020, 1, 2) <= case["CreatedDate"].date() <= date(2024, 5, 26)
        assert by_id[case["ContactId"]]["AccountId"] == case["AccountId"]
        order = by_id[by_id[case["OrderItemId__c"]]["OrderId"]]
        assert order["AccountId"] == case["AccountId"] and order["Status"] == "Activated"
        assert order["EffectiveDate"] < case["CreatedDate"].date()
        assert case["IssueId__c"] in issue_ids and case["OwnerId"] in agent_ids
        if case["Status"] == "Closed":
            assert case["ClosedDate"] > case["CreatedDate"]
        else:
            assert case["ClosedDate"] is None


def test_case_history_agrees_with_cases(
    records: dict[str, list[dict[str, Any]]],
) -> None:
    history: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in records["CaseHistory__c"]:
        history[row["CaseId__c"]].append(row)
    for case in records["Case"]:
        rows = sorted(history[case["Id"]], key=lambda row: row["CreatedDate"])
        assert rows[0]["Field__c"] == "Case Creation"
        assert rows[0]["CreatedDate"] == case["CreatedDate"]
        assignments = [row for row in rows if row["Field__c"] == "Owner Assignment"]
        assert assignments[0]["OldValue__c"] is None
        assert assignments[0]["CreatedDate"] >= case["CreatedDate"]
        for previous, transfer in pairwise(assignments):
            assert transfer["OldValue__c"] == previous["NewValue__c"] != transfer["NewValue__c"]
        assert assignments[-1]["NewValue__c"] == case["OwnerId"]
        closed = [row for row in rows if row["Field__c"] == "Case Closed"]
        if case["Status"] == "Closed":
            assert [row["CreatedDate"] for row in closed] == [case["ClosedDate"]]
            assert rows[-1]["Field__c"] == "Case Closed"
        else:
            assert closed == []
    times = [row["CreatedDate"] for row in records["CaseHistory__c"]]
    assert times == sorted(times)


def test_transcripts(records: dict[str, list[dict[str, Any]]], by_id: dict[str, Any]) -> None:
    assert len({t["CaseId"] for t in records["LiveChatTranscript"]}) == 774
    for number, transcript in enumerate(records["LiveChatTranscript"], start=1):
        case = by_id[transcript["CaseId"]]
        assert case["Origin"] == "Chat"
        assert transcript["OwnerId"] == case["OwnerId"]
        assert (transcript["AccountId"], transcript["ContactId"]) == (
            case["AccountId"],
            case["ContactId"],
        )
        assert transcript["LiveChatVisitorId"] == make_id("571", number)
        stamps = []
        for line in transcript["Body"].split("\n"):
            match = TRANSCRIPT_LINE.match(line)
            assert match, line
            stamps.append(datetime.fromisoformat(match.group(1)))
        assert stamps == sorted(stamps)
        assert (stamps[0], stamps[-1]) == (transcript["StartTime"], transcript["EndTime"])
        assert stamps[0] == case["CreatedDate"]
        assert case["ClosedDate"] is None or stamps[-1] <= case["ClosedDate"]


def test_emails(records: dict[str, list[dict[str, Any]]], by_id: dict[str, Any]) -> None:
    for email in records["EmailMessage"]:
        case = by_id[email["ParentId"]]
        assert email["MessageDate"] >= case["CreatedDate"]
        assert case["ClosedDate"] is None or email["MessageDate"] <= case["ClosedDate"]
        (recipient,) = email["ToIds"]
        contact = by_id[case["ContactId"]]
        if email["Incoming"]:
            assert (email["Status"], email["FromAddress"]) == ("0", contact["Email"])
            assert recipient.startswith("005") and email["ToAddress"] == by_id[recipient]["Email"]
        else:
            assert (email["Status"], recipient) == ("3", contact["Id"])
            assert email["ToAddress"] == contact["Email"]


def test_knowledge_articles(org: GeneratedOrg, records: dict[str, Any]) -> None:
    articles = records["Knowledge__kav"]
    assert len({a["UrlName"] for a in articles}) == len(articles)
    for article in articles:
        assert re.fullmatch(r"\d{10}-[a-z0-9]{5}", article["UrlName"])
        assert (article["PublishStatus"], article["Language"]) == ("Online", "en_US")
        assert "{" not in article["FAQ_Answer__c"] + article["Summary"] + article["Title"]
    assert any("&amp;" in a["FAQ_Answer__c"] for a in articles)
    window = org.truth.policy_params["return_window_days"]
    assert any(f"{window} days" in a["FAQ_Answer__c"] for a in articles)


def test_injected_violations_are_closed_cases_with_policy_articles(
    org: GeneratedOrg, by_id: dict[str, dict[str, Any]]
) -> None:
    violations = org.truth.violations
    assert 60 <= len(violations) <= 300
    assert set(violations.values()) <= set(org.truth.policy_articles.values())
    assert len(set(violations.values())) >= 8
    assert all(by_id[case_id]["Status"] == "Closed" for case_id in violations)


def test_case_volume_peaks_in_december_march_and_june(
    records: dict[str, list[dict[str, Any]]],
) -> None:
    by_month = Counter(case["CreatedDate"].month for case in records["Case"])
    top = {month for month, _ in by_month.most_common(3)}
    assert top == {12, 3, 6}


def test_every_template_uses_known_placeholders(org: GeneratedOrg) -> None:
    known = CASE_CONTEXT | set(org.truth.policy_params)
    known_by_file = {
        "catalog": {"name", "feature1", "feature2", "use", "year"},
        "names": {"first", "last", "initial", "n"},
        "knowledge": known | {"category", "category_lower", "tips"},
    }

    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, list):
            for item in value:
                yield from strings(item)

    for name in TEXT_FILES:
        allowed = known_by_file.get(name, known)
        for text in strings(load_text(name)):
            assert placeholders(text) <= allowed, (name, text)
