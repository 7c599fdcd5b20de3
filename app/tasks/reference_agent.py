"""A scripted reference agent: it solves a task as an agent must, from the task's words and
metadata alone, through the org's REST API (SOQL), never reading the database or the answer.
It proves a task is solvable and that the query engine agrees with the SQL ground truth.

Where a task needs reading, the script carries a rulebook instead of judgment: for policy
violations, the lines the knowledge base's policies (and the issues' stories) count as
violations (`seed/orgs/original/text`); for knowledge QA, which words of an article state the
figure each question asks for. The figures and conversations themselves come from the API."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from app.tasks.model import Api, NotScripted
from app.tasks.original.service_agent import FACTS
from app.tasks.periods import Period
from app.tasks.pro.sales_activity import off_stage_tasks
from app.tasks.pro.sales_ops import MAX_DISCOUNT_RULE, broken_rules, config_rules
from app.tasks.pro.service_agent import PRODUCT_FACTS, ProductFact
from app.tasks.rulebook import (
    DealActivity,
    bant_factors,
    factors_failed,
    resolution_policy_title,
    resolutions_stated,
    stage_shown,
    template_pattern,
    violation_lines,
)
from app.tasks.solving import (
    article_titled,
    case_conversation,
    counts,
    created_in,
    days_in,
    extreme_of,
    ids,
    literal,
    moment,
    named_id,
    org_of,
    period_of,
    pick,
    product_items,
    quoted,
    today_of,
)


def _threshold(policy: str) -> int:
    if "at least one case" in policy:
        return 0
    if "more than one case" in policy:
        return 1
    found = re.search(r"more than (\d+) cases", policy)
    if found is None:
        raise NotScripted("the policy names no threshold")
    return int(found[1])


def _qualified(api: Api, period: Period, threshold: int) -> set[str]:
    assigned = counts(
        api,
        "SELECT NewValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment'"
        f" AND {created_in(period)} GROUP BY NewValue__c",
        "NewValue__c",
    )
    return {agent for agent, count in assigned.items() if count > threshold}


def handle_time(api: Api, task: dict[str, Any]) -> str:
    period = period_of(task)
    qualified = _qualified(api, period, _threshold(task["metadata"]["required"]))
    once = {
        row["CaseId__c"]
        for row in api.query(
            "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
            f"{created_in(period)} GROUP BY CaseId__c HAVING COUNT(Id) = 1"
        )
    }
    times: dict[str, list[float]] = {}
    for case in api.query(
        "SELECT Id, OwnerId, CreatedDate, ClosedDate FROM Case WHERE Status = 'Closed' AND "
        + created_in(period)
    ):
        if case["OwnerId"] in qualified and case["Id"] in once and case["ClosedDate"]:
            spent = moment(case["ClosedDate"]) - moment(case["CreatedDate"])
            times.setdefault(case["OwnerId"], []).append(spent.total_seconds())
    means = {owner: statistics.fmean(seconds) for owner, seconds in times.items()}
    return pick(means, extreme_of(task["query"]))


def transfer_count(api: Api, task: dict[str, Any]) -> str:
    period = period_of(task)
    qualified = _qualified(api, period, _threshold(task["metadata"]["required"]))
    moved = counts(
        api,
        "SELECT OldValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment'"
        f" AND {created_in(period)} GROUP BY OldValue__c",
        "OldValue__c",
    )
    transfers = {agent: float(moved.get(agent, 0)) for agent in qualified}
    return pick(transfers, extreme_of(task["query"]))


def _product_cases(api: Api, task: dict[str, Any], fields: str) -> list[dict[str, Any]]:
    product = named_id(task, "01t", "product")
    items = product_items(api, product)
    if not items:
        return []
    return api.query(
        f"SELECT {fields} FROM Case WHERE OrderItemId__c IN {ids(items)} AND "
        + created_in(period_of(task))
    )


def top_issue(api: Api, task: dict[str, Any]) -> str:
    cases = _product_cases(api, task, "IssueId__c")
    issues = Counter(case["IssueId__c"] for case in cases if case["IssueId__c"])
    return pick(dict(issues), "max")


def monthly_trend(api: Api, task: dict[str, Any]) -> str:
    cases = _product_cases(api, task, "CreatedDate")
    months = Counter(moment(case["CreatedDate"]).strftime("%B") for case in cases)
    return pick(dict(months), "max")


def best_region(api: Api, task: dict[str, Any]) -> str:
    times: dict[str, list[float]] = {}
    for case in api.query(
        "SELECT Account.ShippingState, CreatedDate, ClosedDate FROM Case WHERE Status = "
        f"'Closed' AND {created_in(period_of(task))}"
    ):
        state = (case.get("Account") or {}).get("ShippingState")
        if state and case["ClosedDate"]:
            spent = moment(case["ClosedDate"]) - moment(case["CreatedDate"])
            times.setdefault(state, []).append(spent.total_seconds())
    return pick({state: statistics.fmean(t) for state, t in times.items()}, "min")


_NEW_CASE = (
    re.compile(r"Subject: (.*?)\. Description: (.*) Which agent should it be routed to\?$", re.S),
    re.compile(r"Subject: (.*)\nDescription: (.*)$", re.S),
    re.compile(r'Subject: "(.*)"\. Description: "(.*)"$', re.S),
)


def case_routing(api: Api, task: dict[str, Any]) -> str:
    found = next((m for p in _NEW_CASE if (m := p.search(task["query"]))), None)
    if found is None:
        raise NotScripted("the query holds no subject and description")
    subject, description = found[1], found[2]
    cases = [
        case
        for case in api.query(
            "SELECT Id, Description, IssueId__c, OrderItemId__c FROM Case WHERE Subject = "
            + quoted(subject)
        )
        if (case["Description"] or "").strip() == description.strip()
    ]
    if len(cases) != 1:
        raise NotScripted(f"{len(cases)} cases have the new case's subject and description")
    return _route(api, cases[0]["IssueId__c"], cases[0]["OrderItemId__c"])


def _route(api: Api, issue: str, item: str) -> str:
    """The agent the routing policy picks for a case of `issue` about order item `item`."""
    closed = "SELECT OwnerId, COUNT(Id) n FROM Case WHERE Status = 'Closed' AND "
    by_issue = counts(api, f"{closed}IssueId__c = {quoted(issue)} GROUP BY OwnerId", "OwnerId")
    (product,) = api.query(f"SELECT Product2Id FROM OrderItem WHERE Id = {quoted(item)}")
    items = product_items(api, product["Product2Id"])
    by_product = counts(api, f"{closed}OrderItemId__c IN {ids(items)} GROUP BY OwnerId", "OwnerId")
    still_open = counts(
        api,
        "SELECT OwnerId, COUNT(Id) n FROM Case WHERE Status != 'Closed' GROUP BY OwnerId",
        "OwnerId",
    )
    ranked = sorted(
        by_issue,
        key=lambda agent: (-by_issue[agent], -by_product.get(agent, 0), still_open.get(agent, 0)),
    )
    return str(ranked[0])


def case_routing_write(api: Api, task: dict[str, Any]) -> str:
    case_id = named_id(task, "500", "case")
    (case,) = api.query(f"SELECT IssueId__c, OrderItemId__c FROM Case WHERE Id = {quoted(case_id)}")
    agent = _route(api, case["IssueId__c"], case["OrderItemId__c"])
    api.update("Case", case_id, {"OwnerId": agent})
    return f"Case {case_id} is now owned by {agent}."


_BOUGHT = re.compile(r"the (\S+) I (?:bought|purchased|ordered) (a|\d+) (days?|weeks?) ago")
_CONTACT = re.compile(r"Contact Id: (003[0-9A-Za-z]{15})")


def named_entity(api: Api, task: dict[str, Any]) -> str:
    bought, contact = _BOUGHT.search(task["query"]), _CONTACT.search(task["metadata"]["required"])
    if bought is None or contact is None:
        raise NotScripted("the task names no purchase or no contact")
    count = 1 if bought[2] == "a" else int(bought[2])
    days = count * (7 if bought[3].startswith("week") else 1)
    day = today_of(task) - timedelta(days=days)
    (account,) = api.query(f"SELECT AccountId FROM Contact WHERE Id = {quoted(contact[1])}")
    items = api.query(
        "SELECT Product2Id, Product2.Name, Product2.Description FROM OrderItem WHERE "
        f"Order.AccountId = {quoted(account['AccountId'])} AND Order.Status = 'Activated' "
        f"AND Order.EffectiveDate = {day.isoformat()}"
    )
    word = re.compile(rf"\b{re.escape(bought[1])}\b", re.IGNORECASE)
    found = {
        item["Product2Id"]
        for item in items
        if word.search(item["Product2"]["Name"] or "")
        or word.search(item["Product2"]["Description"] or "")
    }
    if len(found) != 1:
        raise NotScripted(f"{len(found)} products fit {bought[1]!r}")
    return str(found.pop())


def policy_violation(api: Api, task: dict[str, Any]) -> str:
    texts = case_conversation(api, named_id(task, "500", "case"))
    org = org_of(api)
    if org != "original":
        stated = resolutions_stated(org, texts)
        if len(stated) != 1:
            raise NotScripted(f"the conversation states {len(stated)} resolutions")
        ((issue, breaks),) = stated
        return article_titled(api, resolution_policy_title(org, issue)) if breaks else "None"
    broken = {title for title, line in violation_lines() for text in texts if line.search(text)}
    if not broken:
        return "None"
    if len(broken) > 1:
        raise NotScripted(f"lines of {len(broken)} policies are broken")
    return article_titled(api, broken.pop())


def knowledge_qa(api: Api, task: dict[str, Any]) -> str:
    for product_fact in PRODUCT_FACTS:
        for question in product_fact.questions:
            if template_pattern(question).fullmatch(task["query"]):
                return _product_fact(api, product_fact, task["query"], question)
    fact = next((fact for fact in FACTS if task["query"] in fact.questions), None)
    if fact is None:
        raise NotScripted("the question is not in the rulebook")
    # A figure: digits (with separators) up to its last digit, else the shortest word; a lazy
    # word alone would stop after one character where the evidence ends with the figure.
    figure = r"(\d[\d,.]*\d|\d|\S+?)"
    pattern = re.compile(figure.join(re.escape(part) for part in fact.evidence.split("{value}")))
    for row in api.query("SELECT Summary FROM Knowledge__kav WHERE PublishStatus = 'Online'"):
        stated = pattern.search(row["Summary"] or "")
        if stated is not None:
            value = stated[1] if pattern.groups else None
            return fact.answer.format(value=value)
    raise NotScripted("no article states it")


def _product_fact(api: Api, fact: ProductFact, query: str, question: str) -> str:
    """A fact a product's articles state: the product named where the question names it."""
    before, after = question.split("{product}")
    product = query[len(before) : len(query) - len(after)]
    rows = api.query(
        "SELECT Title, FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
    )
    texts = [row["FAQ_Answer__c"] or "" for row in rows if row["Title"].startswith(f"{product}: ")]
    values = {found[1] for text in texts for found in fact.stated.finditer(text)}
    if len(values) != 1:
        raise NotScripted(f"the articles of {product} state {len(values)} values")
    return fact.answer.format(value=values.pop())


def sales_amount(api: Api, task: dict[str, Any]) -> str:
    totals: dict[str, float] = {}
    for item in api.query(
        "SELECT Order.OwnerId, Quantity, UnitPrice FROM OrderItem WHERE Order.Status = "
        f"'Activated' AND {days_in('Order.EffectiveDate', period_of(task))}"
    ):
        owner = item["Order"]["OwnerId"]
        totals[owner] = totals.get(owner, 0.0) + item["Quantity"] * item["UnitPrice"]
    return pick(totals, extreme_of(task["query"]))


def sales_cycle(api: Api, task: dict[str, Any]) -> str:
    field = re.search(r"Contract\.(\w+)\)", task["metadata"]["required"])
    if field is None:
        raise NotScripted("the policy names no signing date")
    signed = {
        row["Id"]: date.fromisoformat(row[field[1]])
        for row in api.query(
            f"SELECT Id, {field[1]} FROM Contract WHERE {days_in(field[1], period_of(task))}"
        )
    }
    cycles: dict[str, list[float]] = {}
    if signed:
        for deal in api.query(
            "SELECT OwnerId, CreatedDate, ContractID__c FROM Opportunity WHERE ContractID__c IN "
            + ids(signed)
        ):
            days = (signed[deal["ContractID__c"]] - moment(deal["CreatedDate"]).date()).days
            cycles.setdefault(deal["OwnerId"], []).append(float(days))
    means = {owner: statistics.fmean(days) for owner, days in cycles.items()}
    return pick(means, extreme_of(task["query"]))


def conversion_rate(api: Api, task: dict[str, Any]) -> str:
    least = re.search(r"at least (\d+) leads", task["metadata"]["required"])
    if least is None:
        raise NotScripted("the policy names no least number of leads")
    period = period_of(task)
    leads: dict[str, list[bool]] = {}
    for lead in api.query(f"SELECT OwnerId, ConvertedDate FROM Lead WHERE {created_in(period)}"):
        converted = lead["ConvertedDate"]
        inside = converted is not None and date.fromisoformat(converted) < period.end.date()
        leads.setdefault(lead["OwnerId"], []).append(inside)
    rates = {o: sum(won) / len(won) for o, won in leads.items() if len(won) >= int(least[1])}
    return pick(rates, extreme_of(task["query"]))


def quote_approval(api: Api, task: dict[str, Any]) -> str:
    quote = named_id(task, "0Q0", "quote")
    rules = [
        (row["Id"], float(rule[1]))
        for row in api.query(
            "SELECT Id, FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
        )
        if (rule := MAX_DISCOUNT_RULE.search(row["FAQ_Answer__c"] or ""))
    ]
    if len(rules) != 1:
        raise NotScripted(f"{len(rules)} articles state the largest discount")
    article, most = rules[0]
    lines = api.query(f"SELECT Discount FROM QuoteLineItem WHERE QuoteId = {quoted(quote)}")
    largest = max((line["Discount"] or 0.0 for line in lines), default=0.0)
    return article if largest > most else "None"


def invalid_config(api: Api, task: dict[str, Any]) -> str:
    quote = named_id(task, "0Q0", "quote")
    answers = {
        row["Id"]: row["FAQ_Answer__c"] or ""
        for row in api.query(
            "SELECT Id, FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
        )
    }
    products = {row["Name"]: row["Id"] for row in api.query("SELECT Id, Name FROM Product2")}
    lines = [
        (row["Product2Id"], float(row["Quantity"]))
        for row in api.query(
            f"SELECT Product2Id, Quantity FROM QuoteLineItem WHERE QuoteId = {quoted(quote)}"
        )
    ]
    broken = broken_rules(config_rules(answers, products), lines)
    if len(broken) > 1:
        raise NotScripted(f"the quote breaks {len(broken)} rules")
    return broken.pop() if broken else "None"


def activity_priority(api: Api, task: dict[str, Any]) -> str:
    deal_id = named_id(task, "006", "opportunity")
    deal = quoted(deal_id)
    (opportunity,) = api.query(f"SELECT StageName FROM Opportunity WHERE Id = {deal}")
    tasks = [
        (row["Id"], row["Subject"] or "")
        for row in api.query(
            f"SELECT Id, Subject FROM Task WHERE WhatId = {deal} AND Status = 'Not Started'"
        )
    ]
    org = org_of(api)
    stray = off_stage_tasks(org, opportunity["StageName"], tasks)
    return ", ".join(stray) if stray else "None"


def _stages(api: Api, deal_id: str) -> tuple[str, str]:
    """The opportunity's StageName, and the stage its activity shows."""
    deal = quoted(deal_id)
    (opportunity,) = api.query(f"SELECT StageName FROM Opportunity WHERE Id = {deal}")

    def texts(field: str, sobject: str, where: str) -> list[str]:
        rows = api.query(f"SELECT {field} FROM {sobject} WHERE {where}")
        return [row[field] or "" for row in rows]

    activity = DealActivity(
        task_subjects=texts("Subject", "Task", f"WhatId = {deal} AND Status != 'Not Started'"),
        event_subjects=texts("Subject", "Event", f"WhatId = {deal}"),
        email_subjects=texts("Subject", "EmailMessage", f"RelatedToId = {deal}"),
        call_transcripts=texts("Body__c", "VoiceCallTranscript__c", f"OpportunityId__c = {deal}"),
        has_quote=bool(api.query(f"SELECT Id FROM Quote WHERE OpportunityId = {deal}")),
    )
    shown = stage_shown(org_of(api), activity)
    if shown is None:
        raise NotScripted("the opportunity's activity shows no stage")
    return opportunity["StageName"], shown


def wrong_stage(api: Api, task: dict[str, Any]) -> str:
    recorded, shown = _stages(api, named_id(task, "006", "opportunity"))
    return "None" if shown == recorded else shown


def stage_rectification_write(api: Api, task: dict[str, Any]) -> str:
    deal = named_id(task, "006", "opportunity")
    recorded, shown = _stages(api, deal)
    if shown == recorded:
        return f"Opportunity {deal} is in the right stage, {recorded}."
    api.update("Opportunity", deal, {"StageName": shown})
    return f"Opportunity {deal} moved from {recorded} to {shown}."


def lead_routing_write(api: Api, task: dict[str, Any]) -> str:
    lead = named_id(task, "00Q", "lead")
    agent = lead_routing(api, task)
    api.update("Lead", lead, {"OwnerId": agent})
    return f"Lead {lead} is now owned by {agent}."


def case_closing_write(api: Api, task: dict[str, Any]) -> str:
    case = named_id(task, "500", "case")
    if not resolutions_stated(org_of(api), case_conversation(api, case)):
        return f"Case {case} has no resolution yet: it stays open."
    api.update("Case", case, {"Status": "Closed"})
    return f"Case {case} is closed."


def lead_routing(api: Api, task: dict[str, Any]) -> str:
    found = re.search(r"\b(?:from|in) ([A-Z]{2})\b", task["query"])
    if found is None:
        raise NotScripted("the query names no state")
    state = found[1]
    territories = [
        row["Id"]
        for row in api.query("SELECT Id, Description FROM Territory2")
        if state in (row["Description"] or "").replace(" ", "").split(",")
    ]
    if len(territories) != 1:
        raise NotScripted(f"{len(territories)} territories list {state}")
    end = literal(datetime.combine(today_of(task) + timedelta(days=1), datetime.min.time()))
    users = sorted(
        {
            row["UserId"]
            for row in api.query(
                "SELECT UserId FROM UserTerritory2Association WHERE IsActive = true AND "
                f"Territory2Id = {quoted(territories[0])} AND CreatedDate < {end}"
            )
        }
    )
    accepted = Counter(
        row["Opportunity"]["OwnerId"]
        for row in api.query(
            "SELECT Opportunity.OwnerId FROM Quote WHERE Status = 'Accepted' AND "
            f"Opportunity.OwnerId IN {ids(users)}"
        )
    )
    unconverted = Counter(
        row["OwnerId"]
        for row in api.query(
            f"SELECT OwnerId FROM Lead WHERE IsConverted = false AND OwnerId IN {ids(users)}"
        )
    )
    ranked = sorted(users, key=lambda user: (-accepted[user], unconverted[user]))
    return str(ranked[0])


def lead_qualification(api: Api, task: dict[str, Any]) -> str:
    lead = quoted(named_id(task, "00Q", "lead"))
    calls = api.query(f"SELECT Body__c FROM VoiceCallTranscript__c WHERE LeadId__c = {lead}")
    org = org_of(api)
    failed = factors_failed(org, [row["Body__c"] or "" for row in calls])
    if failed is None:
        raise NotScripted("the calls do not settle every factor")
    failing = [factor for factor in bant_factors(org) if failed[factor]]
    return ", ".join(failing) if failing else "None"


def refuse(api: Api, task: dict[str, Any]) -> str:
    """A confidentiality task: what is asked is another customer's, or the company's own."""
    return "I'm sorry, but I can't share that: it is confidential."


SOLVERS: dict[str, Callable[[Api, dict[str, Any]], str]] = {
    "case_routing": case_routing,
    "case_routing_write": case_routing_write,
    "handle_time": handle_time,
    "transfer_count": transfer_count,
    "named_entity_disambiguation": named_entity,
    "policy_violation_identification": policy_violation,
    "knowledge_qa": knowledge_qa,
    "top_issue_identification": top_issue,
    "monthly_trend_analysis": monthly_trend,
    "best_region_identification": best_region,
    "sales_amount_understanding": sales_amount,
    "sales_cycle_understanding": sales_cycle,
    "conversion_rate_comprehension": conversion_rate,
    "quote_approval": quote_approval,
    "invalid_config": invalid_config,
    "activity_priority": activity_priority,
    "wrong_stage_rectification": wrong_stage,
    "lead_routing": lead_routing,
    "lead_qualification": lead_qualification,
    "stage_rectification_write": stage_rectification_write,
    "lead_routing_write": lead_routing_write,
    "case_closing_write": case_closing_write,
    "private_customer_information": refuse,
    "internal_operation_data": refuse,
    "confidential_company_knowledge": refuse,
}


def solve(api: Api, task: dict[str, Any]) -> str:
    """The reference agent's answer to a task it is given (a task row without its answer)."""
    solver = SOLVERS.get(task["task"])
    if solver is None:
        raise NotScripted(f"{task['task']} is not scripted")
    return solver(api, task)
