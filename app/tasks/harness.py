"""Running an agent on tasks, one episode each, over a server's HTTP API: the episode is made
from the task, the agent gets the task without its answer and an API on the episode's
sandbox, and its response is graded by the server."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import httpx

from app.tasks.model import Api
from app.tasks.solving import HttpApi

EPISODES = "/__localforce/episodes"
Agent = Callable[[Api, dict[str, Any]], str]


def run_episode(
    control: httpx.Client,
    task: dict[str, Any],
    agent: Agent,
    *,
    org: str | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """One episode of `task` answered by `agent`, in a sandbox of `org` and `seed` (the
    server's own by default); the server's grading of it (the episode is deleted after)."""
    body = {"task": task, "org": org, "seed": seed}
    made = control.post(
        EPISODES, json={key: value for key, value in body.items() if value is not None}
    )
    made.raise_for_status()
    episode = made.json()
    try:
        response = agent(HttpApi(control, episode["access_token"]), episode["task"])
        graded = control.post(f"{EPISODES}/{episode['id']}/answer", json={"response": response})
        graded.raise_for_status()
        return dict(graded.json())
    finally:
        control.delete(f"{EPISODES}/{episode['id']}")


def run_tasks(
    control: httpx.Client,
    tasks: Sequence[dict[str, Any]],
    agent: Agent,
    *,
    org: str | None = None,
    seed: int | None = None,
) -> dict[int, float]:
    """Each task's reward: task idx -> reward."""
    return {
        task["idx"]: float(run_episode(control, task, agent, org=org, seed=seed)["reward"])
        for task in tasks
    }
