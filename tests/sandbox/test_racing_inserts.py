"""Rows that hosts sharing one database may insert at the same moment with one key: a
template's build claimed, a sandbox's id reserved, an episode filed. The insert is the check, so
one wins and the other is told so; never an IntegrityError (a 500), as a look-then-insert gave
on PostgreSQL, where both looked before either had committed."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, Engine

from app.errors import SalesforceError
from app.sandbox.registry import SandboxRow, claim_template_build, insert_sandbox
from app.storage.database import create_db_engine, migrate_platform, platform_transaction
from app.tasks.episodes import EpisodeLabels, EpisodeTask, save_episode
from tests.databases import DatabaseFactory

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
# Long enough for the second transaction to reach the first one's row (or write lock) and wait.
SECOND_WAITS = 0.3


@pytest.fixture
def platform(database_factory: DatabaseFactory) -> Iterator[Engine]:
    engine = create_db_engine(database_factory.new_url())
    migrate_platform(engine)
    yield engine
    engine.dispose()


def _in_transaction(engine: Engine, insert: Callable[[Connection], Any]) -> Any:
    with platform_transaction(engine) as conn:
        return insert(conn)


def race(engine: Engine, insert: Callable[[Connection], Any]) -> tuple[Any, Any]:
    """`insert` in a transaction held open while a second transaction (another host's) runs it
    too; then the first commits. What each returned, or the error the second raised."""
    with ThreadPoolExecutor(1) as pool:
        with platform_transaction(engine) as conn:
            first = insert(conn)
            second = pool.submit(_in_transaction, engine, insert)
            time.sleep(SECOND_WAITS)
            assert not second.done(), "the second insert did not wait for the first"
        try:
            return first, second.result(timeout=60)
        except SalesforceError as error:
            return first, error


def test_of_two_hosts_claiming_a_template_build_one_builds(platform: Engine) -> None:
    url = f"tpl_{uuid.uuid4().hex[:8]}"
    claim = lambda conn: claim_template_build(conn, url, NOW, timedelta(minutes=15))  # noqa: E731
    assert race(platform, claim) == (True, False)


def test_an_abandoned_build_is_taken_over_by_one_host(platform: Engine) -> None:
    url = f"tpl_{uuid.uuid4().hex[:8]}"
    with platform_transaction(platform) as conn:
        assert claim_template_build(conn, url, NOW - timedelta(hours=1), timedelta(minutes=15))
    claim = lambda conn: claim_template_build(conn, url, NOW, timedelta(minutes=15))  # noqa: E731
    assert race(platform, claim) == (True, False)


def test_of_two_hosts_reserving_one_sandbox_id_one_has_it(platform: Engine) -> None:
    def reserve(conn: Connection) -> bool:
        row = SandboxRow(
            id="taken",
            instance=uuid.uuid4().hex,
            org="original",
            seed=42,
            url="",
            template="",
            clock_start=None,
            clock_pinned=False,
            clock_origin=NOW,
            created_at=NOW,
            last_used=NOW,
        )
        return insert_sandbox(conn, row)

    assert race(platform, reserve) == (True, False)


def test_of_two_hosts_filing_one_episode_the_second_is_refused(platform: Engine) -> None:
    task = EpisodeTask.parse(
        {
            "idx": 0,
            "task": "top_issue_identification",
            "query": "Which issue?",
            "reward_metric": "exact_match",
            "metadata": {"required": "", "optional": ""},
            "answer": "a",
        }
    )
    labels = EpisodeLabels(org="original", seed=42, clock=None)
    first, second = race(platform, lambda conn: save_episode(conn, "ep-1", task, labels, NOW))
    assert first is None
    assert isinstance(second, SalesforceError)
    assert (second.status_code, second.error_code) == (409, "DUPLICATE_VALUE")
    assert second.message == (
        "An episode with id ep-1 has a result kept: choose another id, or purge it first "
        "(DELETE /__localforce/results/ep-1)"
    )
