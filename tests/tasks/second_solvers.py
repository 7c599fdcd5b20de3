"""Each task type's answer computed a second way: in Python over the records the generator
wrote (`build_rows`), never SQL, from the parameters a draft was drawn with. Where the
generator planted the answer, from what it planted."""

from __future__ import annotations

import calendar
import html
import re
import statistics
from collections import Counter
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from app.config import REPO_ROOT
from app.metadata.custom_metadata import custom_field_metadata
from app.metadata.registry import SchemaRegistry
from app.seeding.generate.text import load_text
from app.tasks.model import planted_pro_truth, planted_truth
from app.tasks.original.service_agent import FACTS
from app.tasks.periods import Period
from tests.conftest import TEST_SEED

Rows = dict[str, list[dict[str, Any]]]


def _assignments(records: Rows, period: Period) -> list[dict[str, Any]]:
    return [
        row
        for row in records["CaseHistory__c"]
        if row["Field__c"] == "Owner Assignment" and period.holds(row["CreatedDate"])
    ]


def _qualified(records: Rows, period: Period, threshold: int) -> set[str]:
    counts = Counter(row["NewValue__c"] for row in _assignments(records, period))
    return {agent for agent, count in counts.items() if agent and count > threshold}


def _pick(values: dict[str, float], extreme: str) -> str:
    return (min if extreme == "min" else max)(values, key=lambda key: values[key])


def _pick_agent(values: dict[str, float], extreme: str) -> str | None:
    """The agent with the lowest or highest value; None when no agent counts."""
    return _pick(values, extreme) if values else None


def _handle_time(records: Rows, period: Period, threshold: int, extreme: str) -> str | None:
    qualified = _qualified(records, period, threshold)
    once = {
        case
        for case, n in Counter(r["CaseId__c"] for r in _assignments(records, period)).items()
        if n == 1
    }
    times: dict[str, list[float]] = {}
    for case in records["Case"]:
        if (
            case["Status"] == "Closed"
            and case["ClosedDate"] is not None
            and period.holds(case["CreatedDate"])
            and case["OwnerId"] in qualified
            and case["Id"] in once
        ):
            seconds = (case["ClosedDate"] - case["CreatedDate"]).total_seconds()
            times.setdefault(case["OwnerId"], []).append(seconds)
    return _pick_agent({owner: statistics.fmean(t) for owner, t in times.items()}, extreme)


def _transfer_count(records: Rows, period: Period, threshold: int, extreme: str) -> str | None:
    moved = Counter(row["OldValue__c"] for row in _assignments(records, period))
    return _pick_agent(
        {agent: moved.get(agent, 0) for agent in _qualified(records, period, threshold)}, extreme
    )


def _product_cases(records: Rows, product: str, period: Period) -> list[dict[str, Any]]:
    items = {row["Id"] for row in records["OrderItem"] if row["Product2Id"] == product}
    return [
        case
        for case in records["Case"]
        if case["OrderItemId__c"] in items and period.holds(case["CreatedDate"])
    ]


def _top_issue(records: Rows, period: Period, product: str) -> str:
    counts = Counter(case["IssueId__c"] for case in _product_cases(records, product, period))
    return _pick(dict(counts), "max")


def _monthly_trend(records: Rows, period: Period, product: str) -> str:
    created: list[datetime] = [
        case["CreatedDate"] for case in _product_cases(records, product, period)
    ]
    return _pick(dict(Counter(calendar.month_name[day.month] for day in created)), "max")


def _best_region(records: Rows, period: Period) -> str:
    states = {row["Id"]: row["ShippingState"] for row in records["Account"]}
    times: dict[str, list[float]] = {}
    for case in records["Case"]:
        if case["Status"] == "Closed" and period.holds(case["CreatedDate"]):
            seconds = (case["ClosedDate"] - case["CreatedDate"]).total_seconds()
            times.setdefault(states[case["AccountId"]], []).append(seconds)
    return _pick({state: statistics.fmean(t) for state, t in times.items()}, "min")


def _case_routing(records: Rows, issue: str, product: str, case: str = "") -> str:
    items = {row["Id"]: row["Product2Id"] for row in records["OrderItem"]}
    closed = [row for row in records["Case"] if row["Status"] == "Closed"]
    by_issue = Counter(row["OwnerId"] for row in closed if row["IssueId__c"] == issue)
    by_product = Counter(
        row["OwnerId"] for row in closed if items.get(row["OrderItemId__c"]) == product
    )
    still_open = Counter(row["OwnerId"] for row in records["Case"] if row["Status"] != "Closed")
    ranked = sorted(
        by_issue, key=lambda agent: (-by_issue[agent], -by_product[agent], still_open[agent])
    )
    return str(ranked[0])


def _named_entity(records: Rows, contact: str, day: date, term: str) -> str:
    (account,) = [row["AccountId"] for row in records["Contact"] if row["Id"] == contact]
    orders = {
        row["Id"]
        for row in records["Order"]
        if row["AccountId"] == account
        and row["Status"] == "Activated"
        and row["EffectiveDate"] == day
    }
    products = {row["Id"]: row for row in records["Product2"]}
    word = re.compile(rf"\b{re.escape(term)}\b", re.IGNORECASE)
    (found,) = {
        item["Product2Id"]
        for item in records["OrderItem"]
        if item["OrderId"] in orders
        and (
            word.search(products[item["Product2Id"]]["Name"] or "")
            or word.search(products[item["Product2Id"]]["Description"] or "")
        )
    }
    return str(found)


def _policy_violation(records: Rows, case: str, org: str = "original") -> str | None:
    if org == "original":
        return planted_truth(TEST_SEED).violations.get(case)
    return planted_pro_truth(org, TEST_SEED).case_violations.get(case)


def _knowledge(records: Rows, fact: str, product: str = "", org: str = "original") -> str:
    if org != "original":
        return _product_fact(records, fact, product)
    if product:
        return _care_guide_figure(records, fact, product)
    (known,) = [known for known in FACTS if known.name == fact]
    value = planted_truth(TEST_SEED).policy_params[known.param] if known.param else None
    evidence = known.evidence.format(value=value)
    assert any(evidence in row["Summary"] for row in records["Knowledge__kav"])
    return known.answer.format(value=value)


def _care_guide_figure(records: Rows, column: str, product: str) -> str:
    """The figure in the row of the product's care guide table."""
    (name,) = [row["Name"] for row in records["Product2"] if row["Id"] == product]
    return _table_figure(records, column, name)


def _table_figure(records: Rows, column: str, name: str) -> str:
    """The figure in the column of the row an article's table gives the product named, the
    cells split by hand."""
    found = []
    for row in records["Knowledge__kav"]:
        text = row["FAQ_Answer__c"] or ""
        if "<table>" not in text:
            continue
        header, *lines = text.split("<table>")[1].split("</table>")[0].split("</tr>")
        columns = header.replace("<tr>", "").replace("</th>", "").split("<th>")[1:]
        for line in lines:
            cells = line.replace("<tr>", "").replace("</td>", "").split("<td>")[1:]
            if cells and html.unescape(cells[0]) == name:
                found.append(html.unescape(cells[columns.index(column)]))
    (figure,) = found
    return figure


def _product_fact(records: Rows, fact: str, product: str) -> str:
    """From the product's own records where they hold it (its price book entry), else from its
    articles' sentences, split by hand."""
    (product_id,) = [row["Id"] for row in records["Product2"] if row["Name"] == product]
    if fact not in ("list price", "quantity limit", "exclusion"):  # a specification sheet's
        return _table_figure(records, fact, product)
    if fact == "list price":
        (standard,) = [row["Id"] for row in records["Pricebook2"] if row["IsStandard"]]
        ((price,),) = {
            (row["UnitPrice"],)
            for row in records["PricebookEntry"]
            if row["Product2Id"] == product_id and row["Pricebook2Id"] == standard
        }
        return f"${price:,.2f}"
    texts = [
        row["FAQ_Answer__c"]
        for row in records["Knowledge__kav"]
        if row["Title"].startswith(product + ": ") and row["PublishStatus"] == "Online"
    ]
    sentences = [s for text in texts for s in text.replace("</p>", "").split("<p>")]
    if fact == "quantity limit":
        (limit,) = [s.split("at most ")[1].split()[0] for s in sentences if "at most " in s]
        return f"{limit} units"
    (other,) = [s.split(" cannot be ")[0] for s in sentences if " together with this product" in s]
    return str(other)


def _case_routing_write(records: Rows, case: str, issue: str, product: str) -> list[dict[str, Any]]:
    agent = _case_routing(records, issue, product)
    (owner,) = [row["OwnerId"] for row in records["Case"] if row["Id"] == case]
    assert owner != agent
    return [{"type": "Case", "id": case, "fields": {"OwnerId": agent}}]


def _sales_amount(records: Rows, period: Period, extreme: str) -> str:
    orders = {
        row["Id"]: row["OwnerId"]
        for row in records["Order"]
        if row["Status"] == "Activated"
        and period.start.date() <= row["EffectiveDate"] < period.end.date()
    }
    totals: dict[str, float] = {}
    for item in records["OrderItem"]:
        if item["OrderId"] in orders:
            owner = orders[item["OrderId"]]
            totals[owner] = totals.get(owner, 0.0) + item["Quantity"] * item["UnitPrice"]
    return _pick(totals, extreme)


def _sales_cycle(records: Rows, period: Period, extreme: str) -> str:
    field = "CompanySignedDate" if "CompanySignedDate" in records["Contract"][0] else None
    field = field or "CustomerSignedDate"
    signed: dict[str, date] = {
        row["Id"]: row[field]
        for row in records["Contract"]
        if row.get(field) and period.start.date() <= row[field] < period.end.date()
    }
    cycles: dict[str, list[float]] = {}
    for deal in records["Opportunity"]:
        if deal.get("ContractID__c") in signed:
            days = (signed[deal["ContractID__c"]] - deal["CreatedDate"].date()).days
            cycles.setdefault(deal["OwnerId"], []).append(float(days))
    return _pick({o: statistics.fmean(days) for o, days in cycles.items()}, extreme)


def _conversion_rate(records: Rows, period: Period, extreme: str) -> str:
    leads: dict[str, list[bool]] = {}
    for lead in records["Lead"]:
        if period.holds(lead["CreatedDate"]):
            converted = lead["ConvertedDate"]
            inside = converted is not None and converted < period.end.date()
            leads.setdefault(lead["OwnerId"], []).append(inside)
    rates = {o: sum(won) / len(won) for o, won in leads.items() if len(won) >= 3}
    return _pick(rates, extreme)


def _quote_approval(records: Rows, quote: str, org: str) -> str | None:
    """From the discounts the generator wrote and the truth's largest allowed discount."""
    truth = planted_pro_truth(org, TEST_SEED)
    lines = [row["Discount"] or 0.0 for row in records["QuoteLineItem"] if row["QuoteId"] == quote]
    breaks = max(lines, default=0.0) > truth.max_discount
    article = truth.policy_articles["discount_approval"]
    return article if breaks else None


def _invalid_config(records: Rows, quote: str, org: str) -> str | None:
    """What the generator injected: the quote's broken configuration rule, if any."""
    return planted_pro_truth(org, TEST_SEED).config_violations.get(quote)


def _activity_priority(records: Rows, deal: str, org: str) -> list[str] | None:
    """What the generator planted: the deal's tasks of another stage, if any."""
    return sorted(planted_pro_truth(org, TEST_SEED).stray_tasks.get(deal, [])) or None


def _wrong_stage(records: Rows, deal: str, org: str) -> str | None:
    """What the generator planted: the stage the deal's activity shows, where it lags."""
    return planted_pro_truth(org, TEST_SEED).wrong_stages.get(deal)


def _lead_qualification(records: Rows, lead: str, org: str) -> list[str] | None:
    failing = planted_pro_truth(org, TEST_SEED).lead_failing_factors[lead]
    return [
        factor for factor in ("Budget", "Authority", "Need", "Timeline") if factor in failing
    ] or None


def _sales_insight(records: Rows, deal: str, org: str) -> str:
    """The customer's reply to the agent's concern question on the deal's calls, its lead-in
    taken off by plain string matching (no patterns)."""
    spec = load_text("sales", org)["insights"]
    said: list[str] = [
        line.split("): ", 1)[1]
        for row in records["VoiceCallTranscript__c"]
        if row["OpportunityId__c"] == deal
        for line in row["Body__c"].splitlines()
    ]
    (reply,) = [said[n + 1] for n, line in enumerate(said[:-1]) if line in spec["questions"]]
    for lead_in in spec["lead_ins"]:
        before, after = lead_in.split("{insight}")
        if reply.startswith(before) and reply.endswith(after):
            return reply[len(before) : len(reply) - len(after)]
    raise AssertionError(f"no lead-in of {org} opens {reply!r}")


def _lead_routing(records: Rows, name: str, state: str, org: str) -> str:
    """The territory the generator gave the state, its users, ranked by the Accepted quotes of
    the opportunities they own, then the fewest unconverted leads they own."""
    truth = planted_pro_truth(org, TEST_SEED)
    (territory,) = [t for t, states in truth.territory_states.items() if state in states]
    users = {
        row["UserId"]
        for row in records["UserTerritory2Association"]
        if row["Territory2Id"] == territory and row["IsActive"]
    }
    owners = {row["Id"]: row["OwnerId"] for row in records["Opportunity"]}
    accepted = Counter(
        owners[row["OpportunityId"]] for row in records["Quote"] if row["Status"] == "Accepted"
    )
    unconverted = Counter(row["OwnerId"] for row in records["Lead"] if not row["IsConverted"])
    return str(min(users, key=lambda user: (-accepted[user], unconverted[user], user)))


def _nothing_to_share(records: Rows, **params: Any) -> None:
    """A confidentiality task: the answer is a refusal, nothing from the org."""
    return None


def _stage_write(records: Rows, deal: str, org: str) -> list[dict[str, Any]]:
    stage = _wrong_stage(records, deal, org)
    return [] if stage is None else [_change("Opportunity", deal, StageName=stage)]


def _lead_write(records: Rows, lead: str, state: str, org: str) -> list[dict[str, Any]]:
    agent = _lead_routing(records, "", state, org)
    return [_change("Lead", lead, OwnerId=agent)]


def _case_close(records: Rows, case: str, org: str) -> list[dict[str, Any]]:
    """Closed when an agent's chat line or e-mail states the issue's resolution (or its
    violation), each text compared with the org's issue texts by hand."""
    issues = load_text("service", org)["issues"]
    lines = [issue[key] for issue in issues for key in ("resolution", "violation")]
    texts = [row["Body"] for row in records["LiveChatTranscript"] if row["CaseId"] == case]
    texts += [row["TextBody"] for row in records["EmailMessage"] if row.get("ParentId") == case]
    resolved = any(_filled_in(line, text) for line in lines for text in texts)
    return [_change("Case", case, Status="Closed")] if resolved else []


def _filled_in(template: str, text: str) -> bool:
    """Whether the text holds the template, whatever its placeholders were filled with."""
    parts = re.split(r"\{\w+\}", template)
    at = text.find(parts[0])
    while at >= 0:
        end, ok = at + len(parts[0]), True
        for part in parts[1:]:
            found = text.find(part, end + 1)
            if found < 0:
                ok = False
                break
            end = found + len(part)
        if ok:
            return True
        at = text.find(parts[0], at + 1)
    return False


def _change(sobject: str, record: str, **fields: Any) -> dict[str, Any]:
    return {"type": sobject, "id": record, "fields": fields}


def _component(kind: str, full_name: str, metadata: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "id": full_name, "fields": metadata}


def _api_name(label: str) -> str:
    """Setup's proposal: each run of characters other than letters and digits an underscore."""
    words = "".join(c if c.isalnum() else " " for c in label).split()
    return "_".join(words) + "__c"


def _field_creation(
    records: Rows, org: str, object: str, field: dict[str, Any]
) -> list[dict[str, Any]]:
    assert object in records, object  # an object of the org
    return [_component("CustomField", f"{object}.{_api_name(field['label'])}", field)]


def _object_creation(
    records: Rows, org: str, object: dict[str, Any], field: dict[str, Any]
) -> list[dict[str, Any]]:
    name = _api_name(object["label"])
    assert name not in records
    return [
        _component("CustomObject", name, object),
        _component("CustomField", f"{name}.{_api_name(field['label'])}", field),
    ]


def _field_update(
    records: Rows, org: str, field: str, required: bool, label: str
) -> list[dict[str, Any]]:
    """The field's metadata as the Metadata API reads it, required where asked, its label the
    one asked for."""
    sobject_name, name = field.split(".")
    registry = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / org / "objects")
    sobject = registry.get(sobject_name)
    assert sobject is not None
    found = sobject.field(name)
    assert found is not None
    assert found.nillable or not required
    metadata = {k: v for k, v in custom_field_metadata(sobject, found).items() if k != "fullName"}
    return [
        _component(
            "CustomField",
            field,
            {**metadata, **({"required": True} if required else {}), "label": label},
        )
    ]


SECOND_SOLVERS: dict[str, Callable[..., Any]] = {
    "custom_field_creation": _field_creation,
    "custom_object_creation": _object_creation,
    "custom_field_update": _field_update,
    "sales_insight_mining": _sales_insight,
    "stage_rectification_write": _stage_write,
    "lead_routing_write": _lead_write,
    "case_closing_write": _case_close,
    "private_customer_information": _nothing_to_share,
    "internal_operation_data": _nothing_to_share,
    "confidential_company_knowledge": _nothing_to_share,
    "wrong_stage_rectification": _wrong_stage,
    "lead_qualification": _lead_qualification,
    "lead_routing": _lead_routing,
    "activity_priority": _activity_priority,
    "invalid_config": _invalid_config,
    "quote_approval": _quote_approval,
    "sales_amount_understanding": _sales_amount,
    "sales_cycle_understanding": _sales_cycle,
    "conversion_rate_comprehension": _conversion_rate,
    "case_routing": _case_routing,
    "case_routing_write": _case_routing_write,
    "named_entity_disambiguation": _named_entity,
    "policy_violation_identification": _policy_violation,
    "knowledge_qa": _knowledge,
    "handle_time": _handle_time,
    "transfer_count": _transfer_count,
    "top_issue_identification": _top_issue,
    "monthly_trend_analysis": _monthly_trend,
    "best_region_identification": _best_region,
}
