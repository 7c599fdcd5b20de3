"""A sandbox's call log keeps its newest LOCALFORCE_CALL_LOG_RETENTION calls: a read answers
those alone, and the stored log is trimmed after every quarter of the bound written, not on
every batch (a trim walks the bound's worth of entries)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.sandbox import calllog
from app.sandbox.calllog import CALLS, Call, TrimSchedule, add_calls
from app.storage.database import platform_transaction
from tests.conftest import API, open_client
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import CONTROL, as_token, create, state_of

RETENTION = 8


@pytest.fixture(scope="module")
def client(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[TestClient]:
    yield from open_client(database_factory, sandbox_ready_template, call_log_retention=RETENTION)


def stored_calls(client: TestClient, sandbox_id: str) -> int:
    with state_of(client).platform.connect() as conn:
        query = select(func.count()).where(CALLS.c.sandbox_id == sandbox_id)
        return int(conn.execute(query).scalar_one())


def a_call(n: int) -> Call:
    return Call(datetime(2026, 1, 1, 0, 0, n % 60, tzinfo=UTC), "GET", f"/n/{n}", "", 200, 1.0)


def test_a_schedule_trims_each_log_after_a_quarter_of_its_bound() -> None:
    schedule = TrimSchedule(retention=10_000)
    assert schedule.every == 2_500
    assert schedule.due(["a"] * 2_499 + ["b"] * 100) == []
    assert schedule.due(["b", "a", "a"]) == ["a"]
    schedule.forget("b")
    assert schedule.due(["b"] * 2_499) == []  # b counts from nothing again
    assert TrimSchedule(retention=2).every == 1
    assert TrimSchedule(retention=2).due(["c", "c", "c"]) == ["c"]  # once a batch


def test_the_log_answers_its_newest_calls_and_stays_near_its_bound(client: TestClient) -> None:
    made = create(client)
    sf = as_token(client, made["access_token"])
    for n in range(30):
        answer = sf.get(f"{API}/query", params={"q": f"SELECT Id FROM Case LIMIT {n + 1}"})
        assert answer.status_code == 200
    log = client.get(f"{CONTROL}/{made['id']}/log").json()["calls"]
    assert [call["query"] for call in log] == [
        f"SELECT Id FROM Case LIMIT {n + 1}" for n in range(22, 30)
    ]
    assert RETENTION <= stored_calls(client, made["id"]) <= RETENTION + RETENTION // 4


def test_a_batch_of_many_sandboxes_trims_none_below_the_schedule(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    trimmed: list[str] = []
    monkeypatch.setattr(
        calllog, "trim", lambda conn, sandbox_id, retention: trimmed.append(sandbox_id)
    )
    schedule = TrimSchedule(retention=10_000)
    batch = [(f"trim-{n}", a_call(n)) for n in range(64)]
    with platform_transaction(state_of(client).platform) as conn:
        for _ in range(20):
            add_calls(conn, batch, 10_000, schedule)
    assert trimmed == []
    assert stored_calls(client, "trim-0") == 20
