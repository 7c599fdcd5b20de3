"""A scripted policy over MCP: for each best-region task of a task file, an episode of its own,
solved with CRMArena's tools through localforce's MCP endpoint and answered with
`submit_answer`; prints each reward and the mean.

    localforce serve &
    localforce tasks generate --per-type 10 --out tasks.json
    python -m examples.mcp_policy tasks.json --url http://127.0.0.1:8000

Episodes are started through the control plane, with the server's admin key:
LOCALFORCE_ADMIN_KEY, else what `localforce admin-key` prints.

The tools answer as CRMArena's tool environment shows results (a Python literal), so the
policy reads them back with `ast.literal_eval`, as a model reads the text; `submit_answer`,
localforce's own, answers a JSON object (its structured content). The answer is final: it ends
the episode, and the episode's token with it.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import re
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from app.tasks.periods import read_period
from examples.admin_key import admin_key

SALESFORCE_DATETIME = "%Y-%m-%dT%H:%M:%SZ"
TASK_TYPE = "best_region_identification"


async def tool(client: Client, name: str, **arguments: Any) -> Any:
    """A tool's answer, read back from the text it shows."""
    result = await client.call_tool(name, arguments)
    (content,) = result.content
    if not isinstance(content, TextContent):
        raise RuntimeError(f"{name} answered {content.type}, not text")
    text = content.text
    if result.is_error:
        raise RuntimeError(text)
    return ast.literal_eval(text)


async def submit_answer(client: Client, response: str) -> dict[str, Any]:
    """The episode's one answer: its reward, and that the episode is done."""
    result = await client.call_tool("submit_answer", {"response": response})
    if result.is_error or result.structured_content is None:
        texts = [item.text for item in result.content if isinstance(item, TextContent)]
        raise RuntimeError("submit_answer: " + "\n".join(texts))
    graded = dict(result.structured_content)
    if graded.get("done") is not True:
        raise RuntimeError(f"the answer did not end the episode: {graded}")
    return graded


async def best_region(client: Client, task: dict[str, Any]) -> str:
    """The state whose Closed cases of the task's period closed fastest on average."""
    found = re.search(r"Today's date: (\d{4}-\d{2}-\d{2})", task["metadata"]["required"])
    if found is None:
        raise ValueError("the task names no today")
    period = read_period(task["query"], date.fromisoformat(found[1]))
    start = period.start.strftime(SALESFORCE_DATETIME)
    end = period.end.strftime(SALESFORCE_DATETIME)
    cases = await tool(client, "get_cases", start_date=start, end_date=end, statuses=["Closed"])
    located = await tool(client, "get_shipping_state", cases=cases)
    times = await tool(client, "calculate_region_average_closure_times", cases=located)
    fastest = await tool(client, "find_id_with_min_value", values_by_id=times)
    return str(fastest[0]) if fastest else "None"


async def run_episode(base_url: str, control: httpx.AsyncClient, task: dict[str, Any]) -> float:
    made = await control.post("/__localforce/episodes", json={"task": task})
    made.raise_for_status()
    episode = made.json()
    headers = {"Authorization": f"Bearer {episode['access_token']}"}
    try:
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
            async with Client(transport) as client:
                answer = await best_region(client, episode["task"])
                graded = await submit_answer(client, answer)
        return float(graded["reward"])
    finally:
        await control.delete(f"/__localforce/episodes/{episode['id']}")


async def run(
    base_url: str, tasks: list[dict[str, Any]], admin_key: str, episodes: int = 10
) -> list[float]:
    """The rewards of the policy on the first `episodes` best-region tasks."""
    chosen = [task for task in tasks if task["task"] == TASK_TYPE][:episodes]
    headers = {"X-Localforce-Admin-Key": admin_key}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=120) as control:
        return [await run_episode(base_url, control, task) for task in chosen]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("tasks", type=Path, help="a task file (localforce tasks generate)")
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--episodes", type=int, default=10)
    args = parser.parse_args()
    tasks = json.loads(args.tasks.read_text(encoding="utf-8"))
    rewards = asyncio.run(run(args.url, tasks, admin_key(), args.episodes))
    for n, reward in enumerate(rewards, start=1):
        print(f"episode {n}: reward {reward}")
    print(f"mean reward over {len(rewards)} episodes: {sum(rewards) / max(len(rewards), 1):.3f}")


if __name__ == "__main__":
    main()
