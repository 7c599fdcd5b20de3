"""A run: a model's episodes over a task file's tasks, `concurrency` at a time, each recorded
once in the run's file and in localforce's results store (filed under the run's name).

Each episode has an id the run chooses (the run, the task and the repeat, hashed), so a resumed
run finds what a killed one left: an answered episode missing from the file is recorded from
the results store (its tokens unknown), an unanswered one is discarded and run again."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextResourceContents

from app.evaluation.agent import (
    MAX_TURNS,
    STRATEGIES,
    TASK_CONTEXT,
    ChatModel,
    Outcome,
    SingleTurn,
    User,
)
from app.evaluation.control import Control, ControlError, StartedEpisode
from app.evaluation.judging import LlmJudge
from app.evaluation.run_file import RunFile, episode_key
from app.evaluation.simulated_user import SimulatedUser

EPISODE_ID_CHARS = 32  # hex digits of the hash; a sandbox id has at most 40 characters


def episode_id(run: str, task: dict[str, Any], repeat: int) -> str:
    digest = hashlib.sha256(
        json.dumps([run, task, repeat], sort_keys=True, ensure_ascii=False).encode()
    ).hexdigest()
    return "ev-" + digest[:EPISODE_ID_CHARS]


@dataclass(frozen=True)
class Plan:
    """What a run does: each task `repeat` times, `concurrency` episodes at a time."""

    run: str
    tasks: Sequence[dict[str, Any]]
    repeat: int = 1
    concurrency: int = 1
    max_turns: int = MAX_TURNS
    agent: str = "function-calling"  # one of agent.STRATEGIES
    org: str | None = None  # the tasks' org and seed (a split's); None: the server's
    seed: int | None = None  # a row's own "seed" comes first

    def episodes(self) -> list[tuple[dict[str, Any], int]]:
        return [(task, repeat) for repeat in range(self.repeat) for task in self.tasks]


class Runner:
    def __init__(
        self,
        plan: Plan,
        control: Control,
        model: ChatModel,
        run_file: RunFile,
        on_record: Callable[[dict[str, Any]], None] = lambda record: None,
        judge: LlmJudge | None = None,
        user_model: ChatModel | None = None,
    ) -> None:
        self.plan = plan
        self.judge = judge
        self.user_model = user_model
        self.control = control
        self.model = model
        self.run_file = run_file
        self.on_record = on_record
        self.schemas: dict[str, str] = {}

    def pending(self) -> list[tuple[dict[str, Any], int]]:
        """The episodes the run file does not hold yet."""
        recorded = self.run_file.recorded_keys()
        return [
            (task, repeat)
            for task, repeat in self.plan.episodes()
            if episode_key(task.get("idx"), repeat) not in recorded
        ]

    async def run(self) -> None:
        self.run_file.repair()
        gate = asyncio.Semaphore(self.plan.concurrency)

        async def one(task: dict[str, Any], repeat: int) -> None:
            async with gate:
                record = await self.episode(task, repeat)
            self.run_file.append(record)
            self.on_record(record)

        async with asyncio.TaskGroup() as group:
            for task, repeat in self.pending():
                group.create_task(one(task, repeat))

    async def episode(self, task: dict[str, Any], repeat: int) -> dict[str, Any]:
        """Run one episode (or recover it from the results store) and its record."""
        eid = episode_id(self.plan.run, task, repeat)
        base = {
            "key": episode_key(task.get("idx"), repeat),
            "idx": task.get("idx"),
            "repeat": repeat,
            "task": task.get("task"),
            "episode": eid,
            "model": self.model.name,
            "agent": self.plan.agent,
        }
        left = await self.control.result(eid)
        if left is not None and left.get("answered_at"):
            await self.control.close(eid)  # its sandbox, if the kill left it
            return {**base, **_recovered(left)}
        if left is not None:
            await self.control.discard(eid)
        started_at = time.monotonic()
        started = await self.control.start(
            eid,
            task,
            run=self.plan.run,
            agent=self.model.name,
            org=self.plan.org,
            seed=task.get("seed", self.plan.seed),
        )
        try:
            outcome = await self._converse(started)
        except Exception as error:
            # Not the model's doing (its output ends an episode with a reason, never raises):
            # localforce's MCP endpoint failed. The episode is not scored; a resumed run
            # runs it again.
            await self.control.discard(eid)
            raise ControlError(
                f"localforce's MCP endpoint failed: {type(error).__name__}: {str(error)[:300]}"
            ) from error
        graded = await self.control.answer(eid, outcome.answer or "")
        await self.control.close(eid)
        record = {
            **base,
            "status": "failed" if outcome.failure else "answered",
            "failure": outcome.failure,
            "answer": outcome.answer,
            "reward": graded["reward"],
            "turns": outcome.turns,
            "tool_calls": outcome.tool_calls,
            "tool_errors": outcome.tool_errors,
            "tokens_in": outcome.tokens_in,
            "tokens_out": outcome.tokens_out,
            "user_turns": outcome.user_turns,
            "user_tokens_in": outcome.user_tokens_in,
            "user_tokens_out": outcome.user_tokens_out,
            "seconds": round(time.monotonic() - started_at, 3),
            "model_seconds": round(outcome.model_seconds, 3),
        }
        if self.judge is not None:
            judged = await self.judge.judge(task, outcome.answer or "")
            record |= {"judge_reward": judged.reward, "judge_failure": judged.failure}
        return record

    async def _converse(self, started: StartedEpisode) -> Outcome:
        async with _mcp_client(self.control.base_url, started.access_token) as mcp:
            schema = await self._schema(mcp, started.org)
            metadata = started.metadata
            strategy = STRATEGIES[self.plan.agent]
            system = strategy.prompt + TASK_CONTEXT.format(
                required=metadata.get("required", ""),
                optional=metadata.get("optional", ""),
                schema=schema,
            )
            user: User = SingleTurn(started.prompt)
            if self.user_model is not None:
                user = SimulatedUser(self.user_model, started.prompt, metadata)
            return await strategy.run(self.model, mcp, system, user, self.plan.max_turns)

    async def _schema(self, mcp: Client, org: str) -> str:
        """The org's schema as CRMArena's prompt gives it (the MCP endpoint's resource)."""
        if org not in self.schemas:
            read = await mcp.read_resource(f"localforce://schema/{org}")
            self.schemas[org] = "\n".join(
                item.text for item in read.contents if isinstance(item, TextResourceContents)
            )
        return self.schemas[org]


def _recovered(result: dict[str, Any]) -> dict[str, Any]:
    """The record of an episode a killed run answered but did not write down."""
    return {
        "status": "recovered",
        "failure": None,
        "answer": result.get("answer"),
        "reward": result.get("reward"),
        "turns": None,
        "tool_calls": len(result.get("tool_calls") or []),
        "tool_errors": None,
        "tokens_in": None,
        "tokens_out": None,
        "seconds": result.get("seconds"),
    }


@asynccontextmanager
async def _mcp_client(base_url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
    ):
        yield client
