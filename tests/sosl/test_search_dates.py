"""A search's date literals resolve against its org's calendar, as its queries' do: the
sandbox's pinned clock, read in the org's time zone.

The server runs in America/Los_Angeles. Two sandboxes pin their clocks:
- "spring": 2024-06-01T03:00Z, which is still 2024-05-31 locally (so TODAY is the 31st, and
  LAST_N_DAYS:30 runs from May 1st through it),
- "summer": 2024-07-01T12:00Z, 2024-07-01 locally (LAST_N_DAYS:30 runs from June 1st).
Both hold the same price books (ValidFrom, a datetime field, stored in UTC) and an account
created at their clock; both run the same search texts, so the compiled-search cache must tell
their calendars apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API, open_client
from tests.databases import DatabaseFactory

CONTROL = "/__localforce/sandboxes"
CLOCKS = {"spring": "2024-06-01T03:00:00Z", "summer": "2024-07-01T12:00:00Z"}
ZONE = "America/Los_Angeles"
# UTC instants; the comment is the local (Los Angeles) time.
PRICEBOOK_TIMES: dict[str, str | None] = {
    "before": "2024-05-01T06:59:59Z",  # 2024-04-30 23:59:59 PDT
    "first": "2024-05-01T07:00:00Z",  # 2024-05-01 00:00:00 PDT
    "today": "2024-05-31T07:00:00Z",  # 2024-05-31 00:00:00 PDT
    "late": "2024-06-01T06:59:59Z",  # 2024-05-31 23:59:59 PDT
    "tomorrow": "2024-06-01T07:00:00Z",  # 2024-06-01 00:00:00 PDT: the UTC date of "spring"
    "july": "2024-07-01T20:00:00Z",  # 2024-07-01 13:00:00 PDT
    "none": None,
}
# (condition on Pricebook2.ValidFrom, expected price books in each sandbox)
PRICEBOOK_CASES = [
    ("ValidFrom = TODAY", {"spring": {"today", "late"}, "summer": {"july"}}),
    (
        "ValidFrom = LAST_N_DAYS:30",
        {"spring": {"first", "today", "late"}, "summer": {"tomorrow", "july"}},
    ),
    (
        "ValidFrom < TODAY",
        {"spring": {"before", "first"}, "summer": set(PRICEBOOK_TIMES) - {"july", "none"}},
    ),
]


def _created(sf: TestClient, sobject: str, body: dict[str, Any]) -> None:
    response = sf.post(f"{API}/sobjects/{sobject}", json=body)
    assert response.status_code == 201, response.text


def _sandbox(client: TestClient, clock: str) -> TestClient:
    response = client.post(CONTROL, json={"clock": clock})
    assert response.status_code == 201, response.text
    token = response.json()["access_token"]
    sf = TestClient(
        client.app, base_url=str(client.base_url), headers={"Authorization": f"Bearer {token}"}
    )
    _created(sf, "Account", {"Name": "Zqdate account"})
    for ref, moment in PRICEBOOK_TIMES.items():
        body: dict[str, Any] = {"Name": f"Zqdate {ref}"}
        if moment is not None:
            body["ValidFrom"] = moment
        _created(sf, "Pricebook2", body)
    return sf


@pytest.fixture(scope="module")
def sandboxes(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> Iterator[dict[str, TestClient]]:
    clients = open_client(database_factory, sandbox_ready_template, timezone=ZONE)
    client = next(clients)
    yield {name: _sandbox(client, clock) for name, clock in CLOCKS.items()}
    next(clients, None)


def _names(records: list[dict[str, Any]]) -> set[str]:
    return {str(record["Name"]).removeprefix("Zqdate ") for record in records}


def _search(sf: TestClient, sosl: str) -> list[dict[str, Any]]:
    response = sf.get(f"{API}/search", params={"q": sosl})
    assert response.status_code == 200, response.text
    records: list[dict[str, Any]] = response.json()["searchRecords"]
    return records


@pytest.mark.parametrize("sandbox", list(CLOCKS))
@pytest.mark.parametrize(("condition", "expected"), PRICEBOOK_CASES)
def test_a_returning_where_resolves_date_literals_on_the_sandbox_clock(
    sandboxes: dict[str, TestClient], sandbox: str, condition: str, expected: dict[str, set[str]]
) -> None:
    sf = sandboxes[sandbox]
    found = _search(sf, f"FIND {{Zqdate}} RETURNING Pricebook2(Name WHERE {condition})")
    assert _names(found) == expected[sandbox]
    # The same literal in a query of the same org selects the same records.
    soql = f"SELECT Name FROM Pricebook2 WHERE Name LIKE 'Zqdate%' AND {condition}"
    queried = sf.get(f"{API}/query", params={"q": soql})
    assert queried.status_code == 200, queried.text
    assert _names(queried.json()["records"]) == expected[sandbox]


@pytest.mark.parametrize("sandbox", list(CLOCKS))
def test_records_created_at_the_pinned_clock_are_created_today(
    sandboxes: dict[str, TestClient], sandbox: str
) -> None:
    sosl = (
        "FIND {Zqdate} RETURNING Account(Name WHERE CreatedDate = LAST_N_DAYS:30), "
        "Pricebook2(Name WHERE CreatedDate = TODAY AND ValidFrom = TODAY)"
    )
    found = _search(sandboxes[sandbox], sosl)
    expected = {"spring": {"today", "late"}, "summer": {"july"}}[sandbox]
    assert [record["attributes"]["type"] for record in found] == ["Account"] + ["Pricebook2"] * len(
        expected
    )
    assert _names(found) == {"account"} | expected


@pytest.mark.parametrize("sandbox", list(CLOCKS))
def test_parameterized_search_resolves_date_literals_on_the_sandbox_clock(
    sandboxes: dict[str, TestClient], sandbox: str
) -> None:
    sf = sandboxes[sandbox]
    params = {
        "q": "Zqdate",
        "sobject": "Pricebook2",
        "Pricebook2.fields": "Name",
        "Pricebook2.where": "ValidFrom = LAST_N_DAYS:30",
    }
    response = sf.get(f"{API}/parameterizedSearch", params=params)
    assert response.status_code == 200, response.text
    expected = {"spring": {"first", "today", "late"}, "summer": {"tomorrow", "july"}}[sandbox]
    assert _names(response.json()["searchRecords"]) == expected
    body = {
        "q": "Zqdate",
        "sobjects": [{"name": "Pricebook2", "fields": ["Name"], "where": "ValidFrom = TODAY"}],
    }
    posted = sf.post(f"{API}/parameterizedSearch", json=body)
    assert posted.status_code == 200, posted.text
    expected = {"spring": {"today", "late"}, "summer": {"july"}}[sandbox]
    assert _names(posted.json()["searchRecords"]) == expected
