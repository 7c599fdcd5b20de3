"""Episodes at scale: N agents at once, each in an episode of its own (reset, three SOQL tool
calls, submit_answer, close), against `localforce serve` in a process of its own (2 workers),
through MCP (the client distribution's AsyncEnv: JSON-RPC over HTTP, one connection per agent)
and through OpenEnv (a WebSocket session per agent).

Printed per interface and count: errors (a call that raised, or a tool error: every call is
valid), step latency p50 and p99 (a tool call; reset and close apart), episodes per second,
and the server's RSS growth per live session (RSS of the server and its workers with every
agent between reset and answer, less RSS before). Then the largest count whose p99 step is
under 1 s. The floor, measured in the same run: one REST query with an episode's token (the
first of the three), one at a time; `x_floor_p50` is the p50 step over it, the three queries
through each client's whole stack (bench/agents_bench.py times one call against the REST call
it wraps).

Each back end is served in turn: SQLite (the data directory's files) and PostgreSQL (a database
of its own on 127.0.0.1:5432, dropped at the end).

Run: `python -m bench.episodes_at_scale [--counts 64,256,1024] [--interfaces mcp,openenv]
[--backends sqlite,postgresql]`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import localforce
from openenv.core.env_server.mcp_types import CallToolAction

from app.agents.openenv_client import LocalforceEnvClient
from bench.agents_bench import TASK  # a task row of the benches' own: calls, not grading
from bench.server import API, bench_database, seeded_data_dir
from tests.conftest import TEST_ADMIN_KEY
from tests.processes import Deployment, ServerProcess

QUERIES = (
    "SELECT Id, Subject, Status FROM Case ORDER BY CreatedDate DESC LIMIT 20",
    "SELECT Id, Name FROM Issue__c",
    "SELECT COUNT() FROM Account",
)
P99_BOUND_MS = 1000.0


@dataclass
class Figures:
    steps: list[float] = field(default_factory=list)  # ms
    resets: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    rss_per_session_mb: float = 0.0


async def timed(into: list[float], call: Awaitable[Any]) -> Any:
    started = time.perf_counter()
    try:
        return await call
    finally:
        into.append((time.perf_counter() - started) * 1000)


def server_rss_mb(server: ServerProcess) -> float:
    """The RSS of the server and its worker processes, in MB."""
    pids = [server.process.pid]
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
    if children.exists():
        pids += [int(pid) for pid in children.read_text().split()]
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


class Barrier:
    """Every agent waits here between its steps and its answer, so that all N sessions are
    live at once when RSS is read."""

    runs = itertools.count()

    def __init__(self, count: int) -> None:
        self.count = count
        self.run = next(self.runs)  # episode ids are unique across the runs of a bench
        self.arrived = 0
        self.all_here = asyncio.Event()
        self.go = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived == self.count:
            self.all_here.set()
        await self.go.wait()


async def mcp_agent(url: str, n: int, figures: Figures, barrier: Barrier) -> None:
    env = localforce.make_async(url, admin_key=TEST_ADMIN_KEY, run="scale-mcp")
    try:
        await timed(figures.resets, env.reset(task=0, episode_id=f"scale-mcp-{barrier.run}-{n}"))
        for query in QUERIES:
            call = {"name": "soql_query", "arguments": {"query": query}}
            step = await timed(figures.steps, env.step(call))
            if step.info["is_error"]:
                figures.errors.append(step.observation[:200])
        await barrier.wait()
        done = await env.step({"name": "submit_answer", "arguments": {"response": "none"}})
        if not done.terminated:
            figures.errors.append(done.observation[:200])
    except Exception as error:  # counted, and the run goes on
        figures.errors.append(f"{type(error).__name__}: {error}"[:200])
    finally:
        await env.aclose()


async def openenv_agent(url: str, n: int, figures: Figures, barrier: Barrier) -> None:
    client = LocalforceEnvClient(
        base_url=f"{url}/openenv", admin_key=TEST_ADMIN_KEY, message_timeout_s=600
    )
    try:
        async with client as env:
            await timed(
                figures.resets, env.reset(task=TASK, episode_id=f"scale-oe-{barrier.run}-{n}")
            )
            for query in QUERIES:
                action = CallToolAction(tool_name="soql_query", arguments={"query": query})
                result = await timed(figures.steps, env.step(action))
                error = getattr(result.observation, "error", None)
                if error is not None:
                    figures.errors.append(str(error)[:200])
            await barrier.wait()
            await env.call_tool("submit_answer", response="none")
    except Exception as error:
        figures.errors.append(f"{type(error).__name__}: {error}"[:200])


Agent = Callable[[str, int, Figures, Barrier], Coroutine[Any, Any, None]]
INTERFACES: dict[str, Agent] = {"mcp": mcp_agent, "openenv": openenv_agent}


async def run_count(server: ServerProcess, agent: Agent, count: int) -> Figures:
    figures = Figures()
    barrier = Barrier(count)
    before = server_rss_mb(server)
    started = time.perf_counter()
    agents = [asyncio.create_task(agent(server.base, n, figures, barrier)) for n in range(count)]
    # An agent that failed before the barrier never reaches it: wait for the rest.
    while not barrier.all_here.is_set():
        if all(task.done() for task in agents) or barrier.arrived + len(figures.errors) >= count:
            break
        await asyncio.sleep(0.05)
    figures.rss_per_session_mb = (server_rss_mb(server) - before) / count
    barrier.go.set()
    await asyncio.gather(*agents)
    figures.seconds = time.perf_counter() - started
    return figures


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


async def floor_ms(url: str, repeat: int = 50) -> float:
    """One REST query with an episode's token, one at a time: the median."""
    async with localforce.AsyncControl(url, TEST_ADMIN_KEY) as control:
        made = await control.start_episode(TASK, id="scale-floor")
    async with httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {made['access_token']}"}
    ) as http:
        samples = []
        for round_ in range(repeat + 5):
            started = time.perf_counter()
            response = await http.get(f"{API}/query", params={"q": QUERIES[0]})
            response.raise_for_status()
            if round_ >= 5:
                samples.append((time.perf_counter() - started) * 1000)
    async with localforce.AsyncControl(url, TEST_ADMIN_KEY) as control:
        await control.end_episode("scale-floor")
    return statistics.median(samples)


async def main(counts: list[int], interfaces: list[str], backends: list[str]) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket per agent
    for backend in backends:
        with (
            tempfile.TemporaryDirectory(prefix="localforce-scale-") as workdir,
            bench_database(backend) as database_url,
        ):
            deploy = Deployment(seeded_data_dir(Path(workdir), database_url), database_url)
            server = deploy.start(
                LOCALFORCE_WORKERS="2",
                LOCALFORCE_MAX_SANDBOXES="20000",
                LOCALFORCE_OPENENV_MAX_SESSIONS="4096",
                LOCALFORCE_TASK_FILE=str(_task_file(Path(workdir))),
            )
            try:
                await bench_server(server, backend, counts, interfaces)
            finally:
                server.stop()


async def bench_server(
    server: ServerProcess, backend: str, counts: list[int], interfaces: list[str]
) -> None:
    floor = await floor_ms(server.base)
    print(f"{backend}: floor: one REST query, one at a time: {floor:.2f} ms")
    for name in interfaces:
        largest = 0
        await run_count(server, INTERFACES[name], 2)  # warm: imports, templates, pools
        for count in counts:
            figures = await run_count(server, INTERFACES[name], count)
            p50, p99 = percentile(figures.steps, 0.5), percentile(figures.steps, 0.99)
            if p99 < P99_BOUND_MS and not figures.errors:
                largest = count
            row = {
                "backend": backend,
                "interface": name,
                "episodes": count,
                "errors": len(figures.errors),
                "step_p50_ms": round(p50, 1),
                "step_p99_ms": round(p99, 1),
                "reset_p99_ms": round(percentile(figures.resets, 0.99), 1),
                "episodes_per_s": round(count / figures.seconds, 1),
                "rss_per_session_mb": round(figures.rss_per_session_mb, 2),
                "x_floor_p50": round(p50 / floor, 2),
            }
            print(json.dumps(row), flush=True)
            for error in sorted(set(figures.errors))[:5]:
                print(f"  error: {error}")
        bound = "the largest count with p99 step under 1 s and no error"
        print(f"{backend}, {name}: {bound}: {largest}")


def _task_file(workdir: Path) -> Path:
    path = workdir / "tasks.json"
    path.write_text(json.dumps([TASK]), encoding="utf-8")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,64,256,1024")
    parser.add_argument("--interfaces", default="mcp,openenv")
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    counts = [int(n) for n in args.counts.split(",")]
    asyncio.run(main(counts, args.interfaces.split(","), args.backends.split(",")))
