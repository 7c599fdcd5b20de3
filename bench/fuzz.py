"""Fuzz a server in its own process with generated requests (bench/fuzz_requests.py), then run
schemathesis with every check over its /openapi.json (bench/schemathesis.toml says why a 400
is accepted where it is). Prints what came back per family of request, every answer that is
not a Salesforce answer (a 5xx, a body that is neither a result nor an error array, a wrong
Content-Type, over 2 s), the server log's tracebacks, and RSS after each tenth of the run
(the caches of compiled statements filled first, so that growth means a leak).

Run: `make fuzz` (or `python -m bench.fuzz [--requests N] [--clients N] [--no-schemathesis]`).
Each client is its own process running hypothesis over one keep-alive connection; exits 1 when
anything failed.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import given

from app.config import Settings
from app.metadata.model import SObjectDef
from app.sandbox.schemas import Schemas
from bench.fuzz_requests import API, Call, Response, calls, run_settings, send
from bench.server import seeded_data_dir
from bench.soak import rss_mb
from tests.conftest import ADMIN_HEADERS, TEST_ADMIN_KEY
from tests.processes import Deployment, running

JSON_TYPE = "application/json;charset=UTF-8"
SLOW_SECONDS = 2.0
KEEP_SLOWEST = 8
ORG = "original"
SCHEMATHESIS_CONFIG = Path(__file__).with_name("schemathesis.toml")


# Paths whose refusals Salesforce writes in plain text, not JSON: the identity service's
# (Bad_OAuth_Token, Missing_OAuth_Token, Bad_Id, all 403).
PLAIN_TEXT_REFUSALS = ("/id/", "/services/oauth2/userinfo")


def judge(call: Call, response: Response) -> str | None:
    """Why this answer is not one Salesforce gives, or None."""
    if response.status_code >= 500:
        return f"{response.status_code} {response.text[:160]}"
    if call.path.startswith(PLAIN_TEXT_REFUSALS) and response.status_code == 403:
        plain = response.headers.get("content-type", "").startswith("text/plain")
        return None if plain else f"403 as {response.headers.get('content-type')!r}"
    if not response.content:
        return None if response.status_code in (200, 204, 304) or call.method == "HEAD" else (
            f"{response.status_code} with no body"
        )  # fmt: skip
    if response.headers.get("content-type") != JSON_TYPE:
        return f"Content-Type {response.headers.get('content-type')!r}"
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code} body is not JSON: {response.text[:120]!r}"
    if call.family == "composite tree" and _is_tree_failure(body):
        return None  # a tree refused record by record answers 400 with its own results shape
    if response.status_code >= 400 and not _is_error_array(body):
        return f"{response.status_code} body is not an error array: {response.text[:160]}"
    return None


def _is_tree_failure(body: Any) -> bool:
    return isinstance(body, dict) and body.get("hasErrors") is True and "results" in body


def _is_error_array(body: Any) -> bool:
    return (
        isinstance(body, list)
        and bool(body)
        and all(
            isinstance(item, dict)
            and isinstance(item.get("message"), str)
            and isinstance(item.get("errorCode"), str)
            for item in body
        )
    )


def error_code(response: Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return "-"
    return str(body[0]["errorCode"]) if _is_error_array(body) else "-"


@dataclass
class Tally:
    """One client's results, sent back to the parent when its share is done."""

    answers: Counter[str] = field(default_factory=Counter)  # "family status errorCode"
    failures: dict[str, str] = field(default_factory=dict)  # reason -> first request
    slow: int = 0
    latencies: list[float] = field(default_factory=list)
    slowest: list[tuple[float, Call]] = field(default_factory=list)  # the slowest first
    longest_collection: float = 0.0  # seconds: the client's own longest garbage collection

    def timed(self, seconds: float, call: Call) -> None:
        self.latencies.append(seconds)
        self.keep_slow(seconds, call)

    def keep_slow(self, seconds: float, call: Call) -> None:
        if len(self.slowest) < KEEP_SLOWEST or seconds > self.slowest[-1][0]:
            self.slowest.append((seconds, call))
            self.slowest.sort(key=lambda entry: -entry[0])
            del self.slowest[KEEP_SLOWEST:]

    def add(self, part: Tally) -> None:
        self.answers.update(part.answers)
        for reason, example in part.failures.items():
            self.failures.setdefault(reason, example)
        self.slow += part.slow
        self.latencies.extend(part.latencies)
        self.longest_collection = max(self.longest_collection, part.longest_collection)
        for seconds, call in part.slowest:
            self.keep_slow(seconds, call)


class CollectionTimer:
    """Times this process's garbage collections (a `gc.callbacks` entry); keeps the longest."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest = max(self.longest, time.perf_counter() - self._started)


@contextmanager
def collections_deferred() -> Iterator[None]:
    """The client's own garbage collections wait until its answer is timed: hypothesis's heap
    grows over a long run, and a collection of it in the middle of a request would count as
    the server's latency (the report prints the client's longest)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def run_client(base: str, token: str, requests: int) -> Tally:
    objects = list(Schemas(Settings().seed_dir)(ORG).registry)
    headers = {"Authorization": f"Bearer {token}"}
    tally = Tally()
    timer = CollectionTimer()
    gc.callbacks.append(timer)
    with httpx.Client(base_url=base, timeout=30) as client:

        @run_settings(requests)
        @given(call=calls(objects, headers))
        def fuzz(call: Call) -> None:
            with collections_deferred():
                started = time.perf_counter()
                try:
                    response = send(client, call)
                except httpx.HTTPError as error:
                    reason = f"transport: {type(error).__name__}"
                    tally.failures.setdefault(f"{call.family}: {reason}", _show(call))
                    return
                seconds = time.perf_counter() - started
            if response is None:
                tally.answers[f"{call.family} unsent -"] += 1
                return
            tally.timed(seconds, call)
            if seconds > SLOW_SECONDS:
                tally.slow += 1
                tally.failures.setdefault(f"{call.family}: over {SLOW_SECONDS:g} s", _show(call))
            tally.answers[f"{call.family} {response.status_code} {error_code(response)}"] += 1
            wrong = judge(call, response)
            if wrong is not None:
                tally.failures.setdefault(f"{call.family}: {wrong}", _show(call))

        fuzz()
    gc.callbacks.remove(timer)
    tally.longest_collection = timer.longest
    return tally


def _show(call: Call) -> str:
    body = (call.body or b"")[:200]
    return f"{call.method} {call.path[:300]} {body!r}"


# Distinct valid statements that fill every bounded cache of compiled statements (ours and
# SQLAlchemy's) before memory is measured: the fuzz's own valid queries are too few to.
# Ours are keyed by the query's text, so these differ in a literal; SQLAlchemy's by the
# statement's shape, so `shapes` below differ in a field or a clause.
WARM_UP = [
    *(f"/query?q=SELECT+Id+FROM+Account+WHERE+Name+%3D+%27warm{n}%27" for n in range(1200)),
    *(f"/search?q=FIND+%7Bwarm{n}%7D" for n in range(60)),
    *(f"/search?q=FIND+%7Bwarm{n}%7D+RETURNING+Account%28Name%29" for n in range(600)),
    *(f"/parameterizedSearch?q=warm{n}&sobject=Contact" for n in range(600)),
]


def shapes(objects: list[SObjectDef]) -> list[str]:
    """A few statements per field of every object, each of its own shape (over 1,000 on the
    original org, past the 750 at which SQLAlchemy's cache of each engine starts to prune)."""
    paths = []
    for sobject in objects:
        for name in (definition.name for definition in sobject.fields):
            queries = [
                f"SELECT Id, {name} FROM {sobject.name} LIMIT 1",
                f"SELECT Id FROM {sobject.name} WHERE {name} != null LIMIT 1",
                f"SELECT Id FROM {sobject.name} ORDER BY {name} LIMIT 1",
                f"SELECT Id FROM {sobject.name} ORDER BY {name} DESC LIMIT 1",
            ]
            paths += [f"/query?q={quote(query)}" for query in queries]
            paths.append(f"/search?q={quote(f'FIND {{warm}} RETURNING {sobject.name}({name})')}")
    return paths


def warm_up(base: str, token: str) -> None:
    objects = list(Schemas(Settings().seed_dir)(ORG).registry)
    with httpx.Client(base_url=f"{base}{API}", timeout=60) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        for path in WARM_UP:
            client.get(path).raise_for_status()
        # A field that cannot be filtered or sorted answers 400 before it is compiled.
        answered = Counter(client.get(path).status_code for path in shapes(objects))
        print(f"warm-up: {len(WARM_UP):,} statements, then field shapes {dict(answered)}")
        if answered[200] < 750:
            raise RuntimeError("the warm-up filled too few shapes to fill SQLAlchemy's caches")


def fuzz(base: str, pid: int, requests: int, clients: int, token: str) -> bool:
    share = requests // clients
    warm_up(base, token)
    rss: list[float] = [rss_mb(pid)]
    started = time.perf_counter()
    total = Tally()
    rounds = 10
    with multiprocessing.get_context("spawn").Pool(clients) as pool:
        for tenth in range(rounds):
            jobs = [
                pool.apply_async(run_client, (base, token, share // rounds)) for _ in range(clients)
            ]
            for job in jobs:
                total.add(job.get())
            rss.append(rss_mb(pid))
            done = sum(total.answers.values())
            print(f"  {tenth + 1}/10: {done:,} answers, RSS {rss[-1]:.0f} MB", flush=True)
    seconds = time.perf_counter() - started
    sent = sum(total.answers.values())
    latencies = sorted(total.latencies)
    print(f"\n{sent:,} generated requests in {seconds:.0f} s ({sent / seconds:.0f}/s)")
    families: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    for key, count in total.answers.items():
        family, status, _ = key.rsplit(" ", 2)
        families[family] += count
        statuses[status] += count
    print("by family: " + ", ".join(f"{name} {n:,}" for name, n in sorted(families.items())))
    print("by status: " + ", ".join(f"{status} {n:,}" for status, n in sorted(statuses.items())))
    top = Counter({key: n for key, n in total.answers.items() if " 200 " not in key})
    print("most frequent errors: " + "; ".join(f"{k} {n:,}" for k, n in top.most_common(12)))
    print(
        f"latency p50 {latencies[len(latencies) // 2] * 1000:.1f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms; over {SLOW_SECONDS:g} s: {total.slow} "
        f"(a client's own longest garbage collection, not counted: "
        f"{total.longest_collection * 1000:.0f} ms)"
    )
    report_slowest(base, total.slowest)
    print(
        f"RSS after the first tenth {rss[1]:.0f} MB, at the end {rss[-1]:.0f} MB "
        f"({(rss[-1] / rss[1] - 1) * 100:+.1f}%); each tenth: "
        + " ".join(f"{mb:.0f}" for mb in rss)
    )
    failures = total.failures
    print(f"answers that are not Salesforce answers: {len(failures)} distinct")
    for reason, example in sorted(failures.items())[:40]:
        print(f"  {reason}\n      {example}")
    return not failures and rss[-1] <= rss[1] * 1.10


def report_slowest(base: str, slowest: list[tuple[float, Call]]) -> None:
    """The slowest answers, each sent again alone (best of three): an answer slow only under
    load waited for the other clients' requests; one slow alone is slow itself."""
    print("slowest answers (under load, then alone):")
    with httpx.Client(base_url=base, timeout=60) as client:
        for seconds, call in slowest:
            alone = []
            for _ in range(3):
                started = time.perf_counter()
                send(client, call)
                alone.append(time.perf_counter() - started)
            print(f"  {seconds * 1000:6.0f} ms, {min(alone) * 1000:6.0f} ms  {_show(call)[:240]}")


def log_tracebacks(log: Path) -> int:
    text = log.read_text(errors="replace")
    return text.count("Traceback (most recent call last)")


def run_schemathesis(base: str, token: str, max_examples: int) -> bool:
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file", str(SCHEMATHESIS_CONFIG),
        "--no-color",
        "run", f"{base}/openapi.json",
        "--checks", "all",
        "--header", f"Authorization: Bearer {token}",
        "--header", f"X-Localforce-Admin-Key: {TEST_ADMIN_KEY}",  # so the control plane opens
        "--max-examples", str(max_examples),
        "--workers", "1",
        "--seed", "20261201",
    ]  # fmt: skip
    print("\n$ schemathesis run --checks all --max-examples", max_examples, f"{base}/openapi.json")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    summary = output[output.rfind("SUMMARY") :] if "SUMMARY" in output else output[-3000:]
    print(summary)
    if done.returncode != 0:
        print(output[-12000:])
    return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--schemathesis-examples", type=int, default=200)
    parser.add_argument("--no-schemathesis", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        data_dir = seeded_data_dir(Path(workdir))
        with running(Deployment(data_dir, "")) as server:
            # The first sandbox of a template builds it: seconds, not the default 5 s timeout.
            made = httpx.post(
                f"{server.base}/__localforce/sandboxes",
                json={"id": "fuzz"},
                headers=ADMIN_HEADERS,
                timeout=300,
            )
            made.raise_for_status()
            token = made.json()["access_token"]
            good = fuzz(server.base, server.process.pid, args.requests, args.clients, token)
            if not args.no_schemathesis:
                good = run_schemathesis(server.base, token, args.schemathesis_examples) and good
            tracebacks = log_tracebacks(server.log)
            print(f"tracebacks in the server log: {tracebacks}")
            if tracebacks:
                print(server.log.read_text(errors="replace")[-6000:])
        shutil.rmtree(data_dir, ignore_errors=True)
    sys.exit(0 if good and not tracebacks else 1)


if __name__ == "__main__":
    # The clients import the test helpers, whose TestClient import warns; keep the report clean.
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    main()
