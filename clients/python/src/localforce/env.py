"""A gym-like environment of localforce's benchmark episodes, for trainers:

    env = localforce.make("http://127.0.0.1:8000", split="crmarena-original@v1:train",
                          admin_key=key)
    observation, info = env.reset(seed=7)          # a task of the split, drawn by the seed
    step = env.step({"name": "soql_query", "arguments": {"query": "SELECT Id FROM Case"}})
    step = env.step({"name": "submit_answer", "arguments": {"response": "005..."}})
    step.reward, step.terminated                      # graded once, by the server
    env.close()

Each reset starts an episode (its own sandbox, its clock at the task's day) through the
control plane with the admin key; each step calls one of the task's tools through the MCP
endpoint with the episode's own token, which reaches that sandbox and nothing else. The answer
is graded by the server once; the expected answer never reaches the environment.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import httpx

from localforce.control import TIMEOUT, ControlPlans
from localforce.plans import Awaiting, Blocking, Http, Plan, awaiting, blocking
from localforce.tools import ToolResult, call_tool, function_schema, list_tools

ANSWER_TOOL = "submit_answer"


class Reset(NamedTuple):
    """What reset() observes: the task's prompt, and its episode (id, type, metadata, the
    tools as a chat model's functions)."""

    observation: str
    info: dict[str, Any]


class Step(NamedTuple):
    """What step() observes, as gymnasium's step: the tool's answer as text; the reward (the
    grade, once the answer is given; 0.0 before); whether the answer ended the episode;
    whether max_steps did; and the tool call's details."""

    observation: str
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


class EpisodeOver(RuntimeError):
    """step() with no episode running: reset() first."""


@dataclass
class Episode:
    id: str
    token: str
    task: str
    tools: list[dict[str, Any]]
    steps: int = 0
    done: bool = False
    reward: float = 0.0
    answer: dict[str, Any] = field(default_factory=dict)


def parse_tool_call(tool_call: Any) -> tuple[str, dict[str, Any]]:
    """A tool call's name and arguments, from {"name", "arguments"}, a chat model's
    {"function": {"name", "arguments"}} (the arguments a JSON text or an object), or the
    openai client's objects of the same shape. ValueError says what is wrong."""
    call = tool_call.get("function", tool_call) if isinstance(tool_call, dict) else None
    if call is None:
        function = getattr(tool_call, "function", tool_call)
        call = {
            "name": getattr(function, "name", None),
            "arguments": getattr(function, "arguments", None),
        }
    name, arguments = call.get("name"), call.get("arguments") or {}
    if not isinstance(name, str) or not name:
        raise ValueError("a tool call names its tool: {'name': ..., 'arguments': {...}}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as error:
            raise ValueError(f"the arguments of {name} are not JSON: {error}") from error
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {name} are an object of named values")
    return name, arguments


class EnvClient(Http):
    """What the blocking and asyncio environments hold: the server, the tasks to draw from,
    the labels results are filed under, and the running episode."""

    def __init__(
        self,
        url: str,
        *,
        split: str | None = None,
        admin_key: str | None = None,
        types: Sequence[str] | None = None,
        run: str | None = None,
        agent: str | None = None,
        max_steps: int | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.split = split
        self.types = set(types) if types else None
        self.run = run
        self.agent = agent
        self.max_steps = max_steps
        self.control = ControlPlans(self.url, admin_key)
        self.episode: Episode | None = None
        self._tasks: list[int] | None = None
        self._rng = random.Random()

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The running episode's tools, as a chat model's functions (none before reset)."""
        return [] if self.episode is None else self.episode.tools


class EnvPlans(EnvClient):
    """The environment's steps, declared once: `Env` runs them blocking, `AsyncEnv` awaits
    them."""

    def task_ids(self) -> Plan[list[int]]:
        """The idx of every task reset() may draw: the split's part's (or the server's task
        file's), of the chosen types."""
        if self._tasks is None:
            plans = self.control
            listed = yield from (plans.split_tasks(self.split) if self.split else plans.tasks())
            self._tasks = [
                row["idx"] for row in listed if not self.types or row["task"] in self.types
            ]
            if not self._tasks:
                raise ValueError(
                    f"no task of {self.split or 'the server task file'} is of {self.types}"
                )
        return self._tasks

    def reset(
        self, seed: int | None = None, task: int | None = None, episode_id: str | None = None
    ) -> Plan[Reset]:
        """End the running episode, if any, and start one: task `task` (an idx), or one drawn
        by `seed` (the same seed, the same task), or at random."""
        yield from EnvPlans.end(self)  # the plan, whichever client runs it
        if task is None:
            ids = yield from EnvPlans.task_ids(self)
            task = (random.Random(seed) if seed is not None else self._rng).choice(ids)
        made = yield from self.control.start_episode(
            task, split=self.split, id=episode_id, run=self.run, agent=self.agent
        )
        tools = yield from list_tools(made["access_token"])
        self.episode = Episode(
            id=made["id"],
            token=made["access_token"],
            task=made["task"]["task"],
            tools=[function_schema(tool) for tool in tools],
        )
        info = {
            "episode_id": made["id"],
            "task": made["task"],
            "metadata": made["metadata"],
            "tools": self.episode.tools,
        }
        return Reset(made["prompt"], info)

    def step(self, tool_call: Any) -> Plan[Step]:
        """Call one tool of the episode's task. A malformed call, a tool the task has not and
        a Salesforce error are observations (info["is_error"]), as they are for an agent."""
        episode = self.episode
        if episode is None or episode.done:
            raise EpisodeOver("no episode is running: reset() starts one")
        episode.steps += 1
        try:
            name, arguments = parse_tool_call(tool_call)
        except ValueError as error:
            result = ToolResult(f"INVALID_TOOL_CALL: {error}", None, True)
            name = ""
        else:
            result = yield from call_tool(episode.token, name, arguments)
        if name == ANSWER_TOOL and not result.is_error and isinstance(result.structured, dict):
            episode.done = True
            episode.reward = float(result.structured.get("reward") or 0.0)
            episode.answer = result.structured
        truncated = (
            not episode.done and self.max_steps is not None and episode.steps >= self.max_steps
        )
        info = {
            "episode_id": episode.id,
            "tool": name,
            "is_error": result.is_error,
            "steps": episode.steps,
        }
        reward = episode.reward if episode.done else 0.0
        return Step(result.text, reward, episode.done, truncated, info)

    def end(self) -> Plan[None]:
        """End the running episode: its sandbox is deleted, its result kept (an unanswered
        episode's result has no reward)."""
        episode, self.episode = self.episode, None
        if episode is not None:
            yield from self.control.end_episode(episode.id)


class Env(EnvClient, Blocking):
    """The environment, blocking."""

    def __init__(
        self, url: str, *, timeout: float = TIMEOUT, verify: bool | str = True, **options: Any
    ) -> None:
        super().__init__(url, **options)
        self.http = httpx.Client(base_url=self.url, timeout=timeout, verify=verify)

    reset = blocking(EnvPlans.reset)
    step = blocking(EnvPlans.step)
    end = blocking(EnvPlans.end)

    def close(self) -> None:
        """End the running episode and the client's connections."""
        try:
            self.end()
        finally:
            self.http.close()


class AsyncEnv(EnvClient, Awaiting):
    """The environment, asyncio: `await env.reset()`, `await env.step(call)`."""

    def __init__(
        self, url: str, *, timeout: float = TIMEOUT, verify: bool | str = True, **options: Any
    ) -> None:
        super().__init__(url, **options)
        self.http = httpx.AsyncClient(base_url=self.url, timeout=timeout, verify=verify)

    reset = awaiting(EnvPlans.reset)
    step = awaiting(EnvPlans.step)
    end = awaiting(EnvPlans.end)

    async def aclose(self) -> None:
        """End the running episode and the client's connections."""
        try:
            await self.end()
        finally:
            await self.http.aclose()


def make(url: str, split: str | None = None, admin_key: str | None = None, **options: Any) -> Env:
    """An environment of `split`'s part (say "crmarena-original@v1:train"; None: the
    server's task file), starting episodes with the server's admin key."""
    return Env(url, split=split, admin_key=admin_key, **options)


def make_async(
    url: str, split: str | None = None, admin_key: str | None = None, **options: Any
) -> AsyncEnv:
    """`make`, for asyncio: many episodes at once on one event loop."""
    return AsyncEnv(url, split=split, admin_key=admin_key, **options)
