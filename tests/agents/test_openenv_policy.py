"""The reference agent through OpenEnv's steps alone (OpenEnv's synchronous client): reward 1
on a task of every type; and the README's example policy, run as a script over ten episodes."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from app.agents.openenv_client import LocalforceEnvClient
from app.config import REPO_ROOT
from examples.openenv_policy import play


def test_the_reference_agent_reaches_reward_1_on_every_type_through_step(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    first_of_type = {task["task"]: task["idx"] for task in reversed(tasks)}
    assert len(first_of_type) >= 10
    with LocalforceEnvClient(base_url=f"{task_base_url}/openenv").sync() as env:
        rewards = {kind: play(env, task=idx) for kind, idx in sorted(first_of_type.items())}
    assert rewards == dict.fromkeys(first_of_type, 1.0)


def test_the_example_prints_the_mean_reward_of_ten_episodes(task_base_url: str) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "examples.openenv_policy", "--url", task_base_url],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines == [f"episode {n}: reward 1.0" for n in range(1, 11)] + [
        "mean reward over 10 episodes: 1.000"
    ]
