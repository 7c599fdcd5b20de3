"""Past one machine: three API hosts and a balancer host, each a network namespace of this
machine (tests/hosts.py), the balancer HAProxy from Debian's packages with the configuration
docker-compose.yml gives its `lb` service (deploy/haproxy.cfg), and one PostgreSQL database
that the hosts reach over its Unix socket. 256 episodes run at once through the balancer with
localforce-client; halfway through, one API host dies (its processes killed, its link down).

Every episode must end finished (its answer graded and kept) or cleanly failed (a start whose
answer was lost: the episode is ended unanswered, and another started in its place); every
result is kept once; and no episode ever reads another's records.

Runs in `make hosts` (CI runs it after the gate): three servers and a balancer to start, and
root for the namespaces."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import yaml
from localforce import AsyncControl, AsyncOrg, Unanswered
from sqlalchemy import create_engine, make_url, text

from app.config import REPO_ROOT
from tests.conftest import TEST_ADMIN_KEY
from tests.databases import postgres_admin_url
from tests.hosts import Host, can_make_hosts, hosts

pytestmark = [pytest.mark.hosts, pytest.mark.postgres]

EPISODES = 256
PORT = 8000
RUN = "multi-host"
MARK = "mh-"
STARTS = 3  # a lost start is replaced this many times at most


def api_names() -> list[str]:
    """The API hosts docker-compose.yml runs behind its balancer."""
    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    return sorted(
        name for name in compose["services"] if name.startswith("api") and name[3:].isdigit()
    )


def balancer_config(addresses: dict[str, str], stats: Path) -> str:
    """deploy/haproxy.cfg with each API host's name replaced by its address (as Docker's DNS
    resolves it), and a stats socket for the test to read the hosts' states."""
    config = (REPO_ROOT / "deploy" / "haproxy.cfg").read_text()
    for name, address in addresses.items():
        assert f" {name}:{PORT} " in config, f"the balancer does not send to {name}"
        config = config.replace(f" {name}:{PORT} ", f" {address}:{PORT} ")
    return config.replace("global\n", f"global\n    stats socket {stats} mode 600 level admin\n", 1)


def socket_url(url: str) -> str:
    """The database URL over PostgreSQL's Unix socket: the hosts' own network reaches no
    127.0.0.1 of this machine."""
    engine = create_engine(postgres_admin_url())
    with engine.connect() as conn:
        directory = conn.execute(text("SHOW unix_socket_directories")).scalar_one()
    engine.dispose()
    first = str(directory).split(",")[0].strip()
    parsed = make_url(url)
    return parsed.set(host=None, port=None, query={"host": first}).render_as_string(
        hide_password=False
    )


def server_stats(stats: Path) -> dict[str, dict[str, str]]:
    """HAProxy's `show stat` of the API hosts, by server name."""
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(stats))
        conn.sendall(b"show stat\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    header, *rows = data.decode().strip().splitlines()
    names = header.lstrip("# ").split(",")
    listed = [dict(zip(names, row.split(","), strict=False)) for row in rows]
    return {row["svname"]: row for row in listed if row["pxname"] == "api"}


def wait_until(check: Callable[[], bool], what: str, host: Host, log: Path) -> None:
    """Until `check` holds (a few minutes at most, and while the host's process lives)."""
    deadline = time.monotonic() + 240
    while True:
        assert host.processes[-1].poll() is None, f"{what}: it exited\n{log.read_text()[-3000:]}"
        try:
            if check():
                return
        except (OSError, httpx.HTTPError):
            pass
        assert time.monotonic() < deadline, f"{what}\n{log.read_text()[-3000:]}"
        time.sleep(0.3)


def tracebacks(logs: list[Path]) -> str:
    """The tracebacks the hosts logged: what a failed run shows beside its errors."""
    found = []
    for log in logs:
        text = log.read_text(errors="replace") if log.exists() else ""
        found += [f"{log.name}: Traceback{part[:3000]}" for part in text.split("Traceback")[1:]]
    return "\n".join(found[:5])


def serving(url: str) -> Callable[[], bool]:
    return lambda: httpx.get(f"{url}/services/data", timeout=2).is_success


@dataclass
class Tally:
    """What the episodes saw, and whether the host was killed yet."""

    written: int = 0
    killed: asyncio.Event = field(default_factory=asyncio.Event)
    foreign: list[tuple[str, str]] = field(default_factory=list)  # (episode, name it saw)
    finished: dict[str, float] = field(default_factory=dict)  # episode: reward
    answered_calls: Counter[str] = field(default_factory=Counter)  # REST calls answered
    lost_starts: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # episode: why


def task_row(index: int, marker: str) -> dict[str, object]:
    return {
        "idx": index,
        "task": "top_issue_identification",
        "query": "Name the account this episode made.",
        "reward_metric": "exact_match",
        "metadata": {"required": "", "optional": ""},
        "answer": marker,
    }


async def one_episode(url: str, control: AsyncControl, index: int, tally: Tally) -> None:
    """A start (a lost one replaced), a write settled by a read if its answer was lost,
    reads that check no other episode's record shows, then the answer."""
    made = None
    for attempt in range(STARTS):
        episode_id = f"{MARK}{index:03d}-{attempt}"
        try:
            made = await control.start_episode(task_row(index, episode_id), id=episode_id, run=RUN)
            break
        except Unanswered:
            tally.lost_starts.append(episode_id)
    if made is None:
        tally.failed[f"{MARK}{index:03d}"] = "every start was lost"
        return
    episode_id = made["id"]
    soql = f"SELECT Name FROM Account WHERE Name LIKE '{MARK}%'"
    async with AsyncOrg(url, made["access_token"], timeout=120) as org:
        with contextlib.suppress(Unanswered):  # the read below says whether it landed
            await org.create("Account", {"Name": episode_id})
            tally.answered_calls[episode_id] += 1
        for step in range(8):
            names = {row["Name"] for row in (await org.query(soql))["records"]}
            tally.answered_calls[episode_id] += 1
            tally.foreign += [(episode_id, name) for name in names - {episode_id}]
            if episode_id not in names:  # the write's answer was lost and it never landed
                await org.create("Account", {"Name": episode_id})
                tally.answered_calls[episode_id] += 1
            if step == 0:
                tally.written += 1
            await asyncio.sleep(0.05)
    answered = await control.answer(episode_id, episode_id)
    tally.finished[episode_id] = answered["reward"]


async def drive(url: str, victim: Host, logs: list[Path]) -> Tally:
    tally = Tally()

    async def kill_when_half_written() -> None:
        while tally.written < EPISODES // 2:
            await asyncio.sleep(0.02)
        victim.kill()
        tally.killed.set()

    async with AsyncControl(url, TEST_ADMIN_KEY, timeout=300) as control:
        killer = asyncio.create_task(kill_when_half_written())
        outcomes = await asyncio.gather(
            *(one_episode(url, control, index, tally) for index in range(EPISODES)),
            return_exceptions=True,
        )
        errors = [repr(outcome) for outcome in outcomes if isinstance(outcome, BaseException)]
        assert not errors, f"{errors[:5]}\n{tracebacks(logs)}"
        assert killer.done(), "the host was never killed: the run ended first"
    return tally


def test_episodes_survive_a_host_lost_behind_the_balancer(
    tmp_path: Path, postgres_database: str
) -> None:
    why_not = can_make_hosts()
    if why_not is not None or shutil.which("haproxy") is None:
        pytest.skip(why_not or "HAProxy is not installed (make haproxy)")
    names = api_names()
    assert len(names) == 3
    server = Path(sys.executable).parent / "localforce"
    env = {key: value for key, value in os.environ.items() if not key.startswith("LOCALFORCE_")}
    with hosts(len(names) + 1) as (balancer, *apis):
        addresses = {name: host.address for name, host in zip(names, apis, strict=True)}
        for name, host in zip(names, apis, strict=True):
            # The API service's environment in docker-compose.yml, one worker each (three
            # hosts on this machine's two cores); they start at once, as compose starts them.
            host.start(
                [str(server), "serve"],
                {
                    **env,
                    "LOCALFORCE_DATABASE_URL": socket_url(postgres_database),
                    "LOCALFORCE_ADMIN_KEY": TEST_ADMIN_KEY,
                    "LOCALFORCE_WORKERS": "1",
                    "LOCALFORCE_HOST": host.address,
                    "LOCALFORCE_PORT": str(PORT),
                    "LOCALFORCE_DATA_DIR": str(tmp_path / name),
                },
                tmp_path / f"{name}.log",
            )
        for name, host in zip(names, apis, strict=True):
            wait_until(
                serving(f"http://{host.address}:{PORT}"),
                f"{name} did not start",
                host,
                tmp_path / f"{name}.log",
            )
        stats = tmp_path / "haproxy.sock"
        config = tmp_path / "haproxy.cfg"
        config.write_text(balancer_config(addresses, stats))
        haproxy = shutil.which("haproxy") or "haproxy"
        balancer.start([haproxy, "-db", "-f", str(config)], env, tmp_path / "haproxy.log")
        url = f"http://{balancer.address}:{PORT}"
        wait_until(
            lambda: all(row["status"] == "UP" for row in server_stats(stats).values()),
            "the balancer did not see every host up",
            balancer,
            tmp_path / "haproxy.log",
        )

        victim = apis[1]
        started = time.monotonic()
        logs = [tmp_path / f"{name}.log" for name in names]
        tally = asyncio.run(drive(url, victim, logs))
        elapsed = time.monotonic() - started

        served = server_stats(stats)
        backend = served.pop("BACKEND")
        served.pop("FRONTEND", None)
        assert served[names[1]]["status"].startswith("DOWN")
        assert all(int(row["stot"]) > 0 for row in served.values()), served
        with httpx.Client(base_url=url, headers={"X-Localforce-Admin-Key": TEST_ADMIN_KEY}) as http:
            results = http.get("/__localforce/results", params={"run": RUN}).json()["results"]

    victim_row = served[names[1]]
    # A host writes its call log in batches (every 50 ms): one that dies loses its last
    # batch, calls its clients had their answers to.
    logged = {row["episode"]: len(row["calls"]) for row in results}
    lost_calls = sum(
        max(0, sent - logged[episode]) for episode, sent in tally.answered_calls.items()
    )
    print(  # noqa: T201 (the run's figures: make hosts shows them)
        f"\n{EPISODES} episodes through the balancer in {elapsed:.1f} s, {names[1]} killed "
        f"after {EPISODES // 2} had written: {len(tally.finished)} finished, "
        f"{len(tally.lost_starts)} starts lost and replaced; requests per host "
        + ", ".join(f"{name} {row['stot']}" for name, row in served.items())
        + f"; the balancer's 5xx answers {backend['hrsp_5xx']}, its retries "
        f"{backend['wretr']} and redispatches {backend['wredis']}; {names[1]} "
        f"{victim_row['status']} after {victim_row['chkfail']} failed checks; calls answered "
        f"but not in their episode's log (the dead host's unwritten batch): {lost_calls}"
    )
    assert tally.foreign == []
    assert tally.failed == {}
    assert len(tally.finished) == EPISODES
    assert set(tally.finished.values()) == {1.0}
    kept = [row["episode"] for row in results]
    assert len(kept) == len(set(kept)), "a result was kept twice"
    answered = {row["episode"]: row for row in results if row["answered_at"] is not None}
    assert set(answered) == set(tally.finished)
    assert all(row["answer"] == episode for episode, row in answered.items())
    unanswered = set(kept) - set(answered)
    assert unanswered <= set(tally.lost_starts)
