"""One results store for every channel: an episode answered over REST, one over MCP and one
over OpenEnv (its WebSocket client), each with a trajectory, are in `localforce results export`
(JSON Lines and CSV), in GET /__localforce/results and on the console's Tasks page after their
sandboxes are deleted; a purge is the only way a result goes."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from typer.testing import CliRunner

from app.agents.openenv_client import LocalforceEnvClient
from app.cli import cli
from app.config import Settings
from tests.agents.test_mcp import mcp_client
from tests.conftest import ADMIN_HEADERS, API, TEST_ADMIN_KEY
from tests.databases import DatabaseFactory

OPERATOR = ADMIN_HEADERS
CONTROL = "/__localforce"
RUN = "store-run"


@pytest.fixture(scope="module")
def text_tasks(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks whose answer is one text, graded by exact match."""
    return [
        task
        for task in tasks
        if task["reward_metric"] == "exact_match" and isinstance(task["answer"], str)
    ]


def start(operator: httpx.Client, task: dict[str, Any], agent: str) -> dict[str, Any]:
    made = operator.post(
        f"{CONTROL}/episodes", json={"task": task["idx"], "run": RUN, "agent": agent}
    )
    assert made.status_code == 201, made.text
    return dict(made.json())


@pytest.fixture(scope="module")
def answered(base_url: str, text_tasks: list[dict[str, Any]]) -> dict[str, str]:
    """Three episodes of the run, answered over REST, MCP and OpenEnv, their sandboxes gone:
    the channel's episode id by channel."""
    operator = httpx.Client(base_url=base_url, headers=OPERATOR, timeout=120)
    ids: dict[str, str] = {}
    rest = start(operator, text_tasks[0], "rest-agent")
    agent = httpx.Client(base_url=base_url, timeout=60)
    bearer = {"Authorization": f"Bearer {rest['access_token']}"}
    assert agent.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Case"}, headers=bearer)
    graded = operator.post(
        f"{CONTROL}/episodes/{rest['id']}/answer", json={"response": str(text_tasks[0]["answer"])}
    )
    assert graded.status_code == 200, graded.text
    ids["rest"] = rest["id"]

    async def over_mcp() -> None:
        made = start(operator, text_tasks[1], "mcp-agent")
        async with mcp_client(base_url, made["access_token"]) as client:
            await client.call_tool("soql_query", {"query": "SELECT COUNT() FROM Case"})
            await client.call_tool("submit_answer", {"response": str(text_tasks[1]["answer"])})
        ids["mcp"] = made["id"]

    async def over_openenv() -> None:
        async with LocalforceEnvClient(base_url=f"{base_url}/openenv") as env:
            started = await env.reset(
                task=text_tasks[2]["idx"], admin_key=TEST_ADMIN_KEY, run=RUN, agent="openenv-agent"
            )
            ids["openenv"] = started.observation.episode_id  # type: ignore[attr-defined]
            await env.call_tool("soql_query", query="SELECT COUNT() FROM Case")
            await env.call_tool("submit_answer", response=str(text_tasks[2]["answer"]))

    asyncio.run(over_mcp())
    asyncio.run(over_openenv())
    for episode_id in ids.values():
        operator.delete(f"{CONTROL}/episodes/{episode_id}")  # the OpenEnv one is gone already
        assert operator.get(f"{CONTROL}/sandboxes/{episode_id}").status_code == 404
    return ids


def test_results_are_served_with_their_trajectories_after_the_sandboxes_go(
    base_url: str, answered: dict[str, str], text_tasks: list[dict[str, Any]]
) -> None:
    listed = httpx.get(f"{base_url}{CONTROL}/results", params={"run": RUN}, headers=OPERATOR)
    assert listed.status_code == 200
    rows = {row["channel"]: row for row in listed.json()["results"]}
    assert set(rows) == {"rest", "mcp", "openenv"}
    for index, channel in enumerate(("rest", "mcp", "openenv")):
        row = rows[channel]
        assert row["episode"] == answered[channel]
        assert (row["run"], row["org"], row["seed"]) == (RUN, "original", 42)
        assert (row["idx"], row["task"]) == (text_tasks[index]["idx"], text_tasks[index]["task"])
        assert row["expected"] == text_tasks[index]["answer"]
        assert row["answer"] == str(text_tasks[index]["answer"])
        assert row["reward"] == 1.0
        assert row["clock"].endswith("T12:00:00.000Z")
        assert row["seconds"] >= 0
    assert [call["method"] for call in rows["rest"]["calls"]] == ["GET"]
    assert rows["rest"]["steps"] == 1 and rows["rest"]["tool_calls"] == []
    for channel in ("mcp", "openenv"):
        calls = rows[channel]["tool_calls"]
        assert [call["tool"] for call in calls] == ["soql_query", "submit_answer"]
        assert calls[1]["result"] == {
            "episode": answered[channel],
            "reward": 1.0,
            "metric": "exact_match",
            "done": True,
        }
        assert rows[channel]["steps"] == 2
    assert [rows[channel]["agent"] for channel in ("rest", "mcp", "openenv")] == [
        "rest-agent",
        "mcp-agent",
        "openenv-agent",
    ]
    only_openenv = httpx.get(
        f"{base_url}{CONTROL}/results",
        params={"run": RUN, "task": text_tasks[2]["task"]},
        headers=OPERATOR,
    )
    assert [row["channel"] for row in only_openenv.json()["results"]] == ["openenv"]
    page = httpx.get(f"{base_url}/console/tasks", headers=OPERATOR)
    assert page.status_code == 200
    for episode_id in answered.values():
        assert f"{episode_id} <small>(sandbox gone)</small>" in page.text
    assert page.text.count("<td>1.000</td>") >= 3


def test_the_export_command_writes_jsonl_and_csv(
    base_url: str, answered: dict[str, str], database_factory: DatabaseFactory, app: FastAPI
) -> None:
    settings: Settings = app.state.localforce.settings
    env = {"LOCALFORCE_DATABASE_URL": settings.effective_database_url}
    runner = CliRunner()
    lines = runner.invoke(cli, ["results", "export", "--run", RUN], env=env)
    assert lines.exit_code == 0, lines.output
    exported = [json.loads(line) for line in lines.output.splitlines()]
    served = httpx.get(f"{base_url}{CONTROL}/results", params={"run": RUN}, headers=OPERATOR)
    assert exported == served.json()["results"]
    table = runner.invoke(cli, ["results", "export", "--run", RUN, "--format", "csv"], env=env)
    assert table.exit_code == 0, table.output
    rows = list(csv.DictReader(io.StringIO(table.output)))
    assert [row["episode"] for row in rows] == [row["episode"] for row in exported]
    assert [json.loads(row["tool_calls"]) for row in rows] == [r["tool_calls"] for r in exported]
    other = runner.invoke(cli, ["results", "export", "--run", "no-such-run"], env=env)
    assert (other.exit_code, other.output) == (0, "")


def test_only_a_purge_removes_a_result(base_url: str, text_tasks: list[dict[str, Any]]) -> None:
    operator = httpx.Client(base_url=base_url, headers=OPERATOR, timeout=120)
    made = [
        operator.post(
            f"{CONTROL}/episodes", json={"task": task["idx"], "run": "purged", "agent": "p"}
        ).json()
        for task in text_tasks[3:6]
    ]
    for episode in made:
        assert operator.delete(f"{CONTROL}/episodes/{episode['id']}").status_code == 204
    kept = operator.get(f"{CONTROL}/results", params={"run": "purged"}).json()["results"]
    assert sorted(row["episode"] for row in kept) == sorted(episode["id"] for episode in made)
    assert [row["reward"] for row in kept] == [None] * 3  # never answered: kept all the same
    assert operator.delete(f"{CONTROL}/results/{made[0]['id']}").status_code == 204
    assert operator.get(f"{CONTROL}/episodes/{made[0]['id']}").status_code == 404
    assert operator.delete(f"{CONTROL}/results", params={"run": "purged"}).json() == {"purged": 2}
    assert operator.get(f"{CONTROL}/results", params={"run": "purged"}).json() == {"results": []}
