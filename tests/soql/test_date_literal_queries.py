"""Date literals and date functions, on date and datetime fields, with a pinned clock in a
non-UTC zone.

Two orgs run in America/Los_Angeles with the fiscal year starting in April:
- "spring": 2024-04-01T03:30Z, which is still 2024-03-31 locally (a month and quarter boundary),
- "newyear": 2025-01-01T05:00Z, which is still 2024-12-31 locally (a year boundary).
Both orgs run the same query texts, so the compiled-query cache must tell their calendars apart.
Order.EffectiveDate is a date field; Pricebook2.ValidFrom a datetime field (stored in UTC).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import date
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.services.context import OrgContext
from app.soql.date_literals import OrgCalendar
from app.soql.function_registry import FUNCTIONS
from tests.conftest import API, login, open_client
from tests.databases import DatabaseFactory

CLOCKS = {"spring": "2024-04-01T03:30:00Z", "newyear": "2025-01-01T05:00:00Z"}
ZONE = "America/Los_Angeles"

ORDER_DATES = {
    "dec31": "2023-12-31",
    "jan1": "2024-01-01",
    "feb29": "2024-02-29",
    "mar1": "2024-03-01",
    "mar31": "2024-03-31",
    "apr1": "2024-04-01",
}
# UTC instants; the comment is the local (Los Angeles) time.
PRICEBOOK_TIMES: dict[str, str | None] = {
    "f": "2024-01-01T07:59:59Z",  # 2023-12-31 23:59:59 PST
    "e": "2024-01-01T08:00:00Z",  # 2024-01-01 00:00:00 PST
    "b": "2024-03-31T06:59:59Z",  # 2024-03-30 23:59:59 PDT
    "a": "2024-03-31T07:00:00Z",  # 2024-03-31 00:00:00 PDT
    "c": "2024-04-01T06:59:59Z",  # 2024-03-31 23:59:59 PDT
    "d": "2024-04-01T07:00:00Z",  # 2024-04-01 00:00:00 PDT
    "null": None,
}

Org = tuple[TestClient, dict[str, str]]


def _create(api: TestClient, sobject: str, body: dict[str, Any]) -> str:
    response = api.post(f"{API}/sobjects/{sobject}", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@contextmanager
def _org(database_factory: DatabaseFactory, template: str, clock: str) -> Iterator[Org]:
    clients = open_client(
        database_factory, template, clock=clock, timezone=ZONE, fiscal_year_start_month=4
    )
    client = next(clients)
    api = TestClient(
        client.app,
        base_url=str(client.base_url),
        headers={"Authorization": f"Bearer {login(client)}"},
    )
    account = _create(api, "Account", {"Name": "Date literal fixtures"})
    ids = {"account": account}
    for ref, day in ORDER_DATES.items():
        ids[ref] = _create(
            api, "Order", {"AccountId": account, "EffectiveDate": day, "Status": "Draft"}
        )
    for ref, moment in PRICEBOOK_TIMES.items():
        body: dict[str, Any] = {"Name": f"DL-{ref}"}
        if moment is not None:
            body["ValidFrom"] = moment
        ids[ref] = _create(api, "Pricebook2", body)
    try:
        yield api, ids
    finally:
        next(clients, None)


@pytest.fixture(scope="module")
def orgs(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[dict[str, Org]]:
    with ExitStack() as stack:
        yield {
            name: stack.enter_context(_org(database_factory, seeded_template, clock))
            for name, clock in CLOCKS.items()
        }


def _run(org: Org, soql: str) -> dict[str, Any]:
    api, _ = org
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    return dict(response.json())


def _refs(org: Org, records: list[dict[str, Any]]) -> set[str]:
    by_id = {record_id: ref for ref, record_id in org[1].items()}
    return {by_id[record["Id"]] for record in records}


ALL_ORDERS = set(ORDER_DATES)
# (clock, condition on Order.EffectiveDate, expected orders)
DATE_CASES = [
    ("spring", "= TODAY", {"mar31"}),
    ("spring", "= YESTERDAY", set()),
    ("spring", "= TOMORROW", {"apr1"}),
    ("spring", "= THIS_MONTH", {"mar1", "mar31"}),
    ("spring", "= LAST_MONTH", {"feb29"}),
    ("spring", "= NEXT_MONTH", {"apr1"}),
    ("spring", "= THIS_QUARTER", {"jan1", "feb29", "mar1", "mar31"}),
    ("spring", "= LAST_QUARTER", {"dec31"}),
    ("spring", "= NEXT_QUARTER", {"apr1"}),
    ("spring", "= THIS_YEAR", ALL_ORDERS - {"dec31"}),
    ("spring", "= LAST_YEAR", {"dec31"}),
    ("spring", "< THIS_MONTH", {"dec31", "jan1", "feb29"}),
    ("spring", "<= THIS_MONTH", ALL_ORDERS - {"apr1"}),
    ("spring", "> THIS_MONTH", {"apr1"}),
    ("spring", ">= THIS_QUARTER", ALL_ORDERS - {"dec31"}),
    ("spring", "!= THIS_MONTH", {"dec31", "jan1", "feb29", "apr1"}),
    ("spring", "IN (LAST_YEAR, NEXT_MONTH)", {"dec31", "apr1"}),
    ("spring", "IN (LAST_MONTH, 2024-03-01)", {"feb29", "mar1"}),
    ("spring", "NOT IN (THIS_QUARTER)", {"dec31", "apr1"}),
    ("spring", "= LAST_N_DAYS:30", {"mar1", "mar31"}),
    ("spring", "= LAST_90_DAYS", {"jan1", "feb29", "mar1", "mar31"}),
    ("spring", "= NEXT_N_DAYS:1", {"apr1"}),
    ("spring", "= N_DAYS_AGO:31", {"feb29"}),
    ("spring", "= LAST_N_MONTHS:1", {"feb29"}),
    ("spring", "= N_MONTHS_AGO:3", {"dec31"}),
    ("spring", "= LAST_WEEK", set()),
    ("spring", "= THIS_WEEK", {"mar31", "apr1"}),
    ("spring", "= THIS_FISCAL_YEAR", ALL_ORDERS - {"apr1"}),
    ("spring", "= NEXT_FISCAL_YEAR", {"apr1"}),
    ("spring", "= THIS_FISCAL_QUARTER", {"jan1", "feb29", "mar1", "mar31"}),
    ("spring", "= LAST_N_FISCAL_QUARTERS:1", {"dec31"}),
    ("newyear", "= TODAY", set()),
    ("newyear", "= THIS_YEAR", ALL_ORDERS - {"dec31"}),
    ("newyear", "= LAST_YEAR", {"dec31"}),
    ("newyear", "= NEXT_YEAR", set()),
    ("newyear", "< THIS_YEAR", {"dec31"}),
    ("newyear", "= LAST_N_QUARTERS:3", ALL_ORDERS - {"dec31"}),
    ("newyear", "= N_QUARTERS_AGO:3", {"jan1", "feb29", "mar1", "mar31"}),
    ("newyear", "= THIS_FISCAL_YEAR", {"apr1"}),
    ("newyear", "= LAST_FISCAL_YEAR", ALL_ORDERS - {"apr1"}),
    ("newyear", "= N_YEARS_AGO:1", {"dec31"}),
]

ALL_BOOKS = set(PRICEBOOK_TIMES)
# (clock, condition on Pricebook2.ValidFrom, expected price books)
DATETIME_CASES = [
    ("spring", "= TODAY", {"a", "c"}),
    ("spring", "= YESTERDAY", {"b"}),
    ("spring", "= TOMORROW", {"d"}),
    ("spring", "!= TODAY", {"b", "d", "e", "f", "null"}),
    ("spring", "< TODAY", {"b", "e", "f"}),
    ("spring", "<= TODAY", {"a", "b", "c", "e", "f"}),
    ("spring", "> TODAY", {"d"}),
    ("spring", ">= TODAY", {"a", "c", "d"}),
    ("spring", "= THIS_MONTH", {"a", "b", "c"}),
    ("spring", "= NEXT_MONTH", {"d"}),
    ("spring", "= THIS_QUARTER", {"a", "b", "c", "e"}),
    ("spring", "= NEXT_QUARTER", {"d"}),
    ("spring", "= THIS_YEAR", {"a", "b", "c", "d", "e"}),
    ("spring", "= LAST_YEAR", {"f"}),
    ("spring", "IN (YESTERDAY, TOMORROW)", {"b", "d"}),
    ("spring", "IN (TODAY, null)", {"a", "c", "null"}),
    ("spring", "IN (TODAY, 2024-01-01T08:00:00Z)", {"a", "c", "e"}),
    ("spring", "NOT IN (THIS_QUARTER)", {"d", "f", "null"}),
    ("spring", "NOT IN (THIS_QUARTER, null)", {"d", "f"}),
    ("spring", "= LAST_N_DAYS:1", {"a", "b", "c"}),
    ("spring", "= N_DAYS_AGO:1", {"b"}),
    ("spring", "= THIS_FISCAL_YEAR", {"a", "b", "c", "e", "f"}),
    ("spring", "= NEXT_FISCAL_QUARTER", {"d"}),
    ("newyear", "= THIS_YEAR", {"a", "b", "c", "d", "e"}),
    ("newyear", "= LAST_YEAR", {"f"}),
    ("newyear", "> LAST_YEAR", {"a", "b", "c", "d", "e"}),
    ("newyear", "= THIS_FISCAL_YEAR", {"d"}),
    ("newyear", "= LAST_N_QUARTERS:4", ALL_BOOKS - {"null"}),
]


@pytest.mark.parametrize(("clock", "condition", "expected"), DATE_CASES)
def test_date_field(orgs: dict[str, Org], clock: str, condition: str, expected: set[str]) -> None:
    org = orgs[clock]
    account = org[1]["account"]
    soql = f"SELECT Id FROM Order WHERE AccountId = '{account}' AND EffectiveDate {condition}"
    assert _refs(org, _run(org, soql)["records"]) == expected


@pytest.mark.parametrize(("clock", "condition", "expected"), DATETIME_CASES)
def test_datetime_field(
    orgs: dict[str, Org], clock: str, condition: str, expected: set[str]
) -> None:
    org = orgs[clock]
    soql = f"SELECT Id FROM Pricebook2 WHERE Name LIKE 'DL-%' AND ValidFrom {condition}"
    assert _refs(org, _run(org, soql)["records"]) == expected


def test_not_of_a_date_literal_matches_nulls(orgs: dict[str, Org]) -> None:
    org = orgs["spring"]
    soql = "SELECT Id FROM Pricebook2 WHERE Name LIKE 'DL-%' AND (NOT ValidFrom = TODAY)"
    assert _refs(org, _run(org, soql)["records"]) == {"b", "d", "e", "f", "null"}


def test_a_date_literal_on_a_text_field_is_rejected(orgs: dict[str, Org]) -> None:
    api, _ = orgs["spring"]
    response = api.get(f"{API}/query", params={"q": "SELECT Id FROM Pricebook2 WHERE Name = TODAY"})
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_FIELD"
    assert "must be of type string" in response.json()[0]["message"]


def test_a_context_without_calendar_uses_utc() -> None:
    from datetime import datetime

    ctx = OrgContext(
        registry=None,  # type: ignore[arg-type]
        tables=None,  # type: ignore[arg-type]
        user_id="u",
        now=datetime(2024, 4, 1, 3, 30),
        base_path=f"{API}",
        functions=FUNCTIONS,
    )
    assert ctx.org_calendar == OrgCalendar(today=date(2024, 4, 1), zone="UTC", fiscal_start_month=1)


# (condition, expected price books): date functions of the datetime field evaluate in UTC, and in
# the org's zone inside convertTimezone().
DATETIME_FUNCTION_CASES = [
    ("CALENDAR_YEAR(ValidFrom) = 2024", ALL_BOOKS - {"null"}),
    ("CALENDAR_YEAR(convertTimezone(ValidFrom)) = 2023", {"f"}),
    ("CALENDAR_MONTH(ValidFrom) = 4", {"c", "d"}),
    ("CALENDAR_MONTH(convertTimezone(ValidFrom)) = 4", {"d"}),
    ("CALENDAR_MONTH(ValidFrom) != 4", {"a", "b", "e", "f", "null"}),
    ("CALENDAR_QUARTER(ValidFrom) = 2", {"c", "d"}),
    ("DAY_IN_MONTH(ValidFrom) = 31", {"a", "b"}),
    ("DAY_IN_MONTH(convertTimezone(ValidFrom)) = 31", {"a", "c", "f"}),
    ("HOUR_IN_DAY(ValidFrom) = 7", {"a", "d", "f"}),
    ("HOUR_IN_DAY(convertTimezone(ValidFrom)) = 0", {"a", "d", "e"}),
    ("HOUR_IN_DAY(convertTimezone(ValidFrom)) >= 23", {"b", "c", "f"}),
    ("DAY_IN_WEEK(ValidFrom) = 1", {"a", "b"}),
    ("DAY_IN_WEEK(convertTimezone(ValidFrom)) = 1", {"a", "c", "f"}),
    ("DAY_IN_YEAR(ValidFrom) = 1", {"e", "f"}),
    ("DAY_IN_YEAR(ValidFrom) = 91", {"a", "b"}),
    ("WEEK_IN_YEAR(ValidFrom) = 14", {"c", "d"}),
    ("WEEK_IN_MONTH(ValidFrom) = 5", {"a", "b"}),
    ("FISCAL_MONTH(ValidFrom) = 1", {"c", "d"}),
    ("FISCAL_QUARTER(ValidFrom) = 4", {"a", "b", "e", "f"}),
    ("FISCAL_YEAR(ValidFrom) = 2023", {"a", "b", "e", "f"}),
    ("FISCAL_YEAR(convertTimezone(ValidFrom)) = 2024", {"d"}),
    ("DAY_ONLY(ValidFrom) = 2024-03-31", {"a", "b"}),
    ("DAY_ONLY(convertTimezone(ValidFrom)) = 2024-03-31", {"a", "c"}),
    ("DAY_ONLY(convertTimezone(ValidFrom)) IN (2023-12-31, 2024-04-01)", {"d", "f"}),
    ("CALENDAR_YEAR(ValidFrom) IN (2023, 2025)", set()),
]

# (condition, expected orders) on the date field.
DATE_FUNCTION_CASES = [
    ("CALENDAR_YEAR(EffectiveDate) = 2023", {"dec31"}),
    ("CALENDAR_QUARTER(EffectiveDate) = 1", {"jan1", "feb29", "mar1", "mar31"}),
    ("CALENDAR_MONTH(EffectiveDate) = 2", {"feb29"}),
    ("DAY_IN_MONTH(EffectiveDate) = 1", {"jan1", "mar1", "apr1"}),
    ("DAY_IN_WEEK(EffectiveDate) = 1", {"dec31", "mar31"}),
    ("DAY_IN_YEAR(EffectiveDate) = 60", {"feb29"}),
    ("WEEK_IN_YEAR(EffectiveDate) = 9", {"feb29", "mar1"}),
    ("WEEK_IN_MONTH(EffectiveDate) > 4", {"dec31", "feb29", "mar31"}),
    ("FISCAL_MONTH(EffectiveDate) = 12", {"mar1", "mar31"}),
    ("FISCAL_QUARTER(EffectiveDate) = 3", {"dec31"}),
    ("FISCAL_YEAR(EffectiveDate) = 2024", {"apr1"}),
    ("NOT FISCAL_YEAR(EffectiveDate) = 2024", ALL_ORDERS - {"apr1"}),
]


@pytest.mark.parametrize(("condition", "expected"), DATETIME_FUNCTION_CASES)
def test_date_function_on_datetime_field(
    orgs: dict[str, Org], condition: str, expected: set[str]
) -> None:
    org = orgs["spring"]
    soql = f"SELECT Id FROM Pricebook2 WHERE Name LIKE 'DL-%' AND {condition}"
    assert _refs(org, _run(org, soql)["records"]) == expected


@pytest.mark.parametrize(("condition", "expected"), DATE_FUNCTION_CASES)
def test_date_function_on_date_field(
    orgs: dict[str, Org], condition: str, expected: set[str]
) -> None:
    org = orgs["spring"]
    account = org[1]["account"]
    soql = f"SELECT Id FROM Order WHERE AccountId = '{account}' AND ({condition})"
    assert _refs(org, _run(org, soql)["records"]) == expected


def _rows(org: Org, soql: str) -> list[dict[str, Any]]:
    records = _run(org, soql.replace("$account", org[1]["account"]))["records"]
    for record in records:
        assert record.pop("attributes") == {"type": "AggregateResult"}
    return list(records)


ORDERS = "FROM Order WHERE AccountId = '$account'"
BOOKS = "FROM Pricebook2 WHERE Name LIKE 'DL-%'"
# (query, expected AggregateResult rows without attributes)
AGGREGATE_CASES = [
    (
        f"SELECT CALENDAR_MONTH(EffectiveDate), COUNT(Id) {ORDERS} "
        "GROUP BY CALENDAR_MONTH(EffectiveDate) ORDER BY CALENDAR_MONTH(EffectiveDate)",
        [
            {"expr0": 1, "expr1": 1},
            {"expr0": 2, "expr1": 1},
            {"expr0": 3, "expr1": 2},
            {"expr0": 4, "expr1": 1},
            {"expr0": 12, "expr1": 1},
        ],
    ),
    (
        f"SELECT FISCAL_QUARTER(EffectiveDate) fq, COUNT(Id) n {ORDERS} "
        "GROUP BY FISCAL_QUARTER(EffectiveDate) ORDER BY FISCAL_QUARTER(EffectiveDate) DESC",
        [{"fq": 4, "n": 4}, {"fq": 3, "n": 1}, {"fq": 1, "n": 1}],
    ),
    (
        f"SELECT CALENDAR_YEAR(EffectiveDate), COUNT(Id) {ORDERS} "
        "GROUP BY CALENDAR_YEAR(EffectiveDate) HAVING CALENDAR_YEAR(EffectiveDate) > 2023",
        [{"expr0": 2024, "expr1": 5}],
    ),
    (
        f"SELECT COUNT(Id), CALENDAR_YEAR(EffectiveDate) {ORDERS} "
        "GROUP BY EffectiveDate ORDER BY EffectiveDate LIMIT 2",
        [{"expr0": 1, "expr1": 2023}, {"expr0": 1, "expr1": 2024}],
    ),
    (
        f"SELECT HOUR_IN_DAY(convertTimezone(ValidFrom)), COUNT(Id) {BOOKS} AND ValidFrom != null "
        "GROUP BY HOUR_IN_DAY(convertTimezone(ValidFrom)) "
        "ORDER BY HOUR_IN_DAY(convertTimezone(ValidFrom))",
        [{"expr0": 0, "expr1": 3}, {"expr0": 23, "expr1": 3}],
    ),
    (
        f"SELECT DAY_ONLY(convertTimezone(ValidFrom)) d1, COUNT(Id) n {BOOKS} "
        "GROUP BY DAY_ONLY(convertTimezone(ValidFrom)) "
        "ORDER BY DAY_ONLY(convertTimezone(ValidFrom)) NULLS FIRST",
        [
            {"d1": None, "n": 1},
            {"d1": "2023-12-31", "n": 1},
            {"d1": "2024-01-01", "n": 1},
            {"d1": "2024-03-30", "n": 1},
            {"d1": "2024-03-31", "n": 2},
            {"d1": "2024-04-01", "n": 1},
        ],
    ),
    (
        f"SELECT CALENDAR_YEAR(ValidFrom), CALENDAR_YEAR(convertTimezone(ValidFrom)), COUNT(Id) "
        f"{BOOKS} AND ValidFrom != null GROUP BY CALENDAR_YEAR(ValidFrom), "
        "CALENDAR_YEAR(convertTimezone(ValidFrom)) "
        "ORDER BY CALENDAR_YEAR(convertTimezone(ValidFrom))",
        [
            {"expr0": 2024, "expr1": 2023, "expr2": 1},
            {"expr0": 2024, "expr1": 2024, "expr2": 5},
        ],
    ),
]


@pytest.mark.parametrize(("soql", "expected"), AGGREGATE_CASES)
def test_date_function_in_aggregate_query(
    orgs: dict[str, Org], soql: str, expected: list[dict[str, Any]]
) -> None:
    assert _rows(orgs["spring"], soql) == expected


def test_order_by_a_date_function_in_a_record_query(orgs: dict[str, Org]) -> None:
    org = orgs["spring"]
    soql = (f"SELECT Id {ORDERS} ORDER BY DAY_IN_MONTH(EffectiveDate) DESC, EffectiveDate").replace(
        "$account", org[1]["account"]
    )
    by_id = {record_id: ref for ref, record_id in org[1].items()}
    order = [by_id[record["Id"]] for record in _run(org, soql)["records"]]
    assert order == ["dec31", "mar31", "feb29", "jan1", "mar1", "apr1"]


ERROR_CASES = [
    ("SELECT Id FROM Pricebook2 WHERE CALENDAR_YEAR(Name) = 2024", "INVALID_FIELD"),
    ("SELECT Id FROM Order WHERE HOUR_IN_DAY(EffectiveDate) = 1", "INVALID_FIELD"),
    ("SELECT Id FROM Order WHERE DAY_ONLY(EffectiveDate) = 2024-01-01", "INVALID_FIELD"),
    (
        "SELECT Id FROM Order WHERE CALENDAR_YEAR(convertTimezone(EffectiveDate)) = 2024",
        "INVALID_FIELD",
    ),
    ("SELECT Id FROM Pricebook2 WHERE CALENDAR_YEAR(ValidFrom) = THIS_YEAR", "INVALID_FIELD"),
    ("SELECT Id FROM Pricebook2 WHERE CALENDAR_YEAR(ValidFrom) = '2024'", "INVALID_FIELD"),
    ("SELECT convertTimezone(ValidFrom) FROM Pricebook2", "MALFORMED_QUERY"),
    ("SELECT Id FROM Pricebook2 WHERE convertTimezone(ValidFrom) = null", "MALFORMED_QUERY"),
    ("SELECT CALENDAR_YEAR(ValidFrom) FROM Pricebook2", "MALFORMED_QUERY"),
    (  # a datetime is grouped through a date function, never itself
        "SELECT CALENDAR_YEAR(ValidFrom), COUNT(Id) FROM Pricebook2 GROUP BY ValidFrom",
        "INVALID_FIELD",
    ),
    (
        "SELECT CALENDAR_YEAR(ValidFrom), COUNT(Id) FROM Pricebook2 "
        "GROUP BY CALENDAR_YEAR(ValidFrom) ORDER BY CALENDAR_MONTH(ValidFrom)",
        "MALFORMED_QUERY",
    ),
]


@pytest.mark.parametrize(("soql", "code"), ERROR_CASES)
def test_date_function_errors(orgs: dict[str, Org], soql: str, code: str) -> None:
    api, _ = orgs["spring"]
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 400, response.text
    assert response.json()[0]["errorCode"] == code
