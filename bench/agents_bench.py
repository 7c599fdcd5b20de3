"""What an agent interface adds to a call: one SOQL query made by an episode's agent over the
REST API (the floor: a keep-alive HTTP connection), as an MCP tool call (one MCP client
session, its calls over streamable HTTP), and as an OpenEnv step (one WebSocket session, each
step a tool call through the MCP endpoint in process, then the sandbox's diff for `state`).
Medians in milliseconds, timed in alternation, and each one's ratio to the floor.

Run: `python -m bench.agents_bench [--repeat N]` (needs the openenv extra).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from openenv.core.env_server.mcp_types import CallToolAction

from app.agents.openenv_client import LocalforceEnvClient
from bench.server import API, HttpClient, running_org
from tests.conftest import TEST_ADMIN_KEY

QUERY = "SELECT Id, Subject, Status FROM Case ORDER BY CreatedDate DESC LIMIT 20"
# A task row of its own: the bench times calls, not grading.
TASK = {
    "idx": 0,
    "task": "top_issue_identification",
    "query": "Which issue comes up most?",
    "reward_metric": "exact_match",
    "metadata": {"required": "", "optional": ""},
    "answer": "none",
}


async def timed(
    actions: dict[str, Callable[[], Awaitable[object]]], repeat: int
) -> dict[str, float]:
    """The median wall time (ms) of each action, the actions taken in turn each round."""
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for round_ in range(repeat + 3):
        for name, action in actions.items():
            started = time.perf_counter()
            await action()
            if round_ >= 3:  # the first rounds warm caches
                samples[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


async def measure(base_url: str, repeat: int) -> dict[str, float]:
    openenv = LocalforceEnvClient(base_url=f"{base_url}/openenv", admin_key=TEST_ADMIN_KEY)
    async with openenv as env:
        await env.reset(task=TASK, episode_id="bench-agents")
        # REST and MCP query a twin episode (same task, org, seed and clock): same rows.
        token = await _episode_token(base_url, "bench-agents-twin")
        rest = HttpClient(base_url, login=False)
        rest_headers = {"Authorization": f"Bearer {token}"}
        path = f"{API}/query?" + urlencode({"q": QUERY})

        async def over_rest() -> object:
            return rest.request("GET", path, headers=rest_headers)

        async with httpx2.AsyncClient(headers=rest_headers, timeout=60) as http:
            transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
            async with Client(transport) as mcp:

                async def over_mcp() -> object:
                    return await mcp.call_tool("soql_query", {"query": QUERY})

                async def over_openenv() -> object:
                    action = CallToolAction(tool_name="soql_query", arguments={"query": QUERY})
                    return await env.step(action)

                return await timed(
                    {"REST": over_rest, "MCP": over_mcp, "OpenEnv": over_openenv}, repeat
                )


async def _episode_token(base_url: str, episode_id: str) -> str:
    """A token of an episode of the same task, as the control plane's episode answer gives it:
    the OpenEnv episode's own sandbox takes only its password, which its agent never sees."""
    async with httpx2.AsyncClient(base_url=base_url, timeout=60) as http:
        response = await http.post("/__localforce/episodes", json={"id": episode_id, "task": TASK})
        response.raise_for_status()
        return str(response.json()["access_token"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir) / "data") as org:
        figures: dict[str, Any] = asyncio.run(measure(org.base_url, args.repeat))
    floor = figures["REST"]
    print(f"one SOQL query by an episode's agent, median of {args.repeat}:")
    for name, ms in figures.items():
        print(f"  {name:8} {ms:7.2f} ms  {ms / floor:5.2f}x the REST floor")


if __name__ == "__main__":
    main()
