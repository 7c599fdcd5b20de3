"""Query locators are bounded as Salesforce bounds them: at most 10 open per user per sandbox
(opening an 11th releases the oldest), expiry after 15 minutes unused, and rows kept in the
platform database for every worker (the worker that opened a locator also keeps its rows in
memory a while, bounded)."""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, event, select, update

from app.api.state import AppState
from app.errors import SalesforceError
from app.services import cursors
from app.services.cursors import CURSOR_ROWS, CURSORS, CursorStore, OpenQuery, RecentResults
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.execute import Children, ResultRows
from app.storage.database import platform_transaction
from app.storage.ids import record_number
from tests.conftest import API, login, open_client
from tests.databases import DatabaseFactory

INVALID = [{"message": "invalid query locator", "errorCode": "INVALID_QUERY_LOCATOR"}]
WIDE = {"q": "SELECT Id, Name, UnitPrice FROM PricebookEntry ORDER BY Id"}


@pytest.fixture(scope="module")
def sf(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[TestClient]:
    for client in open_client(database_factory, seeded_template):
        yield TestClient(
            client.app,
            base_url=str(client.base_url),
            headers={"Authorization": f"Bearer {login(client)}"},
        )


def state_of(client: TestClient) -> AppState:
    state: AppState = client.app.state.localforce  # type: ignore[attr-defined]
    return state


def open_locator(sf: TestClient) -> str:
    body = sf.get(f"{API}/query", params=WIDE).json()
    assert body["done"] is False
    return str(body["nextRecordsUrl"])


def test_an_eleventh_locator_releases_the_oldest(sf: TestClient) -> None:
    locators = [open_locator(sf) for _ in range(11)]
    oldest = sf.get(locators[0])
    assert oldest.status_code == 400
    assert oldest.json() == INVALID
    for url in locators[1:]:
        page = sf.get(url)
        assert page.status_code == 200, page.text
        assert len(page.json()["records"]) == 2000


def test_a_locator_unused_for_fifteen_minutes_expires(sf: TestClient) -> None:
    url = open_locator(sf)
    fresh = open_locator(sf)
    cursor_seq = record_number(url.rsplit("/", 1)[1].split("-")[0])
    with platform_transaction(state_of(sf).platform) as conn:  # as if 16 minutes had passed
        used = conn.execute(
            select(CURSORS.c.last_used).where(CURSORS.c.seq == cursor_seq)
        ).scalar_one()
        conn.execute(
            update(CURSORS)
            .where(CURSORS.c.seq == cursor_seq)
            .values(last_used=used - timedelta(minutes=16))
        )
    response = sf.get(url)
    assert response.status_code == 400
    assert response.json() == INVALID
    assert sf.get(fresh).status_code == 200


def all_ids(sf: TestClient) -> tuple[int, list[str]]:
    first = sf.get(f"{API}/query", params=WIDE).json()
    return int(first["totalSize"]), ids_from(sf, first)


def ids_from(sf: TestClient, first: dict[str, Any]) -> list[str]:
    """The ids of a first page and of every page its locators lead to."""
    seen = [r["Id"] for r in first["records"]]
    url = first.get("nextRecordsUrl")
    while url:
        page = sf.get(url).json()
        seen += [r["Id"] for r in page["records"]]
        url = page.get("nextRecordsUrl")
    return seen


def test_pages_cover_the_result_once_in_order(sf: TestClient) -> None:
    total, seen = all_ids(sf)
    assert len(seen) == total == len(set(seen)) > 20_000
    assert seen == sorted(seen)


def test_an_odd_offset_reads_across_spilled_batches(sf: TestClient) -> None:
    head, _, _ = open_locator(sf).rpartition("-")
    state_of(sf).cursors.forget_kept_results()  # as another worker, which reads them back
    page = sf.get(f"{head}-2500").json()
    _, expected = all_ids(sf)
    assert [r["Id"] for r in page["records"]] == expected[2500:4500]
    assert page["nextRecordsUrl"].endswith("-4500")


def test_another_worker_pages_through_the_spilled_batches(sf: TestClient) -> None:
    first = sf.get(f"{API}/query", params=WIDE).json()
    state_of(sf).cursors.forget_kept_results()
    assert ids_from(sf, first) == all_ids(sf)[1]


@contextmanager
def platform_statements(sf: TestClient) -> Iterator[list[str]]:
    """The SQL run on the platform database within the block."""
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    platform = state_of(sf).platform
    event.listen(platform, "before_cursor_execute", seen)
    try:
        yield statements
    finally:
        event.remove(platform, "before_cursor_execute", seen)


def test_the_worker_that_opened_a_locator_reads_no_rows_back(sf: TestClient) -> None:
    url = open_locator(sf)
    with platform_statements(sf) as statements:
        assert sf.get(url).status_code == 200
    # (The flusher may be writing an older locator's rows meanwhile: only reads count.)
    assert statements and not [s for s in statements if "FROM lf_cursor_rows" in s]


def test_a_locator_released_by_another_worker_is_invalid_here_too(sf: TestClient) -> None:
    url = open_locator(sf)
    cursor_seq = record_number(url.rsplit("/", 1)[1].split("-")[0])
    with platform_transaction(state_of(sf).platform) as conn:
        conn.execute(delete(CURSOR_ROWS).where(CURSOR_ROWS.c.cursor_seq == cursor_seq))
        conn.execute(delete(CURSORS).where(CURSORS.c.seq == cursor_seq))
    response = sf.get(url)
    assert response.status_code == 400
    assert response.json() == INVALID


def another_worker(sf: TestClient) -> CursorStore:
    """The cursors as another worker has them: the same database, nothing in memory."""
    state = state_of(sf)
    return CursorStore(state.platform, per_user=10, idle_seconds=900)


def opened_elsewhere(sf: TestClient) -> tuple[CursorStore, str]:
    """A worker that has opened a locator of 3,000 rows and not yet written them."""
    owner = another_worker(sf)
    rows = ResultRows([(f"01t{n:015d}", f"Entry {n}") for n in range(3000)])
    opened = OpenQuery("SELECT Id, Name FROM PricebookEntry", False, UTC_EPOCH_CALENDAR, 2000, 3000)
    cursor_id = owner.open(owner="elsewhere", user_id="u", query=opened, result=rows, first=2000)
    return owner, f"{cursor_id}-2000"


def test_another_worker_waits_for_the_rows_of_a_locator_opened_a_moment_ago(
    sf: TestClient,
) -> None:
    owner, locator = opened_elsewhere(sf)
    assert not owner.spills_due()  # not yet: its client may page through it here first
    spilling = threading.Timer(0.2, lambda: owner.spill(everything=True))
    spilling.start()
    try:
        batch = another_worker(sf).take(locator, "elsewhere")
    finally:
        spilling.join()
    assert [row[1] for row in batch.rows.rows] == [f"Entry {n}" for n in range(2000, 3000)]
    assert owner.take(locator, "elsewhere").rows.rows == batch.rows.rows  # from its memory


def test_rows_never_written_are_an_invalid_locator_elsewhere(
    sf: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cursors, "SPILL_WAIT_SECONDS", 0.1)
    _, locator = opened_elsewhere(sf)
    with pytest.raises(SalesforceError) as raised:
        another_worker(sf).take(locator, "elsewhere")
    assert raised.value.to_body() == INVALID


def test_a_locator_closed_before_its_rows_are_written_gets_none(sf: TestClient) -> None:
    owner, locator = opened_elsewhere(sf)
    owner.close(locator.split("-")[0])
    owner.spill(everything=True)
    with platform_transaction(state_of(sf).platform) as conn:
        left = conn.execute(
            select(CURSOR_ROWS.c.start).where(
                CURSOR_ROWS.c.cursor_seq == record_number(locator.split("-")[0])
            )
        ).all()
    assert left == []


def test_a_batch_kept_in_an_earlier_format_is_an_invalid_locator(sf: TestClient) -> None:
    url = open_locator(sf)
    state_of(sf).cursors.forget_kept_results()
    cursor_seq = record_number(url.rsplit("/", 1)[1].split("-")[0])
    with platform_transaction(state_of(sf).platform) as conn:  # bare rows, without children
        conn.execute(
            update(CURSOR_ROWS)
            .where(CURSOR_ROWS.c.cursor_seq == cursor_seq)
            .values(rows=pickle.dumps([("01t000000000001AAA", "Old", 1.0)]))
        )
    response = sf.get(url)
    assert response.status_code == 400
    assert response.json() == INVALID


def test_a_closed_locators_id_is_never_given_again(sf: TestClient) -> None:
    """Its rows are written after it is recorded: a reused id could meet another's rows."""
    ids = set()
    for _ in range(3):
        url = open_locator(sf)
        cursor_id = url.rsplit("/", 1)[1].split("-")[0]
        assert cursor_id not in ids
        ids.add(cursor_id)
        state_of(sf).cursors.close(cursor_id)


def test_a_locator_paged_to_its_end_on_one_worker_is_never_written(
    sf: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # However slow the machine: the client is done before the flusher writes its rows.
    monkeypatch.setattr(cursors, "SPILL_DELAY_SECONDS", 60.0)
    state_of(sf).cursors.spill(everything=True)  # other tests' locators: written now
    with platform_statements(sf) as statements:
        total, ids = all_ids(sf)
        state_of(sf).cursors.spill(everything=True)
    assert len(ids) == total > 20_000
    assert not [s for s in statements if "INSERT INTO lf_cursor_rows" in s]


def _result(rows: int, width: int, children: int = 0) -> ResultRows:
    child = ResultRows([("c", f"p{n % rows}") for n in range(children)])
    kids = (Children(slot=0, link_index=1, rows=child),) if children else ()
    return ResultRows([tuple(f"r{n}" for _ in range(width)) for n in range(rows)], kids)


def test_kept_results_are_bounded_by_their_values_children_included() -> None:
    recent = RecentResults(max_cells=1_000, max_seconds=60)
    recent.keep(1, _result(rows=10, width=50))  # 500 values
    recent.keep(2, _result(rows=10, width=2, children=400))  # 20 + 800 values
    assert recent.held_cells == 1_320  # both pinned: not yet in the database
    recent.unpin(1)
    assert (recent.get(1), recent.held_cells) == (None, 820)  # the oldest went first
    recent.unpin(2)
    assert recent.get(2) is not None  # under the bound now


def test_kept_results_are_forgotten_past_their_age() -> None:
    clock = [1_000.0]
    recent = RecentResults(max_cells=1_000_000, max_seconds=60, clock=lambda: clock[0])
    recent.keep(1, _result(rows=3, width=3))
    recent.unpin(1)
    clock[0] += 59
    assert (recent.stale(), recent.get(1) is not None) == (False, True)
    clock[0] += 2
    assert recent.stale()  # the flusher's cue, in a process that serves nothing else
    recent.trim()
    assert (recent.stale(), recent.get(1), recent.held_cells) == (False, None, 0)
