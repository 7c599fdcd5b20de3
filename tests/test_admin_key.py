"""The operator's key: made at first start and kept in the data directory (0600), the same for
every process that shares it; the control plane answers nothing without it."""

from __future__ import annotations

import multiprocessing
import os
import re
import stat
import subprocess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from app.admin_key import InsecureOnPublicAddress, key_path, stored_key, with_admin_key
from app.config import Settings
from tests.conftest import ADMIN_HEADERS, API, TEST_ADMIN_KEY, login
from tests.databases import DatabaseFactory
from tests.processes import LOCALFORCE, deployment, running

REFUSED = [
    {
        "message": "The localforce control plane needs the admin key (LOCALFORCE_ADMIN_KEY, or "
        "the one `localforce admin-key` prints), as 'Authorization: Bearer <key>' or "
        "'X-Localforce-Admin-Key: <key>'.",
        "errorCode": "INVALID_AUTH_HEADER",
    }
]
KEY_LINE = re.compile(r"Admin key \(control plane and /console\): (\S+)  \(from (.+)\)")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_key_is_made_once_with_mode_0600_and_kept(tmp_path: Path) -> None:
    first = with_admin_key(Settings(data_dir=tmp_path)).admin_key
    assert len(first) >= 40
    assert mode(key_path(tmp_path)) == 0o600
    assert key_path(tmp_path).read_text() == first + "\n"
    assert with_admin_key(Settings(data_dir=tmp_path)).admin_key == first
    key_path(tmp_path).chmod(0o644)  # loosened by hand: made owner-only again
    assert stored_key(tmp_path) == first
    assert mode(key_path(tmp_path)) == 0o600


def test_the_environments_key_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCALFORCE_ADMIN_KEY", "from-the-environment")
    assert with_admin_key(Settings(data_dir=tmp_path)).admin_key == "from-the-environment"
    assert not key_path(tmp_path).exists()


def _race(data_dir: Path, start: Barrier, keys: Queue[str]) -> None:
    start.wait()
    keys.put(stored_key(data_dir))


def test_processes_starting_at_once_agree_on_one_key(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    start, keys = context.Barrier(6), context.Queue()
    racers = [context.Process(target=_race, args=(tmp_path, start, keys)) for _ in range(6)]
    for racer in racers:
        racer.start()
    found = {keys.get(timeout=60) for _ in racers}
    for racer in racers:
        racer.join(timeout=60)
    assert found == {key_path(tmp_path).read_text().strip()}


def test_an_open_control_plane_is_for_loopback_addresses_only(tmp_path: Path) -> None:
    for host in ("127.0.0.1", "::1", "localhost"):
        opened = Settings(data_dir=tmp_path, host=host, insecure_control_plane=True)
        assert with_admin_key(opened).admin_key == ""
    with pytest.raises(InsecureOnPublicAddress):
        with_admin_key(Settings(data_dir=tmp_path, host="0.0.0.0", insecure_control_plane=True))
    assert not key_path(tmp_path).exists()


def run_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    inherited = {key: value for key, value in os.environ.items() if "LOCALFORCE_" not in key}
    environment = {**inherited, **env}
    return subprocess.run(
        [LOCALFORCE, *args], env=environment, capture_output=True, text=True, timeout=120
    )


def test_the_admin_key_command_prints_the_kept_key(tmp_path: Path) -> None:
    printed = run_cli("admin-key", "--data-dir", str(tmp_path))
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == key_path(tmp_path).read_text()
    again = run_cli("admin-key", "--data-dir", str(tmp_path))
    assert again.stdout == printed.stdout
    given = run_cli("admin-key", "--data-dir", str(tmp_path), LOCALFORCE_ADMIN_KEY="mine")
    assert given.stdout == "mine\n"


def test_serve_refuses_an_open_control_plane_on_every_interface(tmp_path: Path) -> None:
    refused = run_cli(
        "serve", "--host", "0.0.0.0", "--insecure-control-plane", "--data-dir", str(tmp_path)
    )
    assert refused.returncode == 1
    assert refused.stderr == (
        "An open control plane (--insecure-control-plane) is served on a loopback address "
        "only (127.0.0.1, ::1, localhost), not on 0.0.0.0.\n"
    )
    assert not (tmp_path / "localforce.db").exists()  # refused before anything was made


def test_serve_makes_the_key_prints_it_and_keeps_it(
    database_factory: DatabaseFactory, seeded_template: str, tmp_path: Path
) -> None:
    deploy = deployment(database_factory, seeded_template, tmp_path)
    keys = []
    for _ in range(2):
        with running(deploy, LOCALFORCE_ADMIN_KEY="") as server:
            [(key, source)] = KEY_LINE.findall(server.log.read_text())
            assert source == str(key_path(deploy.data_dir))
            refused = httpx.get(f"{server.base}/__localforce/sandboxes", timeout=60)
            assert (refused.status_code, refused.json()) == (401, REFUSED)
            listed = httpx.get(
                f"{server.base}/__localforce/sandboxes",
                headers={"X-Localforce-Admin-Key": key},
                timeout=60,
            )
            assert listed.status_code == 200
            keys.append(key)
    assert keys[0] == keys[1] == key_path(deploy.data_dir).read_text().strip()
    assert mode(key_path(deploy.data_dir)) == 0o600


def test_serve_warns_of_an_open_control_plane_and_hides_the_environments_key(
    database_factory: DatabaseFactory, seeded_template: str, tmp_path: Path
) -> None:
    deploy = deployment(database_factory, seeded_template, tmp_path)
    with running(deploy, "--insecure-control-plane") as server:
        log = server.log.read_text()
        assert "Warning: the control plane (/__localforce) and /console ask for no admin key" in log
        assert httpx.get(f"{server.base}/__localforce/sandboxes", timeout=60).status_code == 200
    with running(deploy) as server:
        log = server.log.read_text()
        assert "Admin key (control plane and /console): the one in LOCALFORCE_ADMIN_KEY" in log
        assert TEST_ADMIN_KEY not in log
    assert not key_path(deploy.data_dir).exists()


@pytest.fixture(scope="module")
def stranger(client: TestClient) -> TestClient:
    """A client of the same app without the admin key."""
    return TestClient(client.app, base_url=str(client.base_url))


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Localforce-Admin-Key": "wrong"},
        {"Authorization": "Bearer wrong"},
        {"Authorization": TEST_ADMIN_KEY},  # not as a bearer token
    ],
    ids=["none", "wrong-header", "wrong-bearer", "no-scheme"],
)
def test_the_control_plane_refuses_without_the_key(
    stranger: TestClient, headers: dict[str, str]
) -> None:
    for method, path in [
        ("GET", "/__localforce/sandboxes"),
        ("POST", "/__localforce/sandboxes"),
        ("POST", "/__localforce/sandboxes/default/reset"),
        ("GET", "/__localforce/tasks"),
        ("POST", "/__localforce/episodes"),
    ]:
        response = stranger.request(method, path, headers=headers)
        assert (response.status_code, response.json()) == (401, REFUSED), path


def sandboxes_without_clock(client: TestClient) -> list[dict[str, object]]:
    """The sandboxes listed, less each one's clock: a real clock's "now" moves on between reads."""
    listed = client.get("/__localforce/sandboxes").json()["sandboxes"]
    return [{key: value for key, value in sandbox.items() if key != "clock"} for sandbox in listed]


def test_an_agents_token_opens_no_control_route(client: TestClient, stranger: TestClient) -> None:
    token = login(client)
    agent = {"Authorization": f"Bearer {token}"}
    made = stranger.post(f"{API}/sobjects/Contact", json={"LastName": "Kept"}, headers=agent)
    assert made.status_code == 201
    before = sandboxes_without_clock(client)
    for method, path in [
        ("POST", "/__localforce/sandboxes"),
        ("POST", "/__localforce/sandboxes/default/reset"),
        ("GET", "/__localforce/sandboxes/default/diff"),
        ("GET", "/__localforce/tasks"),
    ]:
        response = stranger.request(method, path, headers=agent)
        assert (response.status_code, response.json()) == (401, REFUSED), path
    assert sandboxes_without_clock(client) == before
    kept = stranger.get(f"{API}/sobjects/Contact/{made.json()['id']}", headers=agent)
    assert kept.status_code == 200  # the reset did not happen


def test_the_key_opens_the_control_plane(stranger: TestClient) -> None:
    assert stranger.get("/__localforce/sandboxes", headers=ADMIN_HEADERS).status_code == 200
    bearer = {"Authorization": f"Bearer {TEST_ADMIN_KEY}"}
    assert stranger.get("/__localforce/sandboxes/default/diff", headers=bearer).status_code == 200


def test_the_console_sends_a_browser_without_the_key_to_log_in(stranger: TestClient) -> None:
    sent = stranger.get("/console", follow_redirects=False)
    assert (sent.status_code, sent.headers["location"]) == (303, "/console/login?next=%2Fconsole")
    agent = {"Authorization": f"Bearer {login(stranger)}"}
    assert stranger.get("/console", headers=agent, follow_redirects=False).status_code == 303
    assert stranger.get("/console", headers=ADMIN_HEADERS).status_code == 200
