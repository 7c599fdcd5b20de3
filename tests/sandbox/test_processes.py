"""Stateless workers: servers in separate processes share every sandbox through the platform
database, and a restart or a kill loses no sandbox, token or snapshot and leaves no orphan."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, make_url, text

from app.api.state import SESSION_CACHE_SECONDS
from app.sandbox.calllog import FLUSH_SECONDS
from tests.conftest import ADMIN_HEADERS, API
from tests.databases import DatabaseFactory
from tests.processes import Deployment, deployment, running

CONTROL = "/__localforce/sandboxes"
MANY = "SELECT Id, Name FROM PricebookEntry ORDER BY Id"


@pytest.fixture
def deploy(
    database_factory: DatabaseFactory, sandbox_ready_template: str, tmp_path: Path
) -> Deployment:
    return deployment(database_factory, sandbox_ready_template, tmp_path)


def sf(base: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120)


def test_a_sandbox_made_through_one_process_is_served_by_another(deploy: Deployment) -> None:
    with running(deploy) as one, running(deploy) as two:
        made = httpx.post(
            f"{one.base}{CONTROL}", headers=ADMIN_HEADERS, json={"id": "shared"}, timeout=120
        )
        assert made.status_code == 201, made.text
        token = made.json()["access_token"]
        with sf(one.base, token) as first, sf(two.base, token) as second:
            created = second.post(f"{API}/sobjects/Contact", json={"LastName": "Zx Across"})
            assert created.status_code == 201, created.text
            contact = created.json()["id"]
            assert first.get(f"{API}/sobjects/Contact/{contact}").json()["LastName"] == "Zx Across"

            page = first.get(f"{API}/query", params={"q": MANY}).json()
            assert page["done"] is False and len(page["records"]) == 2000
            following = second.get(page["nextRecordsUrl"])
            assert following.status_code == 200, following.text
            rest = following.json()
            assert rest["totalSize"] == page["totalSize"]
            assert rest["records"][0]["Id"] > page["records"][-1]["Id"]

            # Each worker writes its calls within FLUSH_SECONDS of them: wait that long at most.
            time.sleep(FLUSH_SECONDS * 2)
            log = httpx.get(
                f"{two.base}{CONTROL}/shared/log", headers=ADMIN_HEADERS, timeout=60
            ).json()["calls"]
            assert [c["method"] for c in log] == ["POST", "GET", "GET", "GET"]
            assert [c["path"].rsplit("/", 1)[-1] for c in log][:2] == ["Contact", contact]
            reset = httpx.post(
                f"{two.base}{CONTROL}/shared/reset", headers=ADMIN_HEADERS, timeout=60
            )
            assert reset.status_code == 200, reset.text
            gone = first.get(f"{API}/sobjects/Contact/{contact}")
            assert gone.status_code == 404

            deleted = httpx.delete(f"{one.base}{CONTROL}/shared", headers=ADMIN_HEADERS, timeout=60)
            assert deleted.status_code == 204
            assert first.get(f"{API}/sobjects").status_code == 401  # at once where deleted
            time.sleep(SESSION_CACHE_SECONDS)  # and elsewhere once its cached session lapses
            ended = second.get(f"{API}/sobjects")
            assert ended.status_code == 401
            assert ended.json()[0]["errorCode"] == "INVALID_SESSION_ID"


def test_two_workers_of_one_server_serve_one_episode(deploy: Deployment) -> None:
    with running(deploy, "--workers", "2") as server:
        made = httpx.post(
            f"{server.base}{CONTROL}", headers=ADMIN_HEADERS, json={"id": "w2"}, timeout=120
        )
        assert made.status_code == 201, made.text
        token = made.json()["access_token"]
        ids = []
        for n in range(12):  # a new connection each time: the kernel spreads them over workers
            with sf(server.base, token) as client:
                response = client.post(f"{API}/sobjects/Issue__c", json={"Name": f"Zx {n}"})
                assert response.status_code == 201, response.text
                ids.append(response.json()["id"])
        assert len(set(ids)) == 12
        with sf(server.base, token) as client:
            page = client.get(f"{API}/query", params={"q": MANY}).json()
        with sf(server.base, token) as client:
            assert client.get(page["nextRecordsUrl"]).status_code == 200
        diff = httpx.get(
            f"{server.base}{CONTROL}/w2/diff", headers=ADMIN_HEADERS, timeout=60
        ).json()
        assert sorted(r["id"] for r in diff["created"]) == sorted(ids)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
def test_sandboxes_tokens_and_snapshots_outlive_the_process(deploy: Deployment, how: int) -> None:
    with running(deploy) as server:
        made = httpx.post(
            f"{server.base}{CONTROL}",
            headers=ADMIN_HEADERS,
            json={"id": "durable", "clock": "2024-06-01T09:00:00Z"},
            timeout=120,
        )
        token = made.json()["access_token"]
        with sf(server.base, token) as client:
            kept = client.post(f"{API}/sobjects/Issue__c", json={"Name": "Zx kept"}).json()["id"]
        snap = httpx.post(
            f"{server.base}{CONTROL}/durable/snapshots", headers=ADMIN_HEADERS, json={"name": "s1"}
        )
        assert snap.status_code == 201
        server.stop(how)  # between two requests of the episode

    with running(deploy) as server:
        described = httpx.get(
            f"{server.base}{CONTROL}/durable", headers=ADMIN_HEADERS, timeout=60
        ).json()
        assert described["snapshots"] == ["s1"]
        assert described["clock"]["now"] == "2024-06-01T09:00:00Z"
        with sf(server.base, token) as client:
            record = client.get(f"{API}/sobjects/Issue__c/{kept}")
            assert record.status_code == 200, record.text
            client.post(f"{API}/sobjects/Issue__c", json={"Name": "Zx after"})
        restored = httpx.post(
            f"{server.base}{CONTROL}/durable/snapshots/s1/restore",
            headers=ADMIN_HEADERS,
            timeout=60,
        )
        assert restored.status_code == 200, restored.text
        created = httpx.get(
            f"{server.base}{CONTROL}/durable/diff", headers=ADMIN_HEADERS, timeout=60
        ).json()["created"]
        assert [r["id"] for r in created] == [kept]


def test_storage_a_crash_left_behind_is_reclaimed_at_start(deploy: Deployment) -> None:
    with running(deploy) as server:
        made = httpx.post(
            f"{server.base}{CONTROL}", headers=ADMIN_HEADERS, json={"id": "live"}, timeout=120
        )
        assert made.status_code == 201
        server.stop(signal.SIGKILL)
    orphan = _plant_orphan(deploy)
    with running(deploy) as server:
        assert (
            httpx.get(f"{server.base}{CONTROL}/live", headers=ADMIN_HEADERS, timeout=60).status_code
            == 200
        )
        assert not _exists(deploy, orphan)


def _plant_orphan(deploy: Deployment) -> str:
    """A clone made long ago that no sandbox names: what a kill during a create leaves."""
    made_at = int(time.time()) - 3600
    if not deploy.database_url:
        [clones_dir] = [p for p in (deploy.data_dir / "sandboxes").iterdir() if p.is_dir()]
        orphan = clones_dir / f"copy-{made_at:010d}-deadbeef0000.db"
        orphan.write_bytes(b"")
        return str(orphan)
    url = make_url(deploy.database_url)
    name = f"{(url.database or '')[:30]}_sb_{made_at:010d}_deadbeef0000"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{name}"'))
    engine.dispose()
    return name


def _exists(deploy: Deployment, orphan: str) -> bool:
    if not deploy.database_url:
        return Path(orphan).exists()
    engine = create_engine(deploy.database_url)
    with engine.connect() as conn:
        found = conn.execute(
            text("SELECT 1 FROM pg_namespace WHERE nspname = :n"), {"n": orphan}
        ).first()
    engine.dispose()
    return found is not None
