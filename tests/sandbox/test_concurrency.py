"""Fifty sandboxes at once, each with its own client, over a real server: no sandbox sees
another's writes, and every reset brings back exactly the seeded state."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from app.api.state import AppState
from app.seeding.pipeline import stored_content_hash
from tests.conftest import ADMIN_HEADERS, API
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import TOUCHED
from tests.servers import private_org_app, serve_in_thread

SANDBOXES = 50


@pytest.fixture(scope="module")
def server(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> Iterator[tuple[str, AppState]]:
    app = private_org_app(database_factory, sandbox_ready_template, sandbox_pool_size=4)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}", app.state.localforce


def run_episode(base: str, index: int) -> dict[str, Any]:
    with httpx.Client(base_url=base, headers=ADMIN_HEADERS, timeout=60) as control:
        sandbox = control.post("/__localforce/sandboxes", json={"id": f"par{index}"}).json()
    headers = {"Authorization": f"Bearer {sandbox['access_token']}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as sf:
        tag = f"Zq{index:03d}"
        contact = sf.post(f"{API}/sobjects/Contact", json={"LastName": tag}).json()["id"]
        sf.patch(f"{API}/sobjects/Contact/{contact}", json={"FirstName": "Par"})
        case = sf.post(f"{API}/sobjects/Case", json={"Subject": tag, "ContactId": contact})
        sf.post(f"{API}/sobjects/EmailMessage", json={"ParentId": case.json()["id"]})
        issue = sf.post(f"{API}/sobjects/Issue__c", json={"Name": tag}).json()["id"]
        sf.delete(f"{API}/sobjects/Issue__c/{issue}")
        seen = sf.get(
            f"{API}/query",
            params={"q": "SELECT LastName FROM Contact WHERE LastName LIKE 'Zq%'"},
        ).json()["records"]
        cases = sf.get(
            f"{API}/query", params={"q": "SELECT Subject FROM Case WHERE Subject LIKE 'Zq%'"}
        ).json()["records"]
    return {
        "id": sandbox["id"],
        "tag": tag,
        "contacts": [r["LastName"] for r in seen],
        "cases": [r["Subject"] for r in cases],
    }


def test_fifty_concurrent_sandboxes_stay_isolated_and_reset_exactly(
    server: tuple[str, AppState],
) -> None:
    base, state = server
    default = state.sandboxes.get("default")
    with default.engine.connect() as conn:
        seeded_full = stored_content_hash(conn, default.schema.registry, default.schema.tables)
        seeded_touched = stored_content_hash(
            conn, default.schema.registry, default.schema.tables, only=TOUCHED
        )
    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(lambda i: run_episode(base, i), range(SANDBOXES)))
    for result in results:
        assert result["contacts"] == [result["tag"]], result
        assert result["cases"] == [result["tag"]], result
    with httpx.Client(base_url=base, headers=ADMIN_HEADERS, timeout=60) as control:
        diffs = [control.get(f"/__localforce/sandboxes/{r['id']}/diff").json() for r in results]
        assert all(len(d["created"]) == 3 for d in diffs)
        resets = [control.post(f"/__localforce/sandboxes/{r['id']}/reset") for r in results]
        assert all(r.status_code == 200 for r in resets)
    for result in results:
        sandbox = state.sandboxes.get(result["id"])
        with sandbox.engine.connect() as conn:
            registry, tables = sandbox.schema.registry, sandbox.schema.tables
            assert stored_content_hash(conn, registry, tables, only=TOUCHED) == seeded_touched
    # A full-state hash (every row of every object) for a few of them.
    for result in results[:3]:
        sandbox = state.sandboxes.get(result["id"])
        with sandbox.engine.connect() as conn:
            registry, tables = sandbox.schema.registry, sandbox.schema.tables
            assert stored_content_hash(conn, registry, tables) == seeded_full
