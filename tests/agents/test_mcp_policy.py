"""The agents guide's scripted policy over MCP: ten best-region episodes, each solved with
CRMArena's tools through the MCP endpoint and answered with submit_answer, all reaching reward 1,
their results kept once their sandboxes are deleted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from examples.mcp_policy import TASK_TYPE, run
from tests.conftest import ADMIN_HEADERS, TEST_ADMIN_KEY
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread
from tests.tasks.original_tasks import original_tasks

pytestmark = pytest.mark.asyncio


@pytest.fixture(scope="module")
def base_url(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[str]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    return original_tasks(seeded_template, per_type=10)


async def test_the_policy_reaches_reward_1_in_ten_episodes(
    base_url: str, tasks: list[dict[str, Any]]
) -> None:
    assert sum(1 for task in tasks if task["task"] == TASK_TYPE) == 10
    rewards = await run(base_url, tasks, TEST_ADMIN_KEY, episodes=10)
    assert rewards == [1.0] * 10
    # Each episode's sandbox is deleted; its result is kept, filed as MCP's, with the calls.
    listed = httpx.get(f"{base_url}/__localforce/sandboxes", headers=ADMIN_HEADERS).json()[
        "sandboxes"
    ]
    assert [sandbox["id"] for sandbox in listed] == ["default"]  # the org's own: no episode's
    kept = httpx.get(
        f"{base_url}/__localforce/results", params={"answered": "true"}, headers=ADMIN_HEADERS
    ).json()
    results = kept["results"]
    assert [(r["task"], r["reward"], r["channel"]) for r in results] == [
        (TASK_TYPE, 1.0, "mcp")
    ] * 10
    assert all(r["tool_calls"][-1]["tool"] == "submit_answer" for r in results)
