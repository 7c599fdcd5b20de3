"""The Service Analyst's tasks: Top Issue Identification, Monthly Trend Analysis and Best Region
Identification (crmarena.md 5.1), asked in every org."""

from __future__ import annotations

import calendar
import statistics
from collections import Counter
from datetime import date, datetime, timedelta
from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    DATABASE,
    EVERY_ORG,
    Api,
    Draft,
    NoAnswer,
    OrgData,
    TaskType,
    single_extreme,
)
from app.tasks.periods import (
    DEFINITIONS,
    SEASONS,
    Period,
    add_months,
    draw_window,
    months_through,
    quarter,
    season,
    year,
)
from app.tasks.solving import (
    created_in,
    ids,
    moment,
    named_id,
    period_of,
    pick,
    product_items,
)

PERSONA = "Service Analyst"
MIN_PRODUCT_CASES = 3  # a product drawn for a task has at least this many cases in all
CLOSURE_MARGIN = 60.0  # seconds: closer means are a tie, not an answer


def _cases(data: OrgData) -> dict[str, list[tuple[str | None, datetime]]]:
    """Product Id -> (IssueId__c, CreatedDate) of its cases, read once per draw session."""
    return data.remembered("product_cases", org_sql.product_cases)


def _cases_in(data: OrgData, product: str, period: Period) -> list[tuple[str | None, datetime]]:
    return [(issue, created) for issue, created in _cases(data)[product] if period.holds(created)]


def _product(rng: Random, data: OrgData) -> str:
    cases = _cases(data)
    products = sorted(p for p, of_product in cases.items() if len(of_product) >= MIN_PRODUCT_CASES)
    if not products:
        raise NoAnswer
    return rng.choice(products)


def _span(data: OrgData) -> tuple[date, date]:
    return org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")


def _most_cases(counts: Counter[str]) -> str:
    """The key with the most cases, at least two of them."""
    if not counts or max(counts.values()) < 2:
        raise NoAnswer
    return single_extreme({key: float(n) for key, n in counts.items()}, "max")


TOP_ISSUE_QUERIES = (
    "What is the most reported issue for product {product} in {period}?",
    "Which issue did customers raise most often about product {product} in {period}?",
    "Identify the top issue of product {product} in {period}.",
)


WINDOW_TRIES = 5  # windows drawn for a product before the draw gives up


def _window_with_cases(
    rng: Random, data: OrgData, product: str
) -> tuple[date, Period, list[tuple[str | None, datetime]]]:
    """A window in which the product has at least two cases (in a sparse org, most windows
    hold none), its today, and those cases' (IssueId__c, CreatedDate)."""
    for _ in range(WINDOW_TRIES):
        today, period = draw_window(rng, *_span(data))
        cases = _cases_in(data, product, period)
        if len(cases) >= 2:
            return today, period, cases
    raise NoAnswer


def draw_top_issue(rng: Random, data: OrgData) -> Draft:
    product = _product(rng, data)
    today, period, cases = _window_with_cases(rng, data, product)
    answer = _most_cases(Counter(issue for issue, _ in cases if issue is not None))
    policy = (
        "An issue's count is the number of cases created in the period about an order item of "
        "the product (the case's OrderItemId__c) with that issue (IssueId__c). Answer with the "
        "Issue__c record's Id."
    )
    query = rng.choice(TOP_ISSUE_QUERIES).format(product=product, period=period.words)
    return Draft(answer, query, today, policy, DEFINITIONS, {"period": period, "product": product})


TREND_QUERIES = (
    "In which month of {period} were the most cases about product {product} created?",
    "Which month saw the most cases for product {product} in {period}?",
    "Looking at {period}, what was the peak month for cases about product {product}?",
)


def _months_around(rng: Random, moment: datetime) -> Period:
    """A year, a quarter, a season or a run of 3 to 12 months that holds `moment` (month
    names are unique in each)."""
    kind = rng.choice(("year", "quarter", "season", "months"))
    if kind == "year":
        return year(moment.year)
    if kind == "quarter":
        return quarter(moment.year, (moment.month - 1) // 3 + 1)
    if kind == "season":
        first = add_months(date(moment.year, moment.month, 1), -((moment.month - 3) % 3))
        name = next(name for name, start in SEASONS.items() if start == first.month)
        return season(first.year, name)
    count = rng.randint(3, 12)
    return months_through(add_months(moment.date().replace(day=1), -rng.randrange(count)), count)


def draw_monthly_trend(rng: Random, data: OrgData) -> Draft:
    """A product and a period around one of its cases (in a sparse org, most periods drawn
    blind hold too few of a product's cases to have a peak)."""
    product = _product(rng, data)
    period = _months_around(rng, rng.choice(_cases(data)[product])[1])
    first, last = _span(data)
    if period.start.date() < first or period.end.date() > last:
        raise NoAnswer  # the period runs past the data
    today = period.end.date() + timedelta(days=rng.randint(0, 90))
    cases = _cases_in(data, product, period)
    answer = _most_cases(Counter(calendar.month_name[created.month] for _, created in cases))
    policy = (
        "A month's count is the number of cases created in it about an order item of the "
        "product (the case's OrderItemId__c). Answer with the month's English name, e.g. May."
    )
    query = rng.choice(TREND_QUERIES).format(product=product, period=period.words)
    return Draft(answer, query, today, policy, DEFINITIONS, {"period": period, "product": product})


REGION_QUERIES = (
    "Which state had the fastest case closure in {period}?",
    "In {period}, in which state were customers' cases closed quickest on average?",
    "Identify the best region by average case closure time in {period}.",
)


def draw_best_region(rng: Random, data: OrgData) -> Draft:
    today, period = draw_window(rng, *_span(data))
    times: dict[str, list[float]] = {}
    for state, created, closed in org_sql.closed_cases_by_state(data.conn, data.tables, period):
        times.setdefault(state, []).append((closed - created).total_seconds())
    if len(times) < 2:
        raise NoAnswer
    means = {state: statistics.fmean(seconds) for state, seconds in times.items()}
    answer = single_extreme(means, "min", CLOSURE_MARGIN)
    policy = (
        "A state's closure time is the mean time from creation to closing of the Closed cases "
        "created in the period whose account ships to that state (Account.ShippingState). The "
        "best region has the lowest. Answer with the state's two-letter code."
    )
    query = rng.choice(REGION_QUERIES).format(period=period.words)
    return Draft(answer, query, today, policy, DEFINITIONS, {"period": period})


# --- the reference solvers --------------------------------------------------------------------


def _product_cases(api: Api, task: dict[str, Any], fields: str) -> list[dict[str, Any]]:
    """The cases created in the task's period about an order item of the product it names."""
    items = product_items(api, named_id(task, "01t", "product"))
    if not items:
        return []
    return api.query(
        f"SELECT {fields} FROM Case WHERE OrderItemId__c IN {ids(items)} AND "
        + created_in(period_of(task))
    )


def solve_top_issue(api: Api, task: dict[str, Any]) -> str:
    cases = _product_cases(api, task, "IssueId__c")
    issues = Counter(case["IssueId__c"] for case in cases if case["IssueId__c"])
    return pick(dict(issues), "max")


def solve_monthly_trend(api: Api, task: dict[str, Any]) -> str:
    cases = _product_cases(api, task, "CreatedDate")
    months = Counter(moment(case["CreatedDate"]).strftime("%B") for case in cases)
    return pick(dict(months), "max")


def solve_best_region(api: Api, task: dict[str, Any]) -> str:
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


TASK_TYPES = (
    TaskType(
        name="top_issue_identification",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_top_issue,
        solve=solve_top_issue,
        orgs=EVERY_ORG,
    ),
    TaskType(
        name="monthly_trend_analysis",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="months",
        draw=draw_monthly_trend,
        solve=solve_monthly_trend,
        orgs=EVERY_ORG,
        # A Pro org's 150 to 290 cases spread over dozens of products: most periods drawn
        # around a product's case hold no month with two of its cases.
        draws_per_task=400,
    ),
    TaskType(
        name="best_region_identification",
        skill=DATABASE,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="states",
        draw=draw_best_region,
        solve=solve_best_region,
        orgs=EVERY_ORG,
    ),
)
