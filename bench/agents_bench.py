"""What an agent interface adds to a call: one SOQL query made by an episode's agent over the
REST API (the floor: a keep-alive HTTP connection), as an MCP tool call (its JSON-RPC message
posted on the same kind of connection: what the server adds; and through the MCP SDK's client,
one session over streamable HTTP, whose own work runs in this process beside the server's), and
as an OpenEnv step (one WebSocket session, each step a tool call through the MCP endpoint in
process; a read-only tool leaves the sandbox's diff of `state` as it was), its message sent on
the same kind of plain connection, and through OpenEnv's own client.
Beside them, the same MCP call with a plain sandbox's token, which no episode's checks see:
the episode's MCP call over it is what the checks of a tool call cost (its episode and task
looked up, the tool checked against the task's set, the call recorded in the trajectory).
Medians in milliseconds, timed in alternation, and each one's ratio to the floor.

The server is `localforce serve` in a process of its own (one worker), as deployed: served from
a thread of this process, it shared one GIL with the clients timed here, and every call paid
for the hand-offs between them (OpenEnv's step most: 1.18-1.24x REST in a thread, 1.10-1.11x
in a process of its own, on the same machine).

Run: `python -m bench.agents_bench [--repeat N]` (needs the openenv extra).
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
from bench.server import API, HttpClient, seeded_data_dir
from bench.websocket import BlockingWebSocket
from tests.conftest import TEST_ADMIN_KEY
from tests.processes import Deployment

QUERY = "SELECT Id, Subject, Status FROM Case ORDER BY CreatedDate DESC LIMIT 20"
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}
# The agent interfaces' target: each within this much of the REST call it wraps.
TARGET = 1.2
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
    plain_env = _openenv_session(base_url, "bench-agents-plain-ws")
    async with openenv as env:
        await env.reset(task=TASK, episode_id="bench-agents")
        # REST and MCP query a twin episode (same task, org, seed and clock): same rows.
        token = await _episode_token(base_url, "bench-agents-twin")
        plain_token = await _sandbox_token(base_url, "bench-agents-plain")
        rest = HttpClient(base_url, login=False)
        rest_headers = {"Authorization": f"Bearer {token}"}
        path = f"{API}/query?" + urlencode({"q": QUERY})
        wire = HttpClient(base_url, login=False)
        message = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "soql_query", "arguments": {"query": QUERY}},
            }
        ).encode()

        async def over_rest() -> object:
            return rest.request("GET", path, headers=rest_headers)

        step = json.dumps(
            {
                "type": "step",
                "data": {
                    "type": "call_tool",
                    "tool_name": "soql_query",
                    "arguments": {"query": QUERY},
                },
            }
        )

        async def over_websocket() -> object:
            plain_env.send(step)
            answer = json.loads(plain_env.recv())
            assert answer["type"] == "observation" and not answer["data"]["observation"]["error"]
            return answer

        async def over_wire() -> object:
            answer = wire.request("POST", "/mcp", message, {**rest_headers, **MCP_HEADERS})
            assert not answer["result"].get("isError"), answer
            return answer

        plain_headers = {"Authorization": f"Bearer {plain_token}"}
        async with (
            httpx2.AsyncClient(headers=rest_headers, timeout=60) as http,
            httpx2.AsyncClient(headers=plain_headers, timeout=60) as plain_http,
            Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as mcp,
            Client(streamable_http_client(f"{base_url}/mcp", http_client=plain_http)) as plain,
        ):

            async def over_mcp() -> object:
                return await mcp.call_tool("soql_query", {"query": QUERY})

            async def over_plain_mcp() -> object:
                return await plain.call_tool("soql_query", {"query": QUERY})

            async def over_openenv() -> object:
                action = CallToolAction(tool_name="soql_query", arguments={"query": QUERY})
                return await env.step(action)

            actions: dict[str, Callable[[], Awaitable[object]]] = {
                "REST": over_rest,
                "MCP": over_wire,
                "OpenEnv": over_websocket,
                "OpenEnv, its client": over_openenv,
                "MCP, SDK client": over_mcp,
                "MCP, SDK, no episode": over_plain_mcp,
            }
            return await timed(actions, repeat)


def _openenv_session(base_url: str, episode_id: str) -> BlockingWebSocket:
    """An OpenEnv session on a plain WebSocket connection, its episode started."""
    session = BlockingWebSocket(base_url.replace("http", "ws", 1) + "/openenv/ws")
    reset = {"task": TASK, "episode_id": episode_id, "admin_key": TEST_ADMIN_KEY}
    session.send(json.dumps({"type": "reset", "data": reset}))
    answer = json.loads(session.recv())
    assert answer["type"] == "observation", answer
    return session


async def _episode_token(base_url: str, episode_id: str) -> str:
    """A token of an episode of the same task, as the control plane's episode answer gives it:
    the OpenEnv episode's own sandbox takes only its password, which its agent never sees."""
    return await _made_token(base_url, "/__localforce/episodes", {"id": episode_id, "task": TASK})


async def _sandbox_token(base_url: str, sandbox_id: str) -> str:
    """The token of a plain sandbox: no episode's, so no episode's checks."""
    return await _made_token(base_url, "/__localforce/sandboxes", {"id": sandbox_id})


async def _made_token(base_url: str, path: str, body: dict[str, Any]) -> str:
    headers = {"X-Localforce-Admin-Key": TEST_ADMIN_KEY}
    async with httpx2.AsyncClient(base_url=base_url, headers=headers, timeout=60) as http:
        response = await http.post(path, json=body)
        response.raise_for_status()
        return str(response.json()["access_token"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        server = Deployment(seeded_data_dir(Path(workdir)), "").start(LOCALFORCE_WORKERS="1")
        try:
            figures: dict[str, Any] = asyncio.run(measure(server.base, args.repeat))
        finally:
            server.stop()
    floor = figures["REST"]
    print(f"one SOQL query by an episode's agent, median of {args.repeat}:")
    for name, ms in figures.items():
        print(f"  {name:21} {ms:7.2f} ms  {ms / floor:5.2f}x the REST floor")
    checks = figures["MCP, SDK client"] / figures["MCP, SDK, no episode"]
    print(f"  an episode's checks per tool call: {checks:5.2f}x the MCP call without them")
    for name in ("MCP", "OpenEnv", "OpenEnv, its client"):
        ratio = figures[name] / floor
        verdict = "meets" if ratio <= TARGET else "misses"
        print(f"  {name} at {ratio:.2f}x REST {verdict} the {TARGET}x target")


if __name__ == "__main__":
    main()
