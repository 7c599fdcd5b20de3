"""A scripted policy over OpenEnv: localforce's reference agent, acting only through the
environment's steps (each query, describe and update one tool call), over episodes drawn from
the server's task file; prints each reward and the mean.

    localforce tasks generate --per-type 10 --out tasks.json
    LOCALFORCE_TASK_FILE=tasks.json localforce serve &
    python -m examples.openenv_policy --url http://127.0.0.1:8000 --episodes 10

Each reset carries the server's admin key (an episode is started through the control plane):
--admin-key, else LOCALFORCE_ADMIN_KEY, else what `localforce admin-key` prints.
"""

from __future__ import annotations

import argparse
from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction
from openenv.core.sync_client import SyncEnvClient

from app.agents.environment import EpisodeObservation
from app.agents.openenv_client import LocalforceEnvClient
from app.tasks.reference_agent import solve
from app.tasks.tools import METADATA_TOOLS
from examples.admin_key import admin_key

Env = SyncEnvClient[Any, Any, Any]  # the client's observations: of reset, and of each tool


class StepApi:
    """What the reference agent asks of an org, each call one step of the episode."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def call(self, tool: str, **arguments: Any) -> Any:
        observation = self.env.step(CallToolAction(tool_name=tool, arguments=arguments)).observation
        if observation.error is not None:
            raise RuntimeError(f"{tool}: {observation.error.message}")
        return observation.result["data"]

    def query(self, soql: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.call("soql_query", query=soql)["records"]
        return records

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None:
        self.call("update_record", sobject=sobject, record_id=record_id, fields=fields)

    def fields(self, sobject: str) -> set[str]:
        return {field["name"] for field in self.call("describe", sobject=sobject)["fields"]}

    def sobjects(self) -> set[str]:
        return {sobject["name"] for sobject in self.call("describe_global")["sobjects"]}

    def read_metadata(self, metadata_type: str, full_names: list[str]) -> list[Any]:
        found = self.call("read_metadata", metadata_type=metadata_type, full_names=full_names)
        records: list[Any] = found["records"]
        return records

    def change_metadata(
        self, operation: str, metadata_type: str, components: list[dict[str, Any]]
    ) -> list[Any]:
        tool = METADATA_TOOLS[operation]
        found = self.call(tool, metadata_type=metadata_type, components=components)
        results: list[Any] = found["results"]
        return results


def play(env: Env, **reset: Any) -> float:
    """One episode: reset with `reset` (a task, a task_type, a seed), solve, answer."""
    started = env.reset(**reset).observation
    if not isinstance(started, EpisodeObservation):
        raise RuntimeError(f"reset observed {started!r}")
    answer = solve(StepApi(env), started.task)
    result = env.step(CallToolAction(tool_name="submit_answer", arguments={"response": answer}))
    if not result.done or result.reward is None:
        raise RuntimeError(f"the answer did not end the episode: {result.observation!r}")
    return float(result.reward)


def run(base_url: str, admin_key: str, episodes: int = 10, **reset: Any) -> list[float]:
    """The rewards of `episodes` episodes, the n-th drawn with seed n."""
    openenv = LocalforceEnvClient(base_url=f"{base_url}/openenv", admin_key=admin_key)
    with openenv.sync() as env:
        return [play(env, seed=n, **reset) for n in range(episodes)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--admin-key", default=None, help="the server's admin key")
    args = parser.parse_args()
    rewards = run(args.url, args.admin_key or admin_key(), args.episodes)
    for n, reward in enumerate(rewards, start=1):
        print(f"episode {n}: reward {reward}")
    print(f"mean reward over {len(rewards)} episodes: {sum(rewards) / max(len(rewards), 1):.3f}")


if __name__ == "__main__":
    main()
