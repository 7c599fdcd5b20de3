"""`localforce eval`: a model's run over a task file."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai

from app.evaluation.agent import ChatModel
from app.evaluation.control import Control, ControlError
from app.evaluation.judging import LlmJudge
from app.evaluation.run_file import RunFile
from app.evaluation.runner import Plan, Runner


class EvalRefused(Exception):
    """What was asked cannot be run: a task file that is not one, a run that exists."""


@dataclass(frozen=True)
class ModelEndpoint:
    name: str
    base_url: str
    api_key: str
    timeout: float = 120.0  # seconds a call may take
    max_retries: int = 4  # on 429, 5xx, timeouts and dropped connections, with backoff

    def client(self) -> ChatModel:
        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=self.api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
        )
        return ChatModel(client=client, name=self.name)


def load_tasks(
    path: Path,
    *,
    types: Sequence[str] = (),
    limit: int | None = None,
    per_type: int | None = None,
) -> list[Any]:
    """A task file's rows, chosen as `select_tasks` chooses them."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise EvalRefused(f"{path} is not a task file: {error}") from error
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and "idx" in row and "task" in row for row in rows
    ):
        raise EvalRefused(f"{path} is not a task file: a JSON list of task rows (idx, task, ...)")
    return select_tasks(rows, str(path), types=types, limit=limit, per_type=per_type)


def select_tasks(
    rows: list[dict[str, Any]],
    source: str,
    *,
    types: Sequence[str] = (),
    limit: int | None = None,
    per_type: int | None = None,
) -> list[Any]:
    """The rows of the given types (all if none), the first `per_type` of each type, the
    first `limit` of those; `source` names where they came from (a task file, a split) in a
    refusal."""
    indexes = [row["idx"] for row in rows]
    if len(set(map(str, indexes))) != len(indexes):
        raise EvalRefused(f"{source} numbers two tasks alike: each idx names one task")
    unknown = set(types) - {row["task"] for row in rows}
    if unknown:
        raise EvalRefused(f"{source} has no task of type {', '.join(sorted(unknown))}")
    chosen = [row for row in rows if not types or row["task"] in types]
    if per_type is not None:
        counted: Counter[str] = Counter()
        kept = []
        for row in chosen:
            counted[row["task"]] += 1
            if counted[row["task"]] <= per_type:
                kept.append(row)
        chosen = kept
    return chosen[:limit] if limit is not None else chosen


def evaluate(
    plan: Plan,
    model: ModelEndpoint,
    localforce_url: str,
    admin_key: str | None,
    run_file: RunFile,
    *,
    resume: bool,
    on_record: Callable[[dict[str, Any]], None] = lambda record: None,
    judge: ModelEndpoint | None = None,
    user: ModelEndpoint | None = None,
) -> list[dict[str, Any]]:
    """Run the plan's pending episodes; the run's records, all of them."""
    if run_file.recorded_keys() and not resume:
        raise EvalRefused(
            f"Run {plan.run} has episodes recorded in {run_file.path}: pass --resume to go on "
            "with it, or name another run"
        )

    async def main() -> None:
        control = Control(localforce_url, admin_key)
        chat = model.client()
        judging = None if judge is None else LlmJudge(judge.client())
        simulating = None if user is None else user.client()
        try:
            await Runner(plan, control, chat, run_file, on_record, judging, simulating).run()
        except ExceptionGroup as group:  # the episodes' task group: localforce failed them
            refused = group.subgroup(ControlError)
            if refused is None:
                raise
            raise _first(refused) from group
        finally:
            await control.aclose()
            await chat.client.close()
            for other in (None if judging is None else judging.model, simulating):
                if other is not None:
                    await other.client.close()

    asyncio.run(main())
    return run_file.records()


def _first(group: BaseExceptionGroup[ControlError]) -> ControlError:
    first = group.exceptions[0]
    return first if isinstance(first, ControlError) else _first(first)
