"""The case timeline: when each case is opened, by whom, about what, who owns it, and when
it closes. Every other case-related record (history, e-mails, chats) follows from this plan.

Latent variables used here: case seasonality (global, per issue and per product), customers'
complaint habits, agents' specialties (routing), skill (handle time, transfers) and a
per-state service factor (regional closure times).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from random import Random
from typing import Any

from app.seeding import common
from app.seeding.generate.catalog import Catalog
from app.seeding.generate.orders import Orders
from app.seeding.generate.people import People
from app.seeding.generate.records import record_id
from app.seeding.generate.sampling import DaySampler, between, moment, spread, weighted_sample

CASE_COUNT = 977
CLOSED_COUNT = 918
TRANSFER_COUNT = 111  # Owner Assignment rows beyond the first one per case (1088 - 977)
CHAT_COUNT = 774
EMAIL_COUNT = 3241
FIRST_CASE_DAY = date(2020, 1, 2)
LAST_CASE_DAY = date(2024, 5, 26)
# The original org's case volume peaks in December, March and June.
CASE_MONTH_WEIGHTS = {
    1: 1.0, 2: 0.9, 3: 2.6, 4: 1.0, 5: 1.0, 6: 2.6,
    7: 1.0, 8: 1.0, 9: 0.9, 10: 1.0, 11: 1.4, 12: 6.5,
}  # fmt: skip
CASE_YEAR_WEIGHTS = {2020: 1.15, 2021: 1.0, 2022: 0.95, 2023: 0.95, 2024: 0.9}
ISSUE_PEAK_BOOST = 2.5
PRODUCT_PEAK_BOOST = 2.0
DOMINANT_ISSUE_BOOST = 4.0
ROUTING_SPECIALTY_BOOST = 5.0
TRANSFER_SPECIALTY_BOOST = 3.0
PURCHASE_WINDOW_DAYS = 120  # a case is about something bought in the previous four months
HOUSEHOLD_CONTACT_SHARE = 0.35
OPEN_STATUSES = ("New", "Working", "Escalated")
OPEN_STATUS_WEIGHTS = (0.3, 0.45, 0.25)
PRIORITY_HANDLE_FACTOR = {"High": 0.85, "Medium": 1.0, "Low": 1.15}
TRANSFER_HANDLE_FACTOR = 1.4
HANDLE_TIMES = common.HandleTimes(noise=0.35, bounds=(12.0, 1800.0), open_minutes=(30, 30 * 60))
NON_CHAT_ORIGINS, NON_CHAT_ORIGIN_WEIGHTS = ("Email", "Web", "Phone"), (0.6, 0.25, 0.15)
THREAD_ORIGINS = ("Email", "Web")
MAX_THREAD_EMAILS, MAX_RECAP_EMAILS = 10, 3


@dataclass(kw_only=True)
class CasePlan(common.CasePlan):
    line: int  # index into Orders.lines: the order item the case is about
    chat_end: datetime | None = None
    scenario: dict[str, Any] = field(default_factory=dict)  # the issue story (issues.yaml)


def _case_weight(day: date) -> float:
    return CASE_MONTH_WEIGHTS[day.month] * CASE_YEAR_WEIGHTS[day.year]


def plan_cases(
    rng: Random, people: People, catalog: Catalog, orders: Orders, issues: list[dict[str, Any]]
) -> list[CasePlan]:
    days = DaySampler(FIRST_CASE_DAY, LAST_CASE_DAY, _case_weight)
    opened = sorted(
        moment(rng, day)
        for day in [FIRST_CASE_DAY, LAST_CASE_DAY, *days.sample(rng, CASE_COUNT - 2)]
    )
    # Lines follow their orders, which are in date order, so bought_days is sorted for bisect.
    bought = [line for line in orders.lines if orders.orders[line.order].activated]
    bought_days = [orders.orders[line.order].day.toordinal() for line in bought]
    # The parts of a purchase's case weight that do not depend on the case date.
    base_weight = [
        catalog.products[line.product].case_propensity
        * people.customers[orders.orders[line.order].customer].complaint_habit
        for line in bought
    ]
    plans: list[CasePlan] = []
    for index, created in enumerate(opened):
        today = created.date().toordinal()
        low = bisect_left(bought_days, today - PURCHASE_WINDOW_DAYS)
        high = bisect_left(bought_days, today)
        month = created.month
        weights = [
            base_weight[k]
            * (
                PRODUCT_PEAK_BOOST
                if month in catalog.products[bought[k].product].peak_months
                else 1.0
            )
            * _recency(today - bought_days[k])
            for k in range(low, high)
        ]
        line = bought[rng.choices(range(low, high), weights=weights)[0]]
        customer = people.customers[orders.orders[line.order].customer]
        contact = customer.contacts[0]
        if len(customer.contacts) > 1 and rng.random() < HOUSEHOLD_CONTACT_SHARE:
            contact = customer.contacts[1]
        issue = _pick_issue(rng, issues, catalog, line.product, month)
        owner = _route(rng, people, created.date(), issues[issue]["name"])
        plans.append(
            CasePlan(
                index=index,
                id=record_id("Case", index + 1),
                created=created,
                customer=customer.index,
                contact=contact,
                line=line.index,
                issue=issue,
                priority=common.weighted_key(rng, issues[issue]["priority"]),
                first_owner=owner,
                assigned=created + timedelta(seconds=rng.randint(0, 150)),
                owner=owner,
            )
        )
    _settle(rng, plans, people, issues)
    return plans


def _recency(days_ago: int) -> float:
    """Most complaints come soon after the purchase."""
    return 1.0 if days_ago <= 30 else 0.6 if days_ago <= 60 else 0.35


def _pick_issue(
    rng: Random, issues: list[dict[str, Any]], catalog: Catalog, product_index: int, month: int
) -> int:
    product = catalog.products[product_index]
    affinity: dict[str, float] = catalog.categories[product.category]["issue_affinity"]
    weights = [
        issue["weight"]
        * (ISSUE_PEAK_BOOST if month in issue["peak_months"] else 1.0)
        * (DOMINANT_ISSUE_BOOST if issue["name"] == product.dominant_issue else 1.0)
        * (1.0 + affinity.get(issue["name"], 0))
        for issue in issues
    ]
    return rng.choices(range(len(issues)), weights=weights)[0]


def _route(rng: Random, people: People, day: date, issue: str) -> int:
    """An agent on staff that day: specialists in the issue get more of its cases."""
    staff = [a for a in people.agents if a.hired <= day]
    weights = [
        a.workload * (ROUTING_SPECIALTY_BOOST if issue in a.specialties else 1.0) for a in staff
    ]
    return rng.choices(staff, weights=weights)[0].index


def _settle(
    rng: Random, plans: list[CasePlan], people: People, issues: list[dict[str, Any]]
) -> None:
    """Statuses, transfers, handle times, chat windows, origins and e-mail counts."""
    last = plans[-1].created
    # Open cases are mostly the recent ones.
    recency = [math.exp(-(last - p.created).days / 45) + 0.01 for p in plans]
    open_cases = weighted_sample(rng, recency, CASE_COUNT - CLOSED_COUNT)
    common.reopen(rng, plans, open_cases, OPEN_STATUSES, OPEN_STATUS_WEIGHTS)
    propensity = [
        0.0 if p.status == "New" else people.agents[p.first_owner].transfer_propensity
        for p in plans
    ]
    transferred = set(weighted_sample(rng, propensity, TRANSFER_COUNT))
    chats = set(weighted_sample(rng, [1.0] * CASE_COUNT, CHAT_COUNT))
    states = sorted({c.state for c in people.customers})
    state_factor = {state: rng.lognormvariate(0.0, 0.15) for state in states}
    for plan in plans:
        slowdown = TRANSFER_HANDLE_FACTOR if plan.index in transferred else 1.0
        expected = _expected_minutes(plan, people, issues, state_factor)
        common.close_case(rng, plan, expected, slowdown, HANDLE_TIMES)
        _open_channel(rng, plan, plan.index in chats)
        if plan.index in transferred:
            start = (plan.chat_end or plan.assigned) + timedelta(seconds=60)
            new_owner = common.transfer_target(
                rng, people.agents, plan, issues[plan.issue]["name"], TRANSFER_SPECIALTY_BOOST
            )
            plan.transfer = (between(rng, start, plan.end - timedelta(seconds=60)), new_owner)
            plan.owner = new_owner
    _count_emails(rng, plans)


def _expected_minutes(
    plan: CasePlan, people: People, issues: list[dict[str, Any]], state_factor: dict[str, float]
) -> float:
    """A case's handle time before chance: its issue's, its first owner's pace, its customer's
    state's service and its priority."""
    minutes: float = (
        issues[plan.issue]["handle_minutes"]
        * people.agents[plan.first_owner].handle_factor
        * state_factor[people.customers[plan.customer].state]
        * PRIORITY_HANDLE_FACTOR[plan.priority]
    )
    return minutes


def _open_channel(rng: Random, plan: CasePlan, chat: bool) -> None:
    """How the case was opened: a chat (and how long it lasted), or another origin."""
    if not chat:
        plan.origin = rng.choices(NON_CHAT_ORIGINS, weights=NON_CHAT_ORIGIN_WEIGHTS)[0]
        return
    handle_seconds = (plan.end - plan.created).total_seconds()
    plan.chat, plan.origin = True, "Chat"
    chat_seconds = min(rng.randint(240, 720), int(0.45 * handle_seconds))
    plan.chat_end = plan.created + timedelta(seconds=chat_seconds)


def _count_emails(rng: Random, plans: list[CasePlan]) -> None:
    """After a chat or a call the agent sends a recap and maybe a reply or two; cases opened by
    the customer's e-mail or web form are whole threads."""
    threads = [p.origin in THREAD_ORIGINS for p in plans]
    counts = spread(
        rng,
        EMAIL_COUNT,
        [2 if thread else 1 for thread in threads],
        [4.0 if thread else 1.0 for thread in threads],
        [MAX_THREAD_EMAILS if thread else MAX_RECAP_EMAILS for thread in threads],
    )
    for plan, count in zip(plans, counts, strict=True):
        plan.emails = count
