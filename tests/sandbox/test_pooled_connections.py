"""Which sandboxes keep their database connections open between requests: the most recently
served, up to LOCALFORCE_POOLED_SANDBOXES; on SQLite each holds a small cache of its template."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.storage.backends.sqlite import TEMPLATE_ALIAS, TEMPLATE_CACHE_KIB
from tests.conftest import API, open_client
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import as_token, create, state_of

SANDBOXES = ("pool-a", "pool-b", "pool-c")


@pytest.fixture(scope="module")
def client(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[TestClient]:
    yield from open_client(database_factory, sandbox_ready_template, pooled_sandboxes=2)


def count_cases(sf: TestClient) -> None:
    answer = sf.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Case"})
    assert answer.status_code == 200
    assert answer.json()["totalSize"] == 977


def test_past_the_setting_the_least_recently_served_sandbox_lets_go(
    client: TestClient, backend: str
) -> None:
    agents = {name: as_token(client, create(client, id=name)["access_token"]) for name in SANDBOXES}
    for name in SANDBOXES:
        count_cases(agents[name])
    sandboxes = state_of(client).sandboxes
    # Read from what the lifecycle holds: looking one up by id would count as serving it.
    live = {sandbox.id: sandbox for sandbox in sandboxes._live.values()}
    assert [sandbox.id for sandbox in sandboxes._pooled.values()] == ["pool-b", "pool-c"]
    if backend == "sqlite":  # a sandbox has an engine of its own there
        assert live["pool-a"].engine.pool.checkedin() == 0  # type: ignore[attr-defined]
        assert live["pool-c"].engine.pool.checkedin() >= 1  # type: ignore[attr-defined]

    count_cases(agents["pool-a"])  # served again: it reopens, and pool-b is the oldest now
    assert [sandbox.id for sandbox in sandboxes._pooled.values()] == ["pool-c", "pool-a"]
    if backend == "sqlite":
        assert live["pool-a"].engine.pool.checkedin() >= 1  # type: ignore[attr-defined]
        assert live["pool-b"].engine.pool.checkedin() == 0  # type: ignore[attr-defined]


def test_a_sandbox_connection_keeps_a_small_template_cache(
    client: TestClient, backend: str
) -> None:
    if backend != "sqlite":
        pytest.skip("PostgreSQL's shared buffers serve every sandbox's template reads")
    create(client, id="pool-cache")
    with state_of(client).sandboxes.get("pool-cache").engine.connect() as conn:
        size = conn.execute(text(f"PRAGMA {TEMPLATE_ALIAS}.cache_size")).scalar_one()
        default = conn.execute(text("PRAGMA main.cache_size")).scalar_one()
    assert size == -TEMPLATE_CACHE_KIB
    assert default == -2000  # the sandbox's own tables keep SQLite's default
