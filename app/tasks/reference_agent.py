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
from collections.abc import Callable, Iterable
from datetime import date, datetime, timedelta
from typing import Any, Protocol

import httpx

from app.tasks.episodes import TODAY
from app.tasks.original.service_agent import FACTS
from app.tasks.periods import Period, read_period
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

API_VERSION = "v59.0"


class Api(Protocol):
    def query(self, soql: str) -> list[dict[str, Any]]: ...

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None: ...

    def fields(self, sobject: str) -> set[str]: ...

    def sobjects(self) -> set[str]: ...


class NotScripted(Exception):
    """A task type the reference agent does not solve."""


class HttpApi:
    """The org's REST API with a session token: every record of a query, page after page."""

    def __init__(self, client: httpx.Client, token: str) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"}

    def query(self, soql: str) -> list[dict[str, Any]]:
        url = f"/services/data/{API_VERSION}/query"
        response = self.client.get(url, params={"q": soql}, headers=self.headers)
        records: list[dict[str, Any]] = []
        while True:
            response.raise_for_status()
            body = response.json()
            records += body["records"]
            if body["done"]:
                return records
            response = self.client.get(body["nextRecordsUrl"], headers=self.headers)

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None:
        url = f"/services/data/{API_VERSION}/sobjects/{sobject}/{record_id}"
        self.client.patch(url, json=fields, headers=self.headers).raise_for_status()

    def fields(self, sobject: str) -> set[str]:
        url = f"/services/data/{API_VERSION}/sobjects/{sobject}/describe"
        response = self.client.get(url, headers=self.headers)
        response.raise_for_status()
        return {field["name"] for field in response.json()["fields"]}

    def sobjects(self) -> set[str]:
        response = self.client.get(f"/services/data/{API_VERSION}/sobjects", headers=self.headers)
        response.raise_for_status()
        return {sobject["name"] for sobject in response.json()["sobjects"]}


def _literal(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _ids(values: Iterable[str]) -> str:
    return "(" + ", ".join(_quoted(value) for value in values) + ")"


def _moment(wire: str) -> datetime:
    return datetime.strptime(wire, "%Y-%m-%dT%H:%M:%S.%f%z").replace(tzinfo=None)


def _today(task: dict[str, Any]) -> date:
    found = TODAY.search(task["metadata"]["required"])
    if found is None:
        raise NotScripted("the task names no today")
    return date.fromisoformat(found[1])


def _period(task: dict[str, Any]) -> Period:
    return read_period(task["query"], _today(task))


def _created_in(period: Period) -> str:
    return f"CreatedDate >= {_literal(period.start)} AND CreatedDate < {_literal(period.end)}"


def _pick(values: dict[str, float], extreme: str) -> str:
    """The key of the lowest or highest value; "None" when there is nothing to compare."""
    if not values:
        return "None"
    return (min if extreme == "min" else max)(values, key=lambda key: values[key])


def _extreme(query: str) -> str:
    return "min" if re.search(r"\b(shortest|fewest|lowest)\b", query) else "max"


def _threshold(policy: str) -> int:
    if "at least one case" in policy:
        return 0
    if "more than one case" in policy:
        return 1
    found = re.search(r"more than (\d+) cases", policy)
    if found is None:
        raise NotScripted("the policy names no threshold")
    return int(found[1])


def _counts(api: Api, soql: str, key: str) -> dict[str, int]:
    return {row[key]: int(row["n"]) for row in api.query(soql) if row[key] is not None}


def _qualified(api: Api, period: Period, threshold: int) -> set[str]:
    assigned = _counts(
        api,
        "SELECT NewValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment'"
        f" AND {_created_in(period)} GROUP BY NewValue__c",
        "NewValue__c",
    )
    return {agent for agent, count in assigned.items() if count > threshold}


def handle_time(api: Api, task: dict[str, Any]) -> str:
    period = _period(task)
    qualified = _qualified(api, period, _threshold(task["metadata"]["required"]))
    once = {
        row["CaseId__c"]
        for row in api.query(
            "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
            f"{_created_in(period)} GROUP BY CaseId__c HAVING COUNT(Id) = 1"
        )
    }
    times: dict[str, list[float]] = {}
    for case in api.query(
        "SELECT Id, OwnerId, CreatedDate, ClosedDate FROM Case WHERE Status = 'Closed' AND "
        + _created_in(period)
    ):
        if case["OwnerId"] in qualified and case["Id"] in once and case["ClosedDate"]:
            spent = _moment(case["ClosedDate"]) - _moment(case["CreatedDate"])
            times.setdefault(case["OwnerId"], []).append(spent.total_seconds())
    means = {owner: statistics.fmean(seconds) for owner, seconds in times.items()}
    return _pick(means, _extreme(task["query"]))


def transfer_count(api: Api, task: dict[str, Any]) -> str:
    period = _period(task)
    qualified = _qualified(api, period, _threshold(task["metadata"]["required"]))
    moved = _counts(
        api,
        "SELECT OldValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment'"
        f" AND {_created_in(period)} GROUP BY OldValue__c",
        "OldValue__c",
    )
    counts = {agent: float(moved.get(agent, 0)) for agent in qualified}
    return _pick(counts, _extreme(task["query"]))


def _named_id(task: dict[str, Any], prefix: str, what: str) -> str:
    """The record Id of key prefix `prefix` that the task's query names."""
    found = re.search(rf"\b{prefix}[0-9A-Za-z]{{15}}\b", task["query"])
    if found is None:
        raise NotScripted(f"the query names no {what}")
    return found[0]


def _product_items(api: Api, product: str) -> list[str]:
    rows = api.query(f"SELECT Id FROM OrderItem WHERE Product2Id = {_quoted(product)}")
    return [row["Id"] for row in rows]


def _product_cases(api: Api, task: dict[str, Any], fields: str) -> list[dict[str, Any]]:
    product = _named_id(task, "01t", "product")
    items = _product_items(api, product)
    if not items:
        return []
    return api.query(
        f"SELECT {fields} FROM Case WHERE OrderItemId__c IN {_ids(items)} AND "
        + _created_in(_period(task))
    )


def top_issue(api: Api, task: dict[str, Any]) -> str:
    cases = _product_cases(api, task, "IssueId__c")
    counts = Counter(case["IssueId__c"] for case in cases if case["IssueId__c"])
    return _pick(dict(counts), "max")


def monthly_trend(api: Api, task: dict[str, Any]) -> str:
    cases = _product_cases(api, task, "CreatedDate")
    counts = Counter(_moment(case["CreatedDate"]).strftime("%B") for case in cases)
    return _pick(dict(counts), "max")


def best_region(api: Api, task: dict[str, Any]) -> str:
    times: dict[str, list[float]] = {}
    for case in api.query(
        "SELECT Account.ShippingState, CreatedDate, ClosedDate FROM Case WHERE Status = "
        f"'Closed' AND {_created_in(_period(task))}"
    ):
        state = (case.get("Account") or {}).get("ShippingState")
        if state and case["ClosedDate"]:
            spent = _moment(case["ClosedDate"]) - _moment(case["CreatedDate"])
            times.setdefault(state, []).append(spent.total_seconds())
    return _pick({state: statistics.fmean(t) for state, t in times.items()}, "min")


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
            + _quoted(subject)
        )
        if (case["Description"] or "").strip() == description.strip()
    ]
    if len(cases) != 1:
        raise NotScripted(f"{len(cases)} cases have the new case's subject and description")
    return _route(api, cases[0]["IssueId__c"], cases[0]["OrderItemId__c"])


def _route(api: Api, issue: str, item: str) -> str:
    """The agent the routing policy picks for a case of `issue` about order item `item`."""
    closed = "SELECT OwnerId, COUNT(Id) n FROM Case WHERE Status = 'Closed' AND "
    by_issue = _counts(api, f"{closed}IssueId__c = {_quoted(issue)} GROUP BY OwnerId", "OwnerId")
    (product,) = api.query(f"SELECT Product2Id FROM OrderItem WHERE Id = {_quoted(item)}")
    items = _product_items(api, product["Product2Id"])
    by_product = _counts(
        api, f"{closed}OrderItemId__c IN {_ids(items)} GROUP BY OwnerId", "OwnerId"
    )
    still_open = _counts(
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
    case_id = _named_id(task, "500", "case")
    (case,) = api.query(
        f"SELECT IssueId__c, OrderItemId__c FROM Case WHERE Id = {_quoted(case_id)}"
    )
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
    day = _today(task) - timedelta(days=days)
    (account,) = api.query(f"SELECT AccountId FROM Contact WHERE Id = {_quoted(contact[1])}")
    items = api.query(
        "SELECT Product2Id, Product2.Name, Product2.Description FROM OrderItem WHERE "
        f"Order.AccountId = {_quoted(account['AccountId'])} AND Order.Status = 'Activated' "
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


def _case_conversation(api: Api, case_id: str) -> list[str]:
    case = _quoted(case_id)
    chats = api.query(f"SELECT Body FROM LiveChatTranscript WHERE CaseId = {case}")
    emails = api.query(f"SELECT TextBody FROM EmailMessage WHERE ParentId = {case}")
    return [row["Body"] or "" for row in chats] + [row["TextBody"] or "" for row in emails]


def _article_titled(api: Api, title: str) -> str:
    (article,) = api.query(
        f"SELECT Id FROM Knowledge__kav WHERE PublishStatus = 'Online' AND Title = {_quoted(title)}"
    )
    return str(article["Id"])


def policy_violation(api: Api, task: dict[str, Any]) -> str:
    texts = _case_conversation(api, _named_id(task, "500", "case"))
    org = _org(api)
    if org != "original":
        stated = resolutions_stated(org, texts)
        if len(stated) != 1:
            raise NotScripted(f"the conversation states {len(stated)} resolutions")
        ((issue, breaks),) = stated
        return _article_titled(api, resolution_policy_title(org, issue)) if breaks else "None"
    broken = {title for title, line in violation_lines() for text in texts if line.search(text)}
    if not broken:
        return "None"
    if len(broken) > 1:
        raise NotScripted(f"lines of {len(broken)} policies are broken")
    return _article_titled(api, broken.pop())


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


def _days_in(field: str, period: Period) -> str:
    start, end = period.start.date().isoformat(), period.end.date().isoformat()
    return f"{field} >= {start} AND {field} < {end}"


def sales_amount(api: Api, task: dict[str, Any]) -> str:
    totals: dict[str, float] = {}
    for item in api.query(
        "SELECT Order.OwnerId, Quantity, UnitPrice FROM OrderItem WHERE Order.Status = "
        f"'Activated' AND {_days_in('Order.EffectiveDate', _period(task))}"
    ):
        owner = item["Order"]["OwnerId"]
        totals[owner] = totals.get(owner, 0.0) + item["Quantity"] * item["UnitPrice"]
    return _pick(totals, _extreme(task["query"]))


def sales_cycle(api: Api, task: dict[str, Any]) -> str:
    field = re.search(r"Contract\.(\w+)\)", task["metadata"]["required"])
    if field is None:
        raise NotScripted("the policy names no signing date")
    signed = {
        row["Id"]: date.fromisoformat(row[field[1]])
        for row in api.query(
            f"SELECT Id, {field[1]} FROM Contract WHERE {_days_in(field[1], _period(task))}"
        )
    }
    cycles: dict[str, list[float]] = {}
    if signed:
        for deal in api.query(
            "SELECT OwnerId, CreatedDate, ContractID__c FROM Opportunity WHERE ContractID__c IN "
            + _ids(signed)
        ):
            days = (signed[deal["ContractID__c"]] - _moment(deal["CreatedDate"]).date()).days
            cycles.setdefault(deal["OwnerId"], []).append(float(days))
    means = {owner: statistics.fmean(days) for owner, days in cycles.items()}
    return _pick(means, _extreme(task["query"]))


def conversion_rate(api: Api, task: dict[str, Any]) -> str:
    least = re.search(r"at least (\d+) leads", task["metadata"]["required"])
    if least is None:
        raise NotScripted("the policy names no least number of leads")
    period = _period(task)
    leads: dict[str, list[bool]] = {}
    for lead in api.query(f"SELECT OwnerId, ConvertedDate FROM Lead WHERE {_created_in(period)}"):
        converted = lead["ConvertedDate"]
        inside = converted is not None and date.fromisoformat(converted) < period.end.date()
        leads.setdefault(lead["OwnerId"], []).append(inside)
    rates = {o: sum(won) / len(won) for o, won in leads.items() if len(won) >= int(least[1])}
    return _pick(rates, _extreme(task["query"]))


def quote_approval(api: Api, task: dict[str, Any]) -> str:
    quote = _named_id(task, "0Q0", "quote")
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
    lines = api.query(f"SELECT Discount FROM QuoteLineItem WHERE QuoteId = {_quoted(quote)}")
    largest = max((line["Discount"] or 0.0 for line in lines), default=0.0)
    return article if largest > most else "None"


def invalid_config(api: Api, task: dict[str, Any]) -> str:
    quote = _named_id(task, "0Q0", "quote")
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
            f"SELECT Product2Id, Quantity FROM QuoteLineItem WHERE QuoteId = {_quoted(quote)}"
        )
    ]
    broken = broken_rules(config_rules(answers, products), lines)
    if len(broken) > 1:
        raise NotScripted(f"the quote breaks {len(broken)} rules")
    return broken.pop() if broken else "None"


def activity_priority(api: Api, task: dict[str, Any]) -> str:
    deal_id = _named_id(task, "006", "opportunity")
    deal = _quoted(deal_id)
    (opportunity,) = api.query(f"SELECT StageName FROM Opportunity WHERE Id = {deal}")
    tasks = [
        (row["Id"], row["Subject"] or "")
        for row in api.query(
            f"SELECT Id, Subject FROM Task WHERE WhatId = {deal} AND Status = 'Not Started'"
        )
    ]
    org = _org(api)
    stray = off_stage_tasks(org, opportunity["StageName"], tasks)
    return ", ".join(stray) if stray else "None"


def _org(api: Api) -> str:
    """Which org's texts the org speaks: only the Pro orgs record calls (a custom object), b2c
    sells to people (person accounts), b2b to companies."""
    if "VoiceCallTranscript__c" not in api.sobjects():
        return "original"
    return "b2c" if "IsPersonAccount" in api.fields("Account") else "b2b"


def _stages(api: Api, deal_id: str) -> tuple[str, str]:
    """The opportunity's StageName, and the stage its activity shows."""
    deal = _quoted(deal_id)
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
    shown = stage_shown(_org(api), activity)
    if shown is None:
        raise NotScripted("the opportunity's activity shows no stage")
    return opportunity["StageName"], shown


def wrong_stage(api: Api, task: dict[str, Any]) -> str:
    recorded, shown = _stages(api, _named_id(task, "006", "opportunity"))
    return "None" if shown == recorded else shown


def stage_rectification_write(api: Api, task: dict[str, Any]) -> str:
    deal = _named_id(task, "006", "opportunity")
    recorded, shown = _stages(api, deal)
    if shown == recorded:
        return f"Opportunity {deal} is in the right stage, {recorded}."
    api.update("Opportunity", deal, {"StageName": shown})
    return f"Opportunity {deal} moved from {recorded} to {shown}."


def lead_routing_write(api: Api, task: dict[str, Any]) -> str:
    lead = _named_id(task, "00Q", "lead")
    agent = lead_routing(api, task)
    api.update("Lead", lead, {"OwnerId": agent})
    return f"Lead {lead} is now owned by {agent}."


def case_closing_write(api: Api, task: dict[str, Any]) -> str:
    case = _named_id(task, "500", "case")
    if not resolutions_stated(_org(api), _case_conversation(api, case)):
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
    end = _literal(datetime.combine(_today(task) + timedelta(days=1), datetime.min.time()))
    users = sorted(
        {
            row["UserId"]
            for row in api.query(
                "SELECT UserId FROM UserTerritory2Association WHERE IsActive = true AND "
                f"Territory2Id = {_quoted(territories[0])} AND CreatedDate < {end}"
            )
        }
    )
    accepted = Counter(
        row["Opportunity"]["OwnerId"]
        for row in api.query(
            "SELECT Opportunity.OwnerId FROM Quote WHERE Status = 'Accepted' AND "
            f"Opportunity.OwnerId IN {_ids(users)}"
        )
    )
    unconverted = Counter(
        row["OwnerId"]
        for row in api.query(
            f"SELECT OwnerId FROM Lead WHERE IsConverted = false AND OwnerId IN {_ids(users)}"
        )
    )
    ranked = sorted(users, key=lambda user: (-accepted[user], unconverted[user]))
    return str(ranked[0])


def lead_qualification(api: Api, task: dict[str, Any]) -> str:
    lead = _quoted(_named_id(task, "00Q", "lead"))
    calls = api.query(f"SELECT Body__c FROM VoiceCallTranscript__c WHERE LeadId__c = {lead}")
    org = _org(api)
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
