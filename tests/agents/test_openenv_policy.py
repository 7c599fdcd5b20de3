"""The reference agent through OpenEnv's steps alone (OpenEnv's synchronous client): reward 1
on a task of every type; and the agents guide's example policy over ten episodes, as its command
line runs it."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from app.agents.openenv_client import LocalforceEnvClient
from examples.openenv_policy import main, play
from tests.conftest import TEST_ADMIN_KEY


def test_the_reference_agent_reaches_reward_1_on_every_type_through_step(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    first_of_type = {task["task"]: task["idx"] for task in reversed(tasks)}
    assert len(first_of_type) >= 10
    openenv = LocalforceEnvClient(base_url=f"{task_base_url}/openenv", admin_key=TEST_ADMIN_KEY)
    with openenv.sync() as env:
        rewards = {kind: play(env, task=idx) for kind, idx in sorted(first_of_type.items())}
    assert rewards == dict.fromkeys(first_of_type, 1.0)


def test_the_example_prints_the_mean_reward_of_ten_episodes(
    task_base_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALFORCE_ADMIN_KEY", TEST_ADMIN_KEY)  # where the example reads it
    monkeypatch.setattr(sys, "argv", ["openenv_policy", "--url", task_base_url])
    main()
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"episode {n}: reward 1.0" for n in range(1, 11)] + [
        "mean reward over 10 episodes: 1.000"
    ]
