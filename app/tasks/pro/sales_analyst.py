"""The Pro orgs' sales figures (crmarena.md 5.2, "Database + numeric"): Sales Amount
Understanding, Sales Cycle Understanding and Conversion Rate Comprehension. Each asks which
sales agent has the highest or lowest figure in a period."""

from __future__ import annotations

import re
import statistics
from datetime import date, timedelta
from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    DATABASE,
    PRO,
    Api,
    Draft,
    NoAnswer,
    NotScripted,
    OrgData,
    TaskType,
    single_extreme,
)
from app.tasks.periods import DEFINITIONS, Period, draw_window, past, year
from app.tasks.solving import created_in, days_in, extreme_of, ids, moment, period_of, pick

PERSONA = "Sales Manager"
WORDS = {"min": ("lowest", "shortest"), "max": ("highest", "longest")}
AMOUNT_MARGIN = 1.0  # currency units: closer totals are a tie
CYCLE_MARGIN = 0.5  # days
MIN_LEADS = 3  # an agent's conversion rate counts from this many leads in the period
MIN_CANDIDATES = 2


def _draft(
    answer: str, query: str, today: date, policy: str, period: Period, extreme: str
) -> Draft:
    return Draft(answer, query, today, policy, DEFINITIONS, {"period": period, "extreme": extreme})


def _candidates(values: dict[str, float]) -> dict[str, float]:
    if len(values) < MIN_CANDIDATES:
        raise NoAnswer
    return values


AMOUNT_QUERIES = (
    "Which sales agent had the {word} sales amount in {period}?",
    "Who sold the {word} total amount in {period}?",
)


def draw_sales_amount(rng: Random, data: OrgData) -> Draft:
    first, last = org_sql.day_span(data.conn, data.tables, "Order", "EffectiveDate")
    today, period = draw_window(rng, first, last)
    extreme = rng.choice(("min", "max"))
    totals = _candidates(org_sql.sales_per_owner(data.conn, data.tables, period))
    answer = single_extreme(totals, extreme, AMOUNT_MARGIN)
    policy = (
        "An agent's sales amount is the sum of Quantity x UnitPrice over the items of the "
        "Activated orders they own (Order.OwnerId) whose EffectiveDate is in the period. Only "
        "agents with such orders count. Answer with the agent's User Id."
    )
    words = rng.choice(AMOUNT_QUERIES).format(word=WORDS[extreme][0], period=period.words)
    return _draft(answer, words, today, policy, period, extreme)


CYCLE_QUERIES = (
    "Which sales agent had the {word} average sales cycle for contracts signed in {period}?",
    "For deals whose contract was signed in {period}, whose average sales cycle was the {word}?",
)


def draw_sales_cycle(rng: Random, data: OrgData) -> Draft:
    signing = org_sql.signing_field(data.tables)
    first, last = org_sql.day_span(data.conn, data.tables, "Contract", signing)
    today, period = draw_window(rng, first, last)
    extreme = rng.choice(("min", "max"))
    cycles: dict[str, list[float]] = {}
    for owner, created, signed in org_sql.signed_opportunities(data.conn, data.tables, period):
        cycles.setdefault(owner, []).append(float((signed - created.date()).days))
    means = _candidates({owner: statistics.fmean(days) for owner, days in cycles.items()})
    answer = single_extreme(means, extreme, CYCLE_MARGIN)
    policy = (
        "A deal's sales cycle is the number of days from the day its opportunity was created "
        "to the day its contract was signed (the opportunity's ContractID__c, "
        f"Contract.{signing}). An agent's average is over the opportunities they own whose "
        "contract was signed in the period. Answer with the agent's User Id."
    )
    words = rng.choice(CYCLE_QUERIES).format(word=WORDS[extreme][1], period=period.words)
    return _draft(answer, words, today, policy, period, extreme)


CONVERSION_QUERIES = (
    "Which sales agent had the {word} lead conversion rate in {period}?",
    "Among the leads created in {period}, whose conversion rate was the {word}?",
)


def _long_window(rng: Random, first: date, last: date) -> tuple[date, Period]:
    """A year, or the past two to four quarters, within the data: enough leads per agent."""
    while True:
        if rng.random() < 0.5:
            period = year(rng.randint(first.year, last.year))
            today = period.end.date() + timedelta(days=rng.randint(0, 60))
        else:
            today = first + timedelta(days=rng.randint(365, max(365, (last - first).days)))
            period = past(today, rng.randint(2, 4), "quarters")
        if first <= period.start.date() and period.end.date() <= last + timedelta(days=1):
            return today, period


def draw_conversion_rate(rng: Random, data: OrgData) -> Draft:
    first, last = org_sql.day_span(data.conn, data.tables, "Lead", "CreatedDate")
    today, period = _long_window(rng, first, last)
    extreme = rng.choice(("min", "max"))
    leads: dict[str, list[bool]] = {}
    for owner, converted in org_sql.leads_created(data.conn, data.tables, period):
        inside = converted is not None and converted < period.end.date()
        leads.setdefault(owner, []).append(inside)
    rates = _candidates(
        {owner: sum(won) / len(won) for owner, won in leads.items() if len(won) >= MIN_LEADS}
    )
    answer = single_extreme(rates, extreme)
    policy = (
        "An agent's conversion rate is the share of the leads they own that were created in "
        "the period and converted before it ended (Lead.ConvertedDate). Only agents who own at "
        f"least {MIN_LEADS} leads created in the period count. Answer with the agent's User Id."
    )
    words = rng.choice(CONVERSION_QUERIES).format(word=WORDS[extreme][0], period=period.words)
    return _draft(answer, words, today, policy, period, extreme)


# --- the reference solvers --------------------------------------------------------------------


def solve_sales_amount(api: Api, task: dict[str, Any]) -> str:
    totals: dict[str, float] = {}
    for item in api.query(
        "SELECT Order.OwnerId, Quantity, UnitPrice FROM OrderItem WHERE Order.Status = "
        f"'Activated' AND {days_in('Order.EffectiveDate', period_of(task))}"
    ):
        owner = item["Order"]["OwnerId"]
        totals[owner] = totals.get(owner, 0.0) + item["Quantity"] * item["UnitPrice"]
    return pick(totals, extreme_of(task["query"]))


def solve_sales_cycle(api: Api, task: dict[str, Any]) -> str:
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


def solve_conversion_rate(api: Api, task: dict[str, Any]) -> str:
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


TASK_TYPES = (
    TaskType(
        name="sales_amount_understanding",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_sales_amount,
        solve=solve_sales_amount,
        orgs=PRO,
    ),
    TaskType(
        name="sales_cycle_understanding",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_sales_cycle,
        solve=solve_sales_cycle,
        orgs=PRO,
    ),
    TaskType(
        name="conversion_rate_comprehension",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_conversion_rate,
        solve=solve_conversion_rate,
        orgs=PRO,
    ),
)
