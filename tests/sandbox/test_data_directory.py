"""Sandbox storage belongs to its data: an idle template goes, with its pooled copies, whether or
not anything else happens; a copied data directory (or database) serves its own sandboxes and
leaves the original's untouched; and a data directory of the version that recorded absolute
paths is migrated to names that hold wherever it sits."""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, insert, select, text

from app.api.state import AppState
from app.config import REPO_ROOT
from app.main import create_app
from app.sandbox.model import SERVER_DATABASE
from app.sandbox.registry import (
    COPIES,
    SANDBOXES,
    TEMPLATES,
    SandboxRow,
    add_copy,
    pooled_copies,
    register_template,
)
from app.storage.backends import backend_for
from tests.conftest import ADMIN_HEADERS, API, TEST_SEED, make_settings
from tests.databases import DatabaseFactory
from tests.processes import Deployment, deployment, running

CONTROL = "/__localforce/sandboxes"
IDLE_SECONDS = 2.0  # the server sweeps every second then
# A template no sandbox uses is gone within its idle time, a sweep, and the second to which
# the registry may round times.
GONE_WITHIN = IDLE_SECONDS + 1 + 1 + 2  # and two seconds for a loaded machine


# -- an idle template goes -----------------------------------------------------------------------


@pytest.fixture
def expiring(
    database_factory: DatabaseFactory, sandbox_ready_template: str, tmp_path: Path
) -> Iterator[TestClient]:
    """A server whose templates expire after IDLE_SECONDS unused, with a data directory of its
    own holding the template of TEST_SEED, and one copy kept warm per template."""
    url = database_factory.new_url(template=sandbox_ready_template)
    database_factory.copy_sandbox_templates(sandbox_ready_template, url, tmp_path)
    settings = make_settings(url, tmp_path, template_idle_seconds=IDLE_SECONDS, sandbox_pool_size=1)
    app = create_app(settings)
    with TestClient(app, base_url="https://testserver", headers=ADMIN_HEADERS) as client:
        yield client


def sandbox_storage(client: TestClient) -> set[str]:
    """Every template and clone the server's storage holds: files under the data directory's
    `sandboxes/` on SQLite, schemas of the database on PostgreSQL."""
    state: AppState = client.app.state.localforce  # type: ignore[attr-defined]
    if state.engine.dialect.name == "sqlite":
        root = state.settings.data_dir / "sandboxes"
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    with state.engine.connect() as conn:
        names = conn.execute(text("SELECT nspname FROM pg_namespace")).scalars().all()
    prefix = (state.engine.url.database or "")[:30]
    return {n for n in names if n.startswith((f"{prefix}_tpl_", f"{prefix}_sb_"))}


def databases(storage: set[str]) -> set[str]:
    """The templates and clones themselves, without SQLite's -wal and -shm companions."""
    return {name for name in storage if not name.endswith(("-wal", "-shm"))}


def pooled(state: AppState) -> list[str]:
    with state.platform.connect() as conn:
        return pooled_copies(conn)


def wait_for(condition: object, within: float) -> float:
    """Seconds until `condition()` held, polled; fails after `within` seconds."""
    started = time.monotonic()
    while not condition():  # type: ignore[operator]
        assert time.monotonic() - started < within, "the condition did not come to hold"
        time.sleep(0.1)
    return time.monotonic() - started


def test_an_idle_template_goes_with_its_pooled_copies(expiring: TestClient) -> None:
    state: AppState = expiring.app.state.localforce  # type: ignore[attr-defined]
    kept = expiring.post(CONTROL, json={"id": "kept"})
    assert kept.status_code == 201, kept.text
    assert expiring.post(CONTROL, json={"id": "gone"}).status_code == 201
    [template] = state.templates.all()
    wait_for(lambda: len(pooled(state)) == 1, within=30)
    assert expiring.delete(f"{CONTROL}/gone").status_code == 204
    # The template, the live sandbox's clone and the pooled one stay while the sandbox lives.
    held = databases(sandbox_storage(expiring))
    assert len(held) == 3
    time.sleep(IDLE_SECONDS + 2)  # past its idle time, a sweep, and a second's rounding
    assert databases(sandbox_storage(expiring)) == held
    assert state.templates.all() == [template]
    token = kept.json()["access_token"]
    sf = TestClient(expiring.app, base_url="https://testserver")
    sf.headers["Authorization"] = f"Bearer {token}"
    count = sf.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Case"})
    assert count.json()["totalSize"] == 977

    # Unused from the last sandbox's end, it goes with its pooled copy: nothing is left.
    assert expiring.delete(f"{CONTROL}/kept").status_code == 204
    wait_for(lambda: sandbox_storage(expiring) == set(), within=GONE_WITHIN)
    assert state.templates.all() == []
    assert pooled(state) == []

    # A process that saw it ready a moment ago (another worker) builds it anew, all the same.
    state.templates._ready[template] = time.monotonic()
    again = expiring.post(CONTROL, json={"id": "again", "seed": TEST_SEED})
    assert again.status_code == 201, again.text
    sf.headers["Authorization"] = f"Bearer {again.json()['access_token']}"
    count = sf.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Case"})
    assert count.json()["totalSize"] == 977
    assert state.templates.all() == [template]


# -- a copied data directory ---------------------------------------------------------------------


def hashes(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def create_sandbox(base: str, sandbox_id: str) -> str:
    made = httpx.post(
        f"{base}{CONTROL}", headers=ADMIN_HEADERS, json={"id": sandbox_id}, timeout=120
    )
    assert made.status_code == 201, made.text
    return str(made.json()["access_token"])


def sf(base: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120)


def contact_names(client: httpx.Client) -> list[str]:
    query = "SELECT LastName FROM Contact WHERE LastName LIKE 'Zd%' ORDER BY LastName"
    found = client.get(f"{API}/query", params={"q": query})
    assert found.status_code == 200, found.text
    return [record["LastName"] for record in found.json()["records"]]


def test_a_copied_data_directory_uses_its_own_sandboxes(
    database_factory: DatabaseFactory, sandbox_ready_template: str, tmp_path: Path
) -> None:
    original = deployment(database_factory, sandbox_ready_template, tmp_path / "original")
    with running(original) as server:
        token = create_sandbox(server.base, "a")
        with sf(server.base, token) as client:
            made = client.post(f"{API}/sobjects/Contact", json={"LastName": "Zd Ada"})
            assert made.status_code == 201, made.text
            ada = made.json()["id"]
            made = client.post(f"{API}/sobjects/Contact", json={"LastName": "Zd Bea"})
            bea = made.json()["id"]
    before = hashes(original.data_dir)

    # cp -r of the data directory (and, on PostgreSQL, a copy of the database)
    copy_dir = tmp_path / "copy" / "data"
    shutil.copytree(original.data_dir, copy_dir)
    copy_url = (
        database_factory.new_url(template=original.database_url) if original.database_url else ""
    )
    copy = Deployment(copy_dir, copy_url)
    with running(copy) as server:
        with sf(server.base, token) as client:  # its sessions came along
            assert contact_names(client) == ["Zd Ada", "Zd Bea"]
            updated = client.patch(f"{API}/sobjects/Contact/{ada}", json={"LastName": "Zd Ann"})
            assert updated.status_code == 204, updated.text
            assert client.delete(f"{API}/sobjects/Contact/{bea}").status_code == 204
            made = client.post(f"{API}/sobjects/Contact", json={"LastName": "Zd Cid"})
            assert made.status_code == 201, made.text
            assert contact_names(client) == ["Zd Ann", "Zd Cid"]
        with sf(server.base, create_sandbox(server.base, "new")) as client:
            made = client.post(f"{API}/sobjects/Contact", json={"LastName": "Zd Dan"})
            assert made.status_code == 201, made.text
    if not original.database_url:
        assert hashes(original.data_dir) == before  # not a byte of the original changed
        copy_files = b"".join(p.read_bytes() for p in copy_dir.rglob("*.db"))
        assert str(original.data_dir.resolve()).encode() not in copy_files
        assert str(copy_dir.resolve()).encode() not in copy_files  # no path is recorded

    with running(copy) as server, sf(server.base, token) as client:
        assert contact_names(client) == ["Zd Ann", "Zd Cid"]  # the copy kept its writes
    with running(original) as server, sf(server.base, token) as client:
        assert contact_names(client) == ["Zd Ada", "Zd Bea"]  # and the original its own
        unknown = httpx.get(f"{server.base}{CONTROL}/new", headers=ADMIN_HEADERS, timeout=60)
        assert unknown.status_code == 404


# -- a data directory of the version that recorded absolute paths --------------------------------


def test_absolute_sandbox_urls_are_migrated_to_names(database_factory: DatabaseFactory) -> None:
    url = database_factory.new_url()
    engine = create_engine(url)
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    sqlite_root = "sqlite:////srv/old place/data/sandboxes"
    postgres = "postgresql+psycopg://lf:secret@db.example:5432/lf?options=-csearch_path%3D"
    now = datetime(2026, 12, 1, 9, 0)
    with engine.begin() as conn:
        backend_for(conn.dialect.name).prepare_database(conn)
        config.attributes["connection"] = conn
        command.upgrade(config, "0011_episode_results")
        for instance, sandbox_id, storage, template in [
            ("i0", "default", "sqlite:////srv/old place/data/localforce.db", ""),
            ("i1", "a", f"{sqlite_root}/localforce/copy-1-a.db", f"{sqlite_root}/template-k.db"),
            ("i2", "b", f"{postgres}lf_sb_1_b", f"{postgres}lf_tpl_k"),
            ("i3", "c", "", ""),  # a create in flight: no storage yet
        ]:
            row = SandboxRow(
                id=sandbox_id,
                instance=instance,
                org="original",
                seed=1,
                url=storage,
                template=template,
                clock_start=None,
                clock_pinned=False,
                clock_origin=now,
                created_at=now,
                last_used=now,
            )
            # The row as revision 0011 had it: no columns of later migrations.
            later = ("schema_changes", "snapshot_schemas")
            old_row = {k: v for k, v in row.__dict__.items() if k not in later}
            conn.execute(insert(SANDBOXES).values(**old_row))
        register_template(conn, f"{sqlite_root}/template-k.db", now)
        register_template(conn, f"{postgres}lf_tpl_k", now)
        add_copy(conn, f"{sqlite_root}/localforce/copy-2-p.db", f"{sqlite_root}/template-k.db", now)
        command.upgrade(config, "head")
    with engine.connect() as conn:
        sandboxes = conn.execute(
            select(SANDBOXES.c.id, SANDBOXES.c.url, SANDBOXES.c.template).order_by(SANDBOXES.c.id)
        ).all()
        templates = conn.execute(select(TEMPLATES.c.url).order_by(TEMPLATES.c.url)).scalars()
        copies = conn.execute(select(COPIES.c.url, COPIES.c.template)).all()
        assert [tuple(row) for row in sandboxes] == [
            ("a", "sandboxes/localforce/copy-1-a.db", "sandboxes/template-k.db"),
            ("b", "lf_sb_1_b", "lf_tpl_k"),
            ("c", "", ""),
            ("default", SERVER_DATABASE, ""),
        ]
        assert list(templates) == ["lf_tpl_k", "sandboxes/template-k.db"]
        assert [tuple(row) for row in copies] == [
            ("sandboxes/localforce/copy-2-p.db", "sandboxes/template-k.db")
        ]
    engine.dispose()
