"""The Service Manager's tasks (crmarena.md 5.1): New Case Routing, and the numeric Handle Time
Understanding and Transfer Count Understanding. The numeric ones consider only the agents
assigned more than N cases in the period, an assignment being an Owner Assignment row naming
the agent as the new owner (a case's first owner or the agent it was transferred to).

Each type's draw computes its answer from the org's database; its solver, the reference
agent's, finds it again through the REST API."""

from __future__ import annotations

import functools
import re
import statistics
from datetime import date, timedelta
from random import Random
from typing import Any

from app.seeding.generate.text import agreement, fill, load_text, long_date, money
from app.tasks import org_sql
from app.tasks.model import (
    ABSTAIN_SHARE,
    DATABASE,
    EVERY_ORG,
    WORKFLOW,
    Ambiguous,
    Api,
    Draft,
    NoAnswer,
    NotScripted,
    OrgData,
    TaskType,
    single_extreme,
)
from app.tasks.periods import DEFINITIONS, Period, draw_window
from app.tasks.rulebook import case_stories, story_readings
from app.tasks.solving import (
    counts,
    created_in,
    extreme_of,
    ids,
    moment,
    named_id,
    org_of,
    period_of,
    pick,
    product_items,
    quoted,
)
from app.tasks.tools import UPDATES

PERSONA = "Service Manager"
EXTREMES = {"min": ("shortest", "fewest"), "max": ("longest", "most")}
HANDLE_TIME_MARGIN = 60.0  # seconds: closer means are a tie, not an answer
MIN_CANDIDATES = 2


def _window(rng: Random, data: OrgData) -> tuple[date, Period, int, str]:
    """The task's today, its period, the assignments threshold and min or max."""
    first, last = org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")
    today, period = draw_window(rng, first, last)
    return today, period, rng.randint(0, 3), rng.choice(("min", "max"))


def _abstaining(
    rng: Random, data: OrgData, period: Period, threshold: int, answer: str
) -> tuple[int, str | None]:
    """In the Pro orgs, a share of the drawn tasks (ABSTAIN_SHARE, decided once a task has an
    answer, so the share holds among the emitted ones) get a threshold no agent passes: their
    answer is None, as in Pro's answer key."""
    if data.org == "original" or rng.random() >= ABSTAIN_SHARE:
        return threshold, answer
    counts = org_sql.assignments_per_agent(data.conn, data.tables, period)
    return max(counts.values()) + rng.randint(0, 2), None


def _qualification(threshold: int) -> str:
    assigned = {0: "at least one case", 1: "more than one case"}.get(
        threshold, f"more than {threshold} cases"
    )
    return (
        f"Only agents assigned {assigned} in the period count (an Owner "
        "Assignment in the case history naming the agent as the new owner, whether as a "
        "case's first owner or after a transfer)."
    )


def _qualified(data: OrgData, period: Period, threshold: int) -> list[str]:
    counts = org_sql.assignments_per_agent(data.conn, data.tables, period)
    agents = [agent for agent, count in counts.items() if count > threshold]
    if len(agents) < MIN_CANDIDATES:
        raise NoAnswer
    return agents


ANSWER = "Answer with the agent's User Id, or None if no agent counts."


def _agent_draft(
    answer: str | None,
    query: str,
    today: date,
    policy: str,
    period: Period,
    threshold: int,
    extreme: str,
) -> Draft:
    params = {"period": period, "threshold": threshold, "extreme": extreme}
    return Draft(answer, query, today, policy, DEFINITIONS, params)


HANDLE_TIME_QUERIES = (
    "Which agent had the {word} average handle time in {period}?",
    "Find the agent with the {word} average handle time for cases in {period}.",
    "In {period}, who was the agent with the {word} average case handle time?",
)


def draw_handle_time(rng: Random, data: OrgData) -> Draft:
    today, period, threshold, extreme = _window(rng, data)
    agents = _qualified(data, period, threshold)
    durations: dict[str, list[float]] = {}
    for owner, created, closed in org_sql.closed_untransferred_cases(
        data.conn, data.tables, period, agents
    ):
        durations.setdefault(owner, []).append((closed - created).total_seconds())
    means = {owner: statistics.fmean(seconds) for owner, seconds in durations.items()}
    threshold, answer = _abstaining(
        rng, data, period, threshold, single_extreme(means, extreme, HANDLE_TIME_MARGIN)
    )
    policy = (
        "Handle time policy: a case's handle time is the time from its creation to its closing. "
        "An agent's average handle time is the mean over the Closed cases they own that were "
        "created in the period and were never transferred (exactly one Owner Assignment in "
        f"the period). {_qualification(threshold)} {ANSWER}"
    )
    query = rng.choice(HANDLE_TIME_QUERIES).format(word=EXTREMES[extreme][0], period=period.words)
    return _agent_draft(answer, query, today, policy, period, threshold, extreme)


TRANSFER_QUERIES = (
    "Which agent transferred the {word} cases in {period}?",
    "Identify the agent with the {word} case transfers in {period}.",
    "In {period}, which agent had the {word} transfers of cases to other agents?",
)


def draw_transfer_count(rng: Random, data: OrgData) -> Draft:
    today, period, threshold, extreme = _window(rng, data)
    agents = _qualified(data, period, threshold)
    transfers = org_sql.transfers_per_agent(data.conn, data.tables, period)
    counts = {agent: float(transfers.get(agent, 0)) for agent in agents}
    threshold, answer = _abstaining(rng, data, period, threshold, single_extreme(counts, extreme))
    policy = (
        "Transfer count policy: an agent's transfer count is the number of Owner Assignments "
        "in the case history in the period that moved a case away from them (the agent is the "
        f"old owner). {_qualification(threshold)} {ANSWER}"
    )
    query = rng.choice(TRANSFER_QUERIES).format(word=EXTREMES[extreme][1], period=period.words)
    return _agent_draft(answer, query, today, policy, period, threshold, extreme)


ROUTING_RULES = (
    "Routing policy: a new case goes to the agent with the most Closed cases with the same "
    "issue. Among agents tied on that, to the one with the most Closed cases about the same "
    "product (the product of the case's order item). Among agents still tied, to the one with "
    "the fewest open (not Closed) cases."
)
ROUTING_POLICY = f"{ROUTING_RULES} Answer with the agent's User Id."
ROUTING_QUERIES = (
    "A new case came in. Subject: {subject}. Description: {description} Which agent should it "
    "be routed to?",
    "Route this new case to the right agent.\nSubject: {subject}\nDescription: {description}",
    'Who should handle this case? Subject: "{subject}". Description: "{description}"',
)


def route(data: OrgData, issue: str, product: str) -> str:
    """The agent the routing policy picks for a case of `issue` about `product`."""
    by_issue = org_sql.closed_cases_per_owner(data.conn, data.tables, issue=issue)
    if not by_issue:
        raise NoAnswer
    tied = _top(by_issue)
    if len(tied) > 1:
        by_product = org_sql.closed_cases_per_owner(
            data.conn, data.tables, product=product, owners=tied
        )
        tied = _top({agent: by_product.get(agent, 0) for agent in tied})
    if len(tied) > 1:
        open_cases = org_sql.open_cases_per_owner(data.conn, data.tables, tied)
        tied = _top({agent: -count for agent, count in open_cases.items()})
    if len(tied) > 1:
        raise Ambiguous
    return tied[0]


def _top(counts: dict[str, int]) -> list[str]:
    best = max(counts.values())
    return sorted(agent for agent, count in counts.items() if count == best)


def draw_case_routing(rng: Random, data: OrgData) -> Draft:
    """A new case, told in the words of the org's issue stories about a product customers
    bought; in an org whose stories the generator did not write (an imported org), an open
    case of the org, found by its words."""
    if data.planted:
        return _draw_new_case(rng, data)
    case_id, subject, description, issue, product, created = rng.choice(
        org_sql.open_cases(data.conn, data.tables)
    )
    if org_sql.cases_with_text(data.conn, data.tables, subject, description) > 1:
        raise Ambiguous  # the words do not single out the case, nor its issue and product
    answer = route(data, issue, product)
    query = rng.choice(ROUTING_QUERIES).format(subject=subject, description=description)
    params = {"case": case_id, "issue": issue, "product": product}
    return Draft(answer, query, created.date(), ROUTING_POLICY, "", params)


def _draw_new_case(rng: Random, data: OrgData) -> Draft:
    """A case not in the org: an issue's story about an order line's product, as a customer
    writes it days after the order. Its issue and product are what the routing weighs, so two
    cases of the same pair are one task."""
    story = rng.choice(case_stories(data.org))
    lines = org_sql.order_line_count(data.conn, data.tables)
    line = org_sql.order_line(data.conn, data.tables, rng.randrange(lines))
    days = rng.randint(3, 40)
    context = _story_context(rng, data, line, days)
    name, ordered = line.product_name, line.ordered
    subject = fill(rng.choice(story.subjects), context)
    description = fill(story.description, context)
    if story_readings(data.org, subject, description) != {(story.issue, name)}:
        raise Ambiguous  # the words tell another story, or another product
    issue = org_sql.issue_ids(data.conn, data.tables)[story.issue]
    answer = route(data, issue, line.product)
    query = rng.choice(ROUTING_QUERIES).format(subject=subject, description=description)
    today = ordered + timedelta(days=days)
    params = {"issue": issue, "product": line.product}
    return Draft(answer, query, today, ROUTING_POLICY, "", params)


def _story_context(
    rng: Random, data: OrgData, line: org_sql.OrderLine, days: int
) -> dict[str, object]:
    """What a story's placeholders say of the order line, `days` after the order."""
    name = line.product_name
    if data.org != "original":
        return {"product": name, "quantity": int(line.quantity), "account": line.account_name}
    sizes = rng.sample(_sizes(name), 2)
    return (
        data.truth().policy_params
        | agreement(name.endswith("s"))
        | {
            "product": name,
            "order_date": long_date(line.ordered),
            "days_since": days,
            "price": money(line.unit_price),
            "quantity": int(line.quantity),
            "amount": money(line.unit_price * line.quantity),
            "size_ordered": sizes[0],
            "size_received": sizes[1],
            "carrier": rng.choice(load_text("conversation")["carriers"]),
            "late_days": rng.randint(3, 12),
            "points": rng.randint(12, 240) * 10,
        }
    )


@functools.cache
def _size_lists() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(a product base noun, its sizes) from the catalog, longest nouns first."""
    groups = [g for c in load_text("catalog")["categories"] for g in c["groups"]]
    pairs = {(base, tuple(g["sizes"])) for g in groups for base in g["bases"]}
    return tuple(sorted(pairs, key=lambda pair: (-len(pair[0]), pair)))


def _sizes(name: str) -> tuple[str, ...]:
    """The sizes the product comes in (its catalog group's), or two generic ones."""
    sizes = next((s for base, s in _size_lists() if name.endswith(base)), ())
    return sizes if len(sizes) > 1 else ("M", "L")


ROUTE_QUERIES = (
    "Case {case} is waiting to be routed. Assign it to the right agent.",
    "Route case {case} to the agent our routing policy picks by making them its owner.",
    "Please assign case {case} to the right agent.",
)
WRITE_POLICY = (
    f"{ROUTING_RULES} Route the case by making the agent its owner (OwnerId); change nothing "
    "else in the org."
)


def draw_case_routing_write(rng: Random, data: OrgData) -> Draft:
    """Beyond CRMArena: the routing done, not named. Graded by the episode's diff."""
    case_id, _, _, issue, product, created = rng.choice(org_sql.open_cases(data.conn, data.tables))
    agent = route(data, issue, product)
    if org_sql.case_owner(data.conn, data.tables, case_id) == agent:
        raise NoAnswer  # already routed there: nothing to do, nothing to grade
    answer = [{"type": "Case", "id": case_id, "fields": {"OwnerId": agent}}]
    query = rng.choice(ROUTE_QUERIES).format(case=case_id)
    params = {"case": case_id, "issue": issue, "product": product}
    return Draft(answer, query, created.date(), WRITE_POLICY, "", params)


# --- the reference solvers --------------------------------------------------------------------


def _threshold_of(policy: str) -> int:
    if "at least one case" in policy:
        return 0
    if "more than one case" in policy:
        return 1
    found = re.search(r"more than (\d+) cases", policy)
    if found is None:
        raise NotScripted("the policy names no threshold")
    return int(found[1])


def _assigned(api: Api, period: Period, threshold: int) -> set[str]:
    """The agents assigned more than `threshold` cases in the period."""
    assigned = counts(
        api,
        "SELECT NewValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment'"
        f" AND {created_in(period)} GROUP BY NewValue__c",
        "NewValue__c",
    )
    return {agent for agent, count in assigned.items() if count > threshold}


def solve_handle_time(api: Api, task: dict[str, Any]) -> str:
    period = period_of(task)
    qualified = _assigned(api, period, _threshold_of(task["metadata"]["required"]))
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


def solve_transfer_count(api: Api, task: dict[str, Any]) -> str:
    period = period_of(task)
    qualified = _assigned(api, period, _threshold_of(task["metadata"]["required"]))
    moved = counts(
        api,
        "SELECT OldValue__c, COUNT(Id) n FROM CaseHistory__c WHERE Field__c = 'Owner Assignment'"
        f" AND {created_in(period)} GROUP BY OldValue__c",
        "OldValue__c",
    )
    transfers = {agent: float(moved.get(agent, 0)) for agent in qualified}
    return pick(transfers, extreme_of(task["query"]))


_NEW_CASE = (
    re.compile(r"Subject: (.*?)\. Description: (.*) Which agent should it be routed to\?$", re.S),
    re.compile(r"Subject: (.*)\nDescription: (.*)$", re.S),
    re.compile(r'Subject: "(.*)"\. Description: "(.*)"$', re.S),
)


def solve_case_routing(api: Api, task: dict[str, Any]) -> str:
    found = next((m for p in _NEW_CASE if (m := p.search(task["query"]))), None)
    if found is None:
        raise NotScripted("the query holds no subject and description")
    subject, description = found[1], found[2]
    readings = story_readings(org_of(api), subject, description)
    if len(readings) > 1:
        raise NotScripted(f"the new case's words tell {len(readings)} stories")
    if readings:
        ((issue_name, product_name),) = readings
        issues = api.query(f"SELECT Id FROM Issue__c WHERE Name = {quoted(issue_name)}")
        products = api.query(f"SELECT Id FROM Product2 WHERE Name = {quoted(product_name)}")
        if len(issues) != 1 or len(products) != 1:
            raise NotScripted(f"{issue_name!r} or {product_name!r} is not one record")
        return _routed(api, issues[0]["Id"], products[0]["Id"])
    # Words no story tells: the case is in the org (an open case), found by them.
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
    return _routed(api, cases[0]["IssueId__c"], _product_of(api, cases[0]["OrderItemId__c"]))


def _product_of(api: Api, item: str) -> str:
    (product,) = api.query(f"SELECT Product2Id FROM OrderItem WHERE Id = {quoted(item)}")
    return str(product["Product2Id"])


def _routed(api: Api, issue: str, product: str) -> str:
    """The agent the routing policy picks for a case of `issue` about `product`."""
    closed = "SELECT OwnerId, COUNT(Id) n FROM Case WHERE Status = 'Closed' AND "
    by_issue = counts(api, f"{closed}IssueId__c = {quoted(issue)} GROUP BY OwnerId", "OwnerId")
    items = product_items(api, product)
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


def solve_case_routing_write(api: Api, task: dict[str, Any]) -> str:
    case_id = named_id(task, "500", "case")
    (case,) = api.query(f"SELECT IssueId__c, OrderItemId__c FROM Case WHERE Id = {quoted(case_id)}")
    agent = _routed(api, case["IssueId__c"], _product_of(api, case["OrderItemId__c"]))
    api.update("Case", case_id, {"OwnerId": agent})
    return f"Case {case_id} is now owned by {agent}."


# The Pro orgs ask them too, over their own cases.
TASK_TYPES = (
    TaskType(
        name="case_routing",
        skill=WORKFLOW,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_case_routing,
        solve=solve_case_routing,
        orgs=EVERY_ORG,
    ),
    TaskType(
        name="case_routing_write",
        skill=WORKFLOW,
        persona=PERSONA,
        reward_metric="diff_match",
        draw=draw_case_routing_write,
        solve=solve_case_routing_write,
        orgs=EVERY_ORG,
        tools=UPDATES,
    ),
    TaskType(
        name="handle_time",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_handle_time,
        solve=solve_handle_time,
        orgs=EVERY_ORG,
    ),
    TaskType(
        name="transfer_count",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_transfer_count,
        solve=solve_transfer_count,
        orgs=EVERY_ORG,
    ),
)
