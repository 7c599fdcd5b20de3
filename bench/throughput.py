"""Throughput: requests per second and p50/p90/p99 latency at concurrency 1, 16 and 64, against
`localforce serve` in a process of its own, beside the floor (`bench.floor`, the same stack and
worker count over the same database) in the same run, with 1 and 2 uvicorn workers.

localforce answers: an authenticated trivial request (`GET /limits`), two CRMArena tool
queries, a child-subquery query, an aggregate query, a SOSL search, a create and an update,
with every client in its own sandbox ("own") and with all clients in one ("one"). The floor
answers its hello and the same four queries (same compiled SQL, same pages). The ratios printed
at the end are localforce / floor in requests per second, and 2 workers / 1 worker.

The load generator is `bench.loadgen`: a process of its own (uvloop, one keep-alive HTTP/1.1
connection per client, requests prepared as bytes, httptools parsing the responses), so on
two cores it takes one and leaves the server the other.

Run: `make bench` (quick) or `python -m bench.throughput [--quick] [--backend B] [--seconds S]`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import httpx

from app.config import REPO_ROOT
from bench.loadgen import Load, Measured, load_process, raw_request, run_load
from bench.query_latency import ANALYST_QUERIES
from bench.search_latency import PRODUCT_TOOL
from bench.server import API, seeded_data_dir
from tests.conftest import ADMIN_HEADERS
from tests.databases import DatabaseFactory, postgres_available
from tests.processes import Deployment, ServerProcess
from tests.servers import free_port

CONTROL = "/__localforce/sandboxes"
CONCURRENCY = (1, 16, 64)
WORKERS = (1, 2)
QUERIES = {
    "tool: get_issues": "SELECT Id, Name FROM Issue__c",
    "tool: get_cases_single_values": (
        "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE "
        "IssueId__c = '{issue}' AND Status = 'Closed'"
    ),
    "subquery: accounts with latest cases": ANALYST_QUERIES["subquery: accounts with latest cases"],
    "aggregate: cases by status and priority": ANALYST_QUERIES[
        "aggregate: cases by status and priority"
    ],
}
SEARCH = PRODUCT_TOOL.format(term="racing suit")
JSON_HEADERS = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Client:
    """What one load client sends with: its token and the Contact it updates."""

    token: str
    contact: str


def requests_for(scenario: str, client: Client, queries: dict[str, str]) -> list[bytes]:
    auth = {"Authorization": f"Bearer {client.token}"}
    if scenario == "trivial":
        return [raw_request("GET", f"{API}/limits", auth)]
    if scenario in queries:
        return [raw_request("GET", f"{API}/query?" + urlencode({"q": queries[scenario]}), auth)]
    if scenario == "sosl: products racing suit":
        return [raw_request("GET", f"{API}/search?" + urlencode({"q": SEARCH}), auth)]
    if scenario == "create: Contact":
        body = json.dumps({"LastName": "Load", "FirstName": "Bench"}).encode()
        return [raw_request("POST", f"{API}/sobjects/Contact", {**auth, **JSON_HEADERS}, body)]
    if scenario == "update: Contact":
        path = f"{API}/sobjects/Contact/{client.contact}"
        bodies = [json.dumps({"FirstName": name}).encode() for name in ("Ada", "Grace")]
        return [raw_request("PATCH", path, {**auth, **JSON_HEADERS}, body) for body in bodies]
    raise ValueError(scenario)


def floor_requests_for(scenario: str, queries: dict[str, str]) -> list[bytes]:
    if scenario == "trivial":
        return [raw_request("GET", "/hello")]
    return [raw_request("GET", f"{API}/query?" + urlencode({"q": queries[scenario]}))]


@dataclass
class Row:
    backend: str
    workers: int
    server: str  # localforce or floor
    scenario: str
    sandboxes: str  # own, one or -
    concurrency: int
    measured: Measured


def print_row(row: Row) -> None:
    m = row.measured
    errors = f" errors {m.errors}: {m.first_error}" if m.errors else ""
    errors += f" unanswered {m.unanswered}" if m.unanswered else ""
    print(
        f"{row.backend:10} {row.workers:>2} {row.server:10} {row.scenario:40} {row.sandboxes:4} "
        f"{row.concurrency:>3} {m.per_second:>8.0f} {m.percentile(50):>7.2f} "
        f"{m.percentile(90):>7.2f} {m.percentile(99):>7.2f} "
        f"{m.cores('server'):>5.2f} {m.cores('postgres'):>5.2f} {m.cores('load'):>5.2f}{errors}",
        flush=True,
    )


@contextmanager
def floor_process(deploy: Deployment, workers: int) -> Iterator[ServerProcess]:
    port = free_port()
    log = deploy.data_dir / f"floor-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.floor", "--workers", str(workers), "--port", str(port)],
            env=deploy.env(port, LOCALFORCE_WORKERS=str(workers)),
            cwd=REPO_ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = ServerProcess(process, f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the floor exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{server.base}/hello", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the floor did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield server
    finally:
        stop(server)


def make_clients(base: str, count: int, shared: bool) -> list[Client]:
    """`count` clients, each with a sandbox of its own (or all in one), and a Contact each."""
    clients = []
    with httpx.Client(base_url=base, headers=ADMIN_HEADERS, timeout=60) as http:
        token = ""
        for n in range(count):
            if not token or not shared:
                made = http.post(CONTROL, json={})
                made.raise_for_status()
                token = made.json()["access_token"]
            created = http.post(
                f"{API}/sobjects/Contact",
                json={"LastName": f"Client{n}"},
                headers={"Authorization": f"Bearer {token}"},
            )
            created.raise_for_status()
            clients.append(Client(token, created.json()["id"]))
    return clients


def issue_id(base: str, token: str) -> str:
    with httpx.Client(base_url=base, timeout=60) as http:
        found = http.get(
            f"{API}/query",
            params={"q": "SELECT IssueId__c, COUNT(Id) FROM Case GROUP BY IssueId__c LIMIT 1"},
            headers={"Authorization": f"Bearer {token}"},
        )
        found.raise_for_status()
        return str(found.json()["records"][0]["IssueId__c"])


SCENARIOS = [
    "trivial",
    *QUERIES,
    "sosl: products racing suit",
    "create: Contact",
    "update: Contact",
]


@dataclass(frozen=True)
class Plan:
    """What one run measures: every scenario, concurrency and worker count unless narrowed."""

    seconds: float
    warmup: float
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    concurrency: tuple[int, ...] = CONCURRENCY
    workers: tuple[int, ...] = WORKERS


def bench_backend(backend: str, deploy: Deployment, plan: Plan, rows: list[Row]) -> None:
    with load_process() as pool:
        for workers in plan.workers:
            with ExitStack() as stack:
                lf = stack.enter_context(running_server(deploy, workers))
                floor = stack.enter_context(floor_process(deploy, workers))
                own = make_clients(lf.base, max(plan.concurrency), shared=False)
                one = make_clients(lf.base, max(plan.concurrency), shared=True)
                issue = issue_id(lf.base, own[0].token)
                queries = {name: soql.format(issue=issue) for name, soql in QUERIES.items()}

                def measure(
                    server: ServerProcess,
                    scenario: str,
                    mode: str,
                    load: list[list[bytes]],
                    workers: int = workers,
                    floor: ServerProcess = floor,
                ) -> None:
                    port = int(server.base.rsplit(":", 1)[1])
                    job = Load(
                        port, load, plan.seconds, plan.warmup, server_group=server.process.pid
                    )
                    measured = pool.submit(run_load, job).result()
                    name = "floor" if server is floor else "localforce"
                    row = Row(backend, workers, name, scenario, mode, len(load), measured)
                    print_row(row)
                    rows.append(row)

                for concurrency in plan.concurrency:
                    for scenario in plan.scenarios:
                        if scenario == "trivial" or scenario in queries:
                            load = [floor_requests_for(scenario, queries)] * concurrency
                            measure(floor, scenario, "-", load)
                        modes = {"own": own, "one": one} if concurrency > 1 else {"own": own}
                        for mode, clients in modes.items():
                            load = [
                                requests_for(scenario, client, queries)
                                for client in clients[:concurrency]
                            ]
                            measure(lf, scenario, mode, load)


@contextmanager
def running_server(deploy: Deployment, workers: int) -> Iterator[ServerProcess]:
    server = deploy.start(LOCALFORCE_WORKERS=str(workers), LOCALFORCE_MAX_SANDBOXES="10000")
    try:
        yield server
    finally:
        stop(server)


def stop(server: ServerProcess) -> None:
    """SIGTERM, and SIGKILL if the server is still draining stalled requests after 60 s."""
    try:
        server.stop(signal.SIGTERM)
    except subprocess.TimeoutExpired:
        server.stop(signal.SIGKILL)


def summary(rows: list[Row]) -> None:
    """The ratios the figures are read by."""
    by = {(r.backend, r.workers, r.server, r.scenario, r.sandboxes, r.concurrency): r for r in rows}

    def rps(*key: object) -> float | None:
        row = by.get(key)  # type: ignore[arg-type]
        return row.measured.per_second if row else None

    print("\nratios (requests/s)")
    for backend in sorted({r.backend for r in rows}):
        for workers in WORKERS:
            for concurrency in CONCURRENCY:
                for scenario in ["trivial", *QUERIES]:
                    floor = rps(backend, workers, "floor", scenario, "-", concurrency)
                    for mode in ("own", "one"):
                        mine = rps(backend, workers, "localforce", scenario, mode, concurrency)
                        if floor and mine:
                            print(
                                f"{backend:10} {workers} workers c{concurrency:<3} {scenario:40} "
                                f"{mode:4} localforce / floor {mine / floor:5.2f}"
                            )
        for server in ("localforce", "floor"):
            for scenario in sorted({r.scenario for r in rows if r.server == server}):
                mode = "own" if server == "localforce" else "-"
                one = rps(backend, 1, server, scenario, mode, max(CONCURRENCY))
                two = rps(backend, 2, server, scenario, mode, max(CONCURRENCY))
                if one and two:
                    print(
                        f"{backend:10} {server:10} c{max(CONCURRENCY)} {scenario:40} "
                        f"2 workers / 1 worker {two / one:5.2f}"
                    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="short windows: about 4 minutes")
    parser.add_argument("--seconds", type=float, help="the measured window of each figure")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument(
        "--scenario", action="append", choices=SCENARIOS, help="only these (repeatable)"
    )
    parser.add_argument("--concurrency", action="append", type=int, help="only these (repeatable)")
    parser.add_argument("--workers", action="append", type=int, help="only these (repeatable)")
    args = parser.parse_args()
    seconds = args.seconds or (0.6 if args.quick else 1.5)
    warmup = 0.2 if args.quick else 0.4
    plan = Plan(
        seconds,
        warmup,
        tuple(args.scenario or SCENARIOS),
        tuple(args.concurrency or CONCURRENCY),
        tuple(args.workers or WORKERS),
    )
    print(f"load: {seconds} s a figure after {warmup} s of warm-up; cores: {os.cpu_count()}")
    print(
        f"{'backend':10} {'w':>2} {'server':10} {'scenario':40} {'sbx':4} {'c':>3} "
        f"{'req/s':>8} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7} {'cores: server':>5} "
        f"{'pg':>5} {'load':>5}"
    )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as workdir:
        if args.backend in ("sqlite", "both"):
            data_dir = seeded_data_dir(Path(workdir) / "sqlite")
            bench_backend("sqlite", Deployment(data_dir, ""), plan, rows)
        if args.backend in ("postgres", "both"):
            if not postgres_available():
                print("PostgreSQL: no server reachable (LOCALFORCE_TEST_DATABASE_URL); skipped")
            else:
                factory = DatabaseFactory("postgres", Path(workdir))
                try:
                    url = factory.new_url()
                    data_dir = seeded_data_dir(Path(workdir) / "postgres", url)
                    bench_backend("postgres", Deployment(data_dir, url), plan, rows)
                finally:
                    factory.drop_all()
    summary(rows)


if __name__ == "__main__":
    main()
