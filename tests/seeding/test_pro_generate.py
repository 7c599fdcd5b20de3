"""The CRMArena-Pro generators (b2b, b2c): published counts, determinism, conformance to each
org's object definitions, links between records, and the latent patterns the Pro tasks read.
Each org is generated once per module."""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from app.metadata.registry import SchemaRegistry
from app.seeding.generate.text import load_text
from app.seeding.pro import GeneratedProOrg, generate
from app.seeding.pro.profile import LAST_DAY, NOW, PROFILES, STAGES
from app.seeding.standard_records import standard_records
from tests.crmarena import (
    PRO_ORGS,
    PRO_PUBLISHED_COUNTS,
    TRANSCRIPT_LINE,
    Records,
    all_records,
    assert_fields_fit,
    assert_ids_are_ordinal,
    assert_references_resolve,
    pro_counts,
)

SEED = 11
SEED_DIR = Path(__file__).resolve().parents[2] / "seed" / "orgs"
SET_ON_PURPOSE = {
    ("PricebookEntry", "Name"),
    ("Opportunity", "IsClosed"),
    ("Opportunity", "IsWon"),
    ("QuoteLineItem", "TotalPrice"),
}


@pytest.fixture(scope="module", params=PRO_ORGS)
def org(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def generated(org: str) -> GeneratedProOrg:
    return generate(org, SEED)


@pytest.fixture(scope="module")
def records(generated: GeneratedProOrg) -> Records:
    return generated.records


@pytest.fixture(scope="module")
def registry(org: str) -> SchemaRegistry:
    return SchemaRegistry.from_directory(SEED_DIR / org / "objects")


@pytest.fixture(scope="module")
def by_id(org: str, records: Records) -> dict[str, dict[str, Any]]:
    """Every record by id: the generator's and the standard ones (the users' profiles)."""
    batches = [*records.values(), *standard_records(org).values()]
    return {record["Id"]: record for batch in batches for record in batch}


def _children(records: Records, sobject: str, field: str) -> dict[str, list[dict[str, Any]]]:
    result: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records[sobject]:
        result[record[field]].append(record)
    return result


def test_counts_are_the_published_ones(org: str, records: Records) -> None:
    expected = pro_counts(org)
    assert {name: len(batch) for name, batch in records.items()} == expected
    assert PROFILES[org].counts == expected
    published = sum(expected[name] for name in PRO_PUBLISHED_COUNTS)
    assert published == {"b2b": 29101, "b2c": 54569}[org]


# Standard objects the Pro orgs hold no records of (a static resource is metadata, never seeded).
EMPTY_STANDARD_OBJECTS = {"Campaign", "Group", "RecordType", "UserRole", "StaticResource"}


def test_every_object_of_the_org_is_generated(
    org: str, records: Records, registry: SchemaRegistry
) -> None:
    standard = set(standard_records(org)) | EMPTY_STANDARD_OBJECTS
    assert {sobject.name for sobject in registry} == set(records) | standard


def test_same_seed_same_org_other_seed_other_org(org: str, records: Records) -> None:
    assert generate(org, SEED).records == records
    other = generate(org, SEED + 1).records
    for name in ("Account", "Lead", "Opportunity", "Quote", "Case", "EmailMessage", "Task"):
        assert other[name] != records[name], name


def test_ids_are_ordinal_and_use_the_object_prefix(
    records: Records, registry: SchemaRegistry
) -> None:
    assert_ids_are_ordinal(records, registry)


def test_fields_exist_and_values_fit_their_definitions(
    records: Records, registry: SchemaRegistry
) -> None:
    assert_fields_fit(records, registry, SET_ON_PURPOSE)


def test_references_point_at_existing_records_of_the_right_object(
    records: Records, registry: SchemaRegistry, by_id: dict[str, dict[str, Any]]
) -> None:
    checked = assert_references_resolve(records, registry, by_id)
    assert checked > 50_000
    # Ids held as text (not lookups) point at the right objects too.
    for case in records["Case"]:
        assert case["OrderItemId__c"].startswith(registry.get("OrderItem").key_prefix)  # type: ignore[union-attr]
        assert by_id[case["OrderItemId__c"]] in records["OrderItem"]
        assert by_id[case["IssueId__c"]] in records["Issue__c"]
    users = {u["Id"] for u in records["User"]}
    for history in records["CaseHistory__c"]:
        for value in (history["OldValue__c"], history["NewValue__c"]):
            assert value is None or value in users


def test_users_territories_and_routing(
    org: str, generated: GeneratedProOrg, records: Records, by_id: dict[str, Any]
) -> None:
    profile = PROFILES[org]
    territory_of: dict[str, str] = {}
    for association in records["UserTerritory2Association"]:
        assert association["UserId"] not in territory_of  # one territory per sales agent
        territory_of[association["UserId"]] = association["Territory2Id"]
    assert len(territory_of) == profile.sales_agents
    states_of = {t["Id"]: t["Description"].split(",") for t in records["Territory2"]}
    all_states = [s for states in states_of.values() for s in states]
    assert len(all_states) == len(set(all_states)) == 50  # the territories partition the US
    assert all(
        re.fullmatch(r"[A-Z]{2}(,[A-Z]{2})*", t["Description"]) for t in records["Territory2"]
    )
    assert generated.truth.territory_states == {k: tuple(v) for k, v in states_of.items()}
    for account in records["Account"]:
        assert account["ShippingState"] in states_of[territory_of[account["OwnerId"]]]
    for deal in records["Opportunity"]:
        state = by_id[deal["AccountId"]]["ShippingState"]
        assert state in states_of[territory_of[deal["OwnerId"]]]
    for lead in records["Lead"]:
        state = generated.truth.lead_states[lead["Id"]]
        assert state in states_of[territory_of[lead["OwnerId"]]]
        assert by_id[lead["OwnerId"]]["CreatedDate"].date() <= lead["CreatedDate"].date()


def test_accounts_and_contacts_fit_the_org(org: str, records: Records) -> None:
    contacts = _children(records, "Contact", "AccountId")
    assert all(contacts[a["Id"]] for a in records["Account"])
    if org == "b2b":
        assert all(a.get("Industry") and a.get("NumberOfEmployees") for a in records["Account"])
        assert all("FirstName" not in a for a in records["Account"])
        assert all(c.get("Email") for c in records["Contact"])
        assert all(lead.get("Company") and lead.get("Title") for lead in records["Lead"])
    else:
        for account in records["Account"]:
            (contact,) = contacts[account["Id"]]
            assert account["Name"] == f"{account['FirstName']} {account['LastName']}"
            assert (contact["FirstName"], contact["LastName"]) == (
                account["FirstName"],
                account["LastName"],
            )
        assert all("Company" not in lead for lead in records["Lead"])
        assert all("CompanySignedDate" not in c for c in records["Contract"])
    emails = [c.get("Email") or "" for c in records["Contact"]] + [
        a.get("PersonEmail") or "" for a in records["Account"]
    ]
    assert len({e for e in emails if e}) == len([e for e in emails if e])


def test_leads_convert_into_existing_customers(records: Records, by_id: dict[str, Any]) -> None:
    converted = [lead for lead in records["Lead"] if lead["IsConverted"]]
    assert 0.2 < len(converted) / len(records["Lead"]) < 0.4
    contacts_used = Counter(lead["ConvertedContactId"] for lead in converted)
    assert max(contacts_used.values()) == 1
    for lead in records["Lead"]:
        if not lead["IsConverted"]:
            assert lead["ConvertedDate"] is None and lead["ConvertedContactId"] is None
            assert lead["ConvertedAccountId"] is None
            continue
        assert lead["Status"] == "Closed"
        assert lead["CreatedDate"].date() <= lead["ConvertedDate"] <= LAST_DAY
        contact = by_id[lead["ConvertedContactId"]]
        assert contact["AccountId"] == lead["ConvertedAccountId"]
        assert (contact["FirstName"], contact["LastName"]) == (lead["FirstName"], lead["LastName"])
        assert contact["CreatedDate"].date() == lead["ConvertedDate"]


def test_conversion_rates_differ_by_agent(records: Records) -> None:
    per_owner: dict[str, list[bool]] = defaultdict(list)
    for lead in records["Lead"]:
        per_owner[lead["OwnerId"]].append(lead["IsConverted"])
    rates = [sum(v) / len(v) for v in per_owner.values() if len(v) >= 4]
    if len(rates) > 10:
        assert max(rates) - min(rates) >= 0.4


def test_stages_and_closed_flags_agree(records: Records) -> None:
    stages = Counter(deal["StageName"] for deal in records["Opportunity"])
    assert set(stages) == set(STAGES)
    quotes = _children(records, "Quote", "OpportunityId")
    for deal in records["Opportunity"]:
        closed = deal["StageName"] == "Closed"
        assert deal["IsClosed"] == closed
        assert not deal["IsWon"] or closed
        assert (deal["ContractID__c"] is not None) == deal["IsWon"]
        assert deal["Probability"] == (
            (100.0 if deal["IsWon"] else 0.0)
            if closed
            else {"Qualification": 10.0, "Discovery": 25.0, "Quote": 50.0, "Negotiation": 75.0}[
                deal["StageName"]
            ]
        )
        if closed:
            assert deal["CloseDate"] <= LAST_DAY
        else:
            assert deal["CloseDate"] > LAST_DAY
        statuses = [q["Status"] for q in sorted(quotes[deal["Id"]], key=lambda q: q["CreatedDate"])]
        if deal["IsWon"]:
            assert statuses[-1] == "Accepted" and statuses.count("Accepted") == 1
        else:
            assert "Accepted" not in statuses
        if deal["StageName"] in ("Quote", "Negotiation"):
            assert statuses
    won = sum(d["IsWon"] for d in records["Opportunity"])
    assert won == len(records["Contract"])


def test_line_items_quotes_contracts_and_orders_agree(
    org: str, generated: GeneratedProOrg, records: Records, by_id: dict[str, Any]
) -> None:
    profile = PROFILES[org]
    lines = _children(records, "OpportunityLineItem", "OpportunityId")
    quote_lines = _children(records, "QuoteLineItem", "QuoteId")
    order_items = _children(records, "OrderItem", "OrderId")
    entries = {e["Id"]: e for e in records["PricebookEntry"]}
    for deal in records["Opportunity"]:
        items = lines[deal["Id"]]
        assert items and len({i["Product2Id"] for i in items}) == len(items)
        assert deal["Amount"] == pytest.approx(sum(i["TotalPrice"] for i in items), abs=0.05)
        for item in items:
            entry = entries[item["PricebookEntryId"]]
            assert entry["Product2Id"] == item["Product2Id"]
            assert item["UnitPrice"] == entry["UnitPrice"]
            expected = item["Quantity"] * item["UnitPrice"] * (1 - item["Discount"] / 100)
            assert item["TotalPrice"] == pytest.approx(expected, abs=0.01)
    for quote in records["Quote"]:
        deal = by_id[quote["OpportunityId"]]
        assert quote["AccountId"] == deal["AccountId"] and quote["ContactId"] == deal["ContactId"]
        assert deal["CreatedDate"] <= quote["CreatedDate"] <= NOW
        assert quote["ExpirationDate"] > quote["CreatedDate"].date()
        discounts = []
        for item in quote_lines[quote["Id"]]:
            line = by_id[item["OpportunityLineItemId"]]
            assert line["OpportunityId"] == deal["Id"]
            assert item["Product2Id"] == line["Product2Id"]
            assert item["PricebookEntryId"] == line["PricebookEntryId"]
            expected = item["Quantity"] * item["UnitPrice"] * (1 - item["Discount"] / 100)
            assert item["TotalPrice"] == pytest.approx(expected, abs=0.01)
            discounts.append(item["Discount"])
        assert discounts
        # The approval rules: review above the automatic threshold, rejection above the cap.
        top = max(discounts)
        if quote["Status"] == "Rejected":
            assert top > profile.max_discount
        if quote["Status"] in ("Needs Review", "In Review"):
            assert profile.auto_approve_discount < top <= profile.max_discount
        if quote["Status"] in ("Approved", "Presented", "Accepted"):
            assert (top > profile.max_discount) == (
                quote["Id"] in generated.truth.approval_violations
            )
    for contract in records["Contract"]:
        (deal,) = [d for d in records["Opportunity"] if d["ContractID__c"] == contract["Id"]]
        assert contract["AccountId"] == deal["AccountId"]
        accepted = [
            q
            for q in records["Quote"]
            if q["OpportunityId"] == deal["Id"] and q["Status"] == "Accepted"
        ]
        assert accepted[0]["CreatedDate"] <= contract["CreatedDate"]
        assert deal["CreatedDate"].date() <= contract["CustomerSignedDate"] == deal["CloseDate"]
        signed: date = contract.get("CompanySignedDate") or contract["CustomerSignedDate"]
        assert contract["CustomerSignedDate"] <= signed < contract["StartDate"]
        assert signed <= LAST_DAY
        assert contract["Status"] == (
            "Activated" if contract["StartDate"] <= LAST_DAY else "Signed"
        )
    contracts = {c["Id"]: c for c in records["Contract"]}
    for order in records["Order"]:
        contract = contracts[order["ContractId"]]
        deal = next(d for d in records["Opportunity"] if d["ContractID__c"] == contract["Id"])
        assert order["AccountId"] == contract["AccountId"]
        assert order["OwnerId"] == deal["OwnerId"]
        assert order["EffectiveDate"] == contract["StartDate"]
        assert order["Status"] == ("Activated" if order["EffectiveDate"] <= LAST_DAY else "Draft")
        final = next(
            q
            for q in records["Quote"]
            if q["OpportunityId"] == deal["Id"] and q["Status"] == "Accepted"
        )
        ordered = sorted((i["Product2Id"], i["Quantity"]) for i in order_items[order["Id"]])
        quoted = sorted((i["Product2Id"], i["Quantity"]) for i in quote_lines[final["Id"]])
        assert ordered == quoted


def test_configuration_rules_hold_except_for_the_injected_violations(
    generated: GeneratedProOrg, records: Records
) -> None:
    truth = generated.truth
    articles = {k["Id"]: k for k in records["Knowledge__kav"]}
    limits: dict[str, int] = {}
    product_names = {p["Id"]: p["Name"] for p in records["Product2"]}
    for article in records["Knowledge__kav"]:
        match = re.search(r"at most (\d+) units of (.+?)(?: \(|\.</p>)", article["FAQ_Answer__c"])
        if match and article["Title"].startswith(match.group(2)):
            limits[match.group(2)] = int(match.group(1))
    assert len(limits) == len(records["PricebookEntry"]) + 1
    broken = set()
    for item in records["QuoteLineItem"]:
        if item["Quantity"] > limits[product_names[item["Product2Id"]]]:
            broken.add(item["QuoteId"])
    assert broken == set(truth.config_violations)
    assert all(a in articles for a in truth.config_violations.values())
    assert set(truth.approval_violations.values()) == {truth.policy_articles["discount_approval"]}
    for line in records["OpportunityLineItem"]:
        assert line["Quantity"] <= limits[product_names[line["Product2Id"]]]


def test_sales_cycles_vary_by_agent(generated: GeneratedProOrg, records: Records) -> None:
    contracts = {c["Id"]: c for c in records["Contract"]}
    cycles: dict[str, list[int]] = defaultdict(list)
    for deal in records["Opportunity"]:
        if deal["ContractID__c"]:
            signed = (
                contracts[deal["ContractID__c"]].get("CompanySignedDate")
                or contracts[deal["ContractID__c"]]["CustomerSignedDate"]
            )
            cycles[deal["OwnerId"]].append((signed - deal["CreatedDate"].date()).days)
    means = {owner: sum(v) / len(v) for owner, v in cycles.items() if len(v) >= 2}
    assert max(means.values()) > 1.8 * min(means.values())
    slow = sorted(means, key=lambda o: generated.truth.cycle_factor[o])
    low, high = slow[: len(slow) // 3], slow[-(len(slow) // 3) :]
    assert sum(means[o] for o in low) / len(low) < sum(means[o] for o in high) / len(high)


def test_activities_follow_the_deal_timeline(
    generated: GeneratedProOrg, records: Records, by_id: dict[str, Any]
) -> None:
    truth = generated.truth
    for task in records["Task"]:
        deal = by_id[task["WhatId"]]
        assert task["OwnerId"] == deal["OwnerId"]
        assert deal["CreatedDate"] <= task["CreatedDate"] <= NOW
        if deal["IsClosed"]:
            assert task["Status"] in ("Completed", "Deferred")
    strays = {t for ids in truth.stray_tasks.values() for t in ids}
    assert strays
    for deal_id, ids in truth.stray_tasks.items():
        assert not by_id[deal_id]["IsClosed"] and deal_id not in truth.wrong_stages
        for task_id in ids:
            assert by_id[task_id]["Status"] == "Not Started" and by_id[task_id]["WhatId"] == deal_id
    for deal_id, stage in truth.wrong_stages.items():
        deal = by_id[deal_id]
        assert STAGES.index(deal["StageName"]) == STAGES.index(stage) - 1
    for event in records["Event"]:
        deal = by_id[event["WhatId"]]
        assert event["OwnerId"] == deal["OwnerId"]
        assert event["CreatedDate"] <= event["StartDateTime"] or event["IsAllDayEvent"]
    for call in records["VoiceCallTranscript__c"]:
        assert (call["LeadId__c"] is None) != (call["OpportunityId__c"] is None)
        parent = by_id[call["LeadId__c"] or call["OpportunityId__c"]]
        assert parent["CreatedDate"] <= call["CreatedDate"] < call["EndTime__c"]
        assert call["OwnerId"] == parent["OwnerId"]
        lines = call["Body__c"].split("\n")
        assert all(TRANSCRIPT_LINE.match(line) for line in lines), lines
        stamps = [TRANSCRIPT_LINE.match(line).group(1) for line in lines]  # type: ignore[union-attr]
        assert stamps == sorted(stamps)
        assert stamps[0] == call["CreatedDate"].strftime("%Y-%m-%dT%H:%M:%S")
    lead_calls = [c for c in records["VoiceCallTranscript__c"] if c["LeadId__c"]]
    assert {c["LeadId__c"] for c in lead_calls} == set(truth.lead_failing_factors)
    assert any(truth.lead_failing_factors.values())


def test_each_deal_with_calls_has_one_insight_its_customer_states_once(
    org: str, generated: GeneratedProOrg, records: Records
) -> None:
    spec = load_text("sales", org)["insights"]
    stated: dict[str, list[tuple[str, str]]] = defaultdict(list)  # deal -> (question, reply)
    for call in records["VoiceCallTranscript__c"]:
        lines = [line.split("): ", 1) for line in call["Body__c"].split("\n")]
        for (asker, asked), (replier, reply) in itertools.pairwise(lines):
            if asked in spec["questions"]:
                assert call["OpportunityId__c"] is not None, call  # never on a lead's call
                assert (asker.endswith("(Agent"), replier.endswith("(Customer")) == (True, True)
                stated[call["OpportunityId__c"]].append((asked, reply))
    insights = generated.truth.deal_insights
    with_calls = {c["OpportunityId__c"] for c in records["VoiceCallTranscript__c"]} - {None}
    assert set(insights) == set(stated) == with_calls
    for deal, insight in insights.items():
        ((_, reply),) = stated[deal]
        assert reply in {lead_in.format(insight=insight) for lead_in in spec["lead_ins"]}
    assert len(set(insights.values())) > len(insights) / 4  # varied, not a handful of texts
    # Repeated in one of the customer's e-mails about the deal, after the call, if any.
    said_again = {lead_in.split("{insight}")[0] for lead_in in spec["email_lead_ins"]}
    repeats: Counter[str] = Counter()
    for email in records["EmailMessage"]:
        for paragraph in email["TextBody"].split("\n\n"):
            if any(paragraph.startswith(words) for words in said_again):
                deal = email["RelatedToId"]
                assert email["Incoming"] and insights[deal] in paragraph, email
                repeats[deal] += 1
    assert set(repeats.values()) == {1} and len(repeats) > len(insights) / 2


def test_emails_are_about_cases_or_deals(records: Records, by_id: dict[str, Any]) -> None:
    kinds: Counter[str] = Counter()
    dates = [e["MessageDate"] for e in records["EmailMessage"]]
    assert dates == sorted(dates)
    for email in records["EmailMessage"]:
        parent = by_id[email["RelatedToId"]]
        kinds[email["RelatedToId"][:3]] += 1
        if email["ParentId"] is not None:
            assert email["ParentId"] == email["RelatedToId"]
        assert parent["CreatedDate"] <= email["MessageDate"] <= NOW
        assert len(email["ToIds"]) == 1 and email["ToIds"][0] in by_id
    assert kinds["006"] > kinds["500"] > 0


def test_cases_history_and_chats(
    org: str, generated: GeneratedProOrg, records: Records, by_id: dict[str, Any]
) -> None:
    profile = PROFILES[org]
    history = _children(records, "CaseHistory__c", "CaseId__c")
    fields = Counter(h["Field__c"] for h in records["CaseHistory__c"])
    total = profile.counts["Case"]
    assert fields == {
        "Case Creation": total,
        "Owner Assignment": total + profile.case_transfers,
        "Case Closed": profile.closed_cases,
    }
    service_agents = {u["Id"] for u in records["User"][1 + profile.sales_agents :]}
    for case in records["Case"]:
        item = by_id[case["OrderItemId__c"]]
        order = by_id[item["OrderId"]]
        assert order["AccountId"] == case["AccountId"] and order["Status"] == "Activated"
        assert order["EffectiveDate"] < case["CreatedDate"].date()
        assert by_id[case["ContactId"]]["AccountId"] == case["AccountId"]
        assert case["OwnerId"] in service_agents
        assert (case["ClosedDate"] is not None) == (case["Status"] == "Closed")
        if case["ClosedDate"]:
            assert case["CreatedDate"] < case["ClosedDate"] <= NOW
        events = sorted(history[case["Id"]], key=lambda h: h["CreatedDate"])
        assert events[0]["Field__c"] == "Case Creation"
        assert events[0]["CreatedDate"] == case["CreatedDate"]
        owners = [h["NewValue__c"] for h in events if h["Field__c"] == "Owner Assignment"]
        assert owners[-1] == case["OwnerId"]
    for chat in records["LiveChatTranscript"]:
        case = by_id[chat["CaseId"]]
        assert case["Origin"] == "Chat"
        assert chat["AccountId"] == case["AccountId"] and chat["ContactId"] == case["ContactId"]
        assert all(TRANSCRIPT_LINE.match(line) for line in chat["Body"].split("\n"))
    assert set(generated.truth.case_violations) <= {c["Id"] for c in records["Case"]}
    assert len(generated.truth.case_violations) == profile.case_violations


def test_nothing_happens_after_now(records: Records) -> None:
    for name, record in all_records(records):
        for field_name, value in record.items():
            if isinstance(value, datetime):
                assert value <= NOW, (name, field_name, value)
