"""`localforce serve --workers N`: each worker listens on a socket of its own, so connections
opened at once spread over the workers (on a shared socket one worker often took them all), a
worker restarted after a crash listens again, and a port in use fails at once."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
import uvicorn

from app import workers
from app.workers import reuse_port_socket
from tests.databases import DatabaseFactory
from tests.processes import LOCALFORCE, Deployment, ServerProcess, deployment, running
from tests.servers import free_port

CONNECTIONS = 64
LISTEN, ESTABLISHED = "0A", "01"  # the states /proc/net/tcp writes
VERSIONS = "/services/data"  # answered without a session


@pytest.fixture
def deploy(
    database_factory: DatabaseFactory, sandbox_ready_template: str, tmp_path: Path
) -> Deployment:
    return deployment(database_factory, sandbox_ready_template, tmp_path)


def tcp_sockets(port: int) -> dict[str, str]:
    """The state of each socket on the server's side of `port`, by inode."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port:
                found[fields[9]] = fields[3]
    return found


def workers_of(server: ServerProcess) -> list[int]:
    """The worker processes: the server's process group, less its supervisor."""
    group = os.getpgid(server.process.pid)
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != server.process.pid:
            try:
                if os.getpgid(int(entry.name)) == group:
                    pids.append(int(entry.name))
            except ProcessLookupError:
                pass
    return pids


def sockets_by_worker(server: ServerProcess, port: int) -> dict[int, Counter[str]]:
    """For each worker, how many of the port's sockets it holds, by state (processes of the
    group that hold none are left out)."""
    states = tcp_sockets(port)
    held: dict[int, Counter[str]] = {}
    for pid in workers_of(server):
        counts: Counter[str] = Counter()
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except (FileNotFoundError, ProcessLookupError):
            continue
        for link in links:
            inode = link.removeprefix("socket:[").removesuffix("]")
            if link.startswith("socket:[") and inode in states:
                counts[states[inode]] += 1
        if counts:  # not a helper process (multiprocessing's resource tracker)
            held[pid] = counts
    return held


def wait_for_listeners(server: ServerProcess, port: int, count: int) -> dict[int, Counter[str]]:
    deadline = time.monotonic() + 60
    while True:
        held = sockets_by_worker(server, port)
        if sum(1 for counts in held.values() if counts[LISTEN] == 1) == count:
            return held
        assert time.monotonic() < deadline, f"workers' sockets: {held}"
        time.sleep(0.2)


async def spread_of_connections(server: ServerProcess, port: int) -> dict[int, Counter[str]]:
    """Open CONNECTIONS keep-alive connections at once (a request on each), and while they are
    open, which worker holds how many."""
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    async with httpx.AsyncClient(base_url=server.base, limits=limits, timeout=60) as client:
        answers = await asyncio.gather(*(client.get(VERSIONS) for _ in range(CONNECTIONS)))
        assert {answer.status_code for answer in answers} == {200}
        return sockets_by_worker(server, port)


def test_connections_opened_at_once_spread_over_the_workers(deploy: Deployment) -> None:
    with running(deploy, "--workers", "2") as server:
        port = int(server.base.rsplit(":", 1)[1])
        assert len(wait_for_listeners(server, port, 2)) == 2
        held = asyncio.run(spread_of_connections(server, port))
        established = sorted(counts[ESTABLISHED] for counts in held.values())
        assert sum(established) == CONNECTIONS
        # A fair coin gives one worker fewer than 12 of 64 about once in a hundred million.
        assert established[0] >= 12, held
    # No worker was taken for hung while it started (on a busy machine, past uvicorn's 5 s).
    assert "died" not in server.log.read_text()


def test_the_supervisor_waits_for_a_slow_worker_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    class Supervisor:
        def __init__(self, config: uvicorn.Config, sockets: list[socket.socket]) -> None:
            seen.append(config.timeout_worker_healthcheck)

        def run(self) -> None:
            pass

    monkeypatch.setattr(workers, "Multiprocess", Supervisor)
    workers.serve_workers(uvicorn.Config("app.main:create_app", port=free_port(), workers=2))
    assert seen == [workers.WORKER_HEALTH_SECONDS] and seen[0] >= 30


def replaced(server: ServerProcess, port: int, before: set[int]) -> bool:
    """Whether two workers listen and the killed one (the lowest pid of `before`) is not one."""
    held = sockets_by_worker(server, port)
    listening = {pid for pid, counts in held.items() if counts[LISTEN] == 1}
    return len(listening) == 2 and listening != before and min(before) not in held


def stacks_of_server(server: ServerProcess) -> str:
    """What each worker and the supervisor are doing, from the stacks faulthandler writes to the
    server's log as SIGABRT ends them (the server runs with PYTHONFAULTHANDLER): why a worker did
    not start."""
    for pid in [*workers_of(server), server.process.pid]:
        os.kill(pid, signal.SIGABRT)
    time.sleep(2)
    return server.log.read_text()[-6000:]


def test_a_worker_that_dies_is_replaced_on_a_socket_of_its_own(deploy: Deployment) -> None:
    with running(deploy, "--workers", "2", PYTHONFAULTHANDLER="1") as server:
        port = int(server.base.rsplit(":", 1)[1])
        before = set(wait_for_listeners(server, port, 2))
        os.kill(min(before), signal.SIGKILL)
        # The replacement is a start like the first (which may take 120 s on a busy machine);
        # it takes about 5 s beside two CPU hogs.
        deadline = time.monotonic() + 120
        while not replaced(server, port, before):
            if time.monotonic() > deadline:
                pytest.fail(f"no worker replaced {min(before)}:\n{stacks_of_server(server)}")
            time.sleep(0.2)
        for _ in range(8):  # new connections each: the kernel hashes them over both sockets
            assert httpx.get(f"{server.base}{VERSIONS}", timeout=30).status_code == 200


def test_a_port_in_use_fails_at_once(deploy: Deployment) -> None:
    port = free_port()
    taken = socket.socket()  # without SO_REUSEPORT: no one may share it
    taken.bind(("127.0.0.1", port))
    taken.listen()
    try:
        finished = subprocess.run(
            [LOCALFORCE, "serve", "--workers", "2"],
            env=deploy.env(port),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        taken.close()
    assert finished.returncode == 3  # uvicorn's startup failure
    assert f"cannot listen on 127.0.0.1:{port}" in finished.stdout + finished.stderr


def test_reuse_port_sockets_share_a_port() -> None:
    first = reuse_port_socket("127.0.0.1", 0)
    port = first.getsockname()[1]
    second = reuse_port_socket("127.0.0.1", port)
    assert second.getsockname() == ("127.0.0.1", port)
    for sock in (first, second):
        sock.close()
