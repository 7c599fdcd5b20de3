"""Benchmark episodes: a task, checked, and what an agent is given for it (the prompt, the
metadata, the tools, a clock pinned to the task's today); its answer graded; its row kept in the
platform database, so every worker serves it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, select

from app.errors import NotFound, SalesforceError
from app.storage.database import platform_transaction
from app.storage.platform import EpisodeRecord
from app.storage.upserts import upsert_into
from app.tasks.grading import GradingFailed, score
from app.tasks.judge import Judge
from app.tasks.metrics import METRICS
from app.tasks.model import TODAY
from app.tasks.registry import answer_kind, tool_set_of
from app.tasks.tools import ANSWER, READS

EPISODES = EpisodeRecord.__table__  # type: ignore[attr-defined]
# A task names a day; its clock stands at noon UTC, so the day is the same in any time zone
# within 12 hours of UTC.
CLOCK_TIME = time(12, 0)
TASK_FIELDS = {"idx": int, "task": str, "query": str, "reward_metric": str, "metadata": dict}

# A Metadata API call's components: their type, and each one's metadata by element name.
METADATA_COMPONENTS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "metadata_type": {"type": "string", "enum": ["CustomObject", "CustomField"]},
        "components": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["metadata_type", "components"],
}

# What an agent may do in an episode, as function definitions (JSON Schema parameters), each
# with the REST call that carries it out.
TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "soql_query",
        "description": "Run a SOQL query (GET /services/data/vXX.X/query?q=...); follow "
        "nextRecordsUrl for more rows.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "The SOQL query"}},
            "required": ["query"],
        },
    },
    {
        "name": "sosl_search",
        "description": "Run a SOSL search (GET /services/data/vXX.X/search?q=FIND ...).",
        "parameters": {
            "type": "object",
            "properties": {"search": {"type": "string", "description": "The SOSL search"}},
            "required": ["search"],
        },
    },
    {
        "name": "update_record",
        "description": "Change fields of a record (PATCH /services/data/vXX.X/sobjects/"
        "{sobject}/{id}).",
        "parameters": {
            "type": "object",
            "properties": {
                "sobject": {"type": "string"},
                "id": {"type": "string"},
                "fields": {"type": "object"},
            },
            "required": ["sobject", "id", "fields"],
        },
    },
    {
        "name": "read_metadata",
        "description": "Read custom objects or fields as their metadata (the Metadata API's "
        "readMetadata: POST /services/Soap/m/XX.X); a CustomField is named Object.Field__c.",
        "parameters": {
            "type": "object",
            "properties": {
                "metadata_type": {"type": "string", "enum": ["CustomObject", "CustomField"]},
                "full_names": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["metadata_type", "full_names"],
        },
    },
    {
        "name": "create_metadata",
        "description": "Create custom objects or fields (the Metadata API's createMetadata: "
        "POST /services/Soap/m/XX.X), each given by its metadata's elements (fullName, label, "
        "type, length, ...).",
        "parameters": METADATA_COMPONENTS,
    },
    {
        "name": "update_metadata",
        "description": "Replace custom objects' or fields' metadata (the Metadata API's "
        "updateMetadata: POST /services/Soap/m/XX.X): each component whole, as read_metadata "
        "gives it, with the changes made.",
        "parameters": METADATA_COMPONENTS,
    },
    {
        "name": "respond",
        "description": "Give the final answer (POST /__localforce/episodes/{id}/answer, which "
        "the operator's harness sends). The first answer is final: it is graded and recorded, "
        "the episode ends, and its token reaches the org no more.",
        "parameters": {
            "type": "object",
            "properties": {"response": {"type": "string"}},
            "required": ["response"],
        },
    },
)


# Each REST tool as a tool set names it (app.tasks.tools).
REST_TOOL_ACCESS = {
    "soql_query": READS,
    "sosl_search": READS,
    "update_record": "update_record",
    # Listed with the tool set that changes the schema (reading a component is the first step
    # of updating it); a read, which the MCP endpoint gives every task.
    "read_metadata": "update_metadata",
    "create_metadata": "create_metadata",
    "update_metadata": "update_metadata",
    "respond": ANSWER,
}


def rest_tools(tool_set: frozenset[str]) -> list[dict[str, Any]]:
    """The REST tools a task's tool set holds."""
    return [tool for tool in TOOLS if REST_TOOL_ACCESS[tool["name"]] in tool_set]


class InvalidTask(SalesforceError):
    error_code = "INVALID_INPUT"
    status_code = 400


MAX_SEED = 2**53 - 1  # as a sandbox's: what every JSON reader holds exactly


def _check_seed(seed: object) -> None:
    """A task row's seed, if it names one: a whole number as a sandbox's."""
    if seed is not None and (
        not isinstance(seed, int) or isinstance(seed, bool) or abs(seed) > MAX_SEED
    ):
        raise InvalidTask(f"task.seed: the org's seed, a whole number within +/-{MAX_SEED}")


@dataclass(frozen=True)
class EpisodeTask:
    """A task row, checked: what an episode is made for and graded by."""

    row: dict[str, Any]

    @classmethod
    def parse(cls, value: object) -> EpisodeTask:
        if not isinstance(value, dict):
            raise InvalidTask("task: a task row (an object of a task file) or its idx")
        for name, kind in TASK_FIELDS.items():
            field = value.get(name)
            if not isinstance(field, kind) or isinstance(field, bool):
                raise InvalidTask(f"task.{name}: missing, or not a JSON {kind.__name__}")
        if "answer" not in value:
            raise InvalidTask("task.answer: missing (null if the task has none)")
        if value["reward_metric"] not in METRICS:
            raise InvalidTask(f"task.reward_metric: one of {', '.join(METRICS)}")
        if value["reward_metric"] == "exact_match" and answer_kind(value["task"]) is None:
            raise InvalidTask(f"task.task: no exact-match answer kind for {value['task']}")
        if value["reward_metric"] == "diff_match" and not _are_changes(value["answer"]):
            raise InvalidTask(
                'task.answer: a write task\'s answer lists its changes, [{"type", "id", "fields"}]'
            )
        metadata = value["metadata"]
        if not all(isinstance(metadata.get(key, ""), str) for key in ("required", "optional")):
            raise InvalidTask("task.metadata: required and optional are text")
        _check_seed(value.get("seed"))
        return cls(row=dict(value))

    @property
    def today(self) -> date | None:
        """The day the task's metadata.required names as today."""
        found = TODAY.search(self.row["metadata"].get("required", ""))
        if found is None:
            return None
        try:
            return date.fromisoformat(found.group(1))
        except ValueError as error:
            raise InvalidTask(f"task.metadata.required: {error}") from error

    @property
    def seed(self) -> int | None:
        """The seed of the org the task is on, where its row names one."""
        return self.row.get("seed")

    @property
    def clock(self) -> datetime | None:
        today = self.today
        return None if today is None else datetime.combine(today, CLOCK_TIME)

    @property
    def tools(self) -> frozenset[str]:
        """What the agent may call (its type's tool set)."""
        return tool_set_of(self.row)

    def given(self) -> dict[str, Any]:
        """What the agent is given: the task without its answer."""
        return {key: value for key, value in self.row.items() if key != "answer"}

    def grade(
        self, response: str, diff: dict[str, Any], judge: Judge | None = None
    ) -> dict[str, Any]:
        try:
            reward = score(self.row, response, diff, judge)
        except GradingFailed as error:  # checked when parsed; a row stored before may differ
            raise InvalidTask(str(error)) from error
        return {"reward": reward, "metric": self.row["reward_metric"], "response": response}


def _are_changes(answer: object) -> bool:
    return isinstance(answer, list) and all(
        isinstance(change, dict)
        and isinstance(change.get("type"), str)
        and isinstance(change.get("id"), str)
        and isinstance(change.get("fields"), dict)
        for change in answer
    )


def task_rows(task_file: Path | None) -> list[dict[str, Any]]:
    """The rows of the server's task file (LOCALFORCE_TASK_FILE)."""
    if task_file is None:
        raise InvalidTask(
            "task: an idx needs the server's task file (LOCALFORCE_TASK_FILE); send the task "
            "row itself instead"
        )
    try:
        rows = json.loads(task_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidTask(f"The task file {task_file} cannot be read: {error}") from error
    if not isinstance(rows, list):
        raise InvalidTask(f"The task file {task_file} is not a JSON array of tasks")
    return [row for row in rows if isinstance(row, dict)]


def task_from_file(task_file: Path | None, idx: int) -> EpisodeTask:
    """The row `idx` of the server's task file (LOCALFORCE_TASK_FILE)."""
    found = [row for row in task_rows(task_file) if row.get("idx") == idx]
    if not found:
        raise InvalidTask(f"task: no task has idx {idx} in {task_file}")
    return EpisodeTask.parse(found[0])


@dataclass(frozen=True)
class EpisodeLabels:
    """What an episode's result is filed under: the run and the model or agent (given at
    creation), and the sandbox's org, seed and clock."""

    org: str
    seed: int
    clock: datetime | None
    run: str | None = None
    agent: str | None = None


def save_episode(
    conn: Connection, episode_id: str, task: EpisodeTask, labels: EpisodeLabels, now: datetime
) -> None:
    """File a new episode; an id with a result kept already is refused (a result never
    changes: purge it first)."""
    filed = upsert_into(conn.dialect.name, EPISODES).values(
        id=episode_id,
        task=json.dumps(task.row),
        created_at=now,
        run=labels.run,
        agent=labels.agent,
        org=labels.org,
        seed=labels.seed,
        clock=labels.clock,
    )
    # The insert is the check: of two hosts filing one id at once, one is refused here.
    if conn.execute(filed.on_conflict_do_nothing().returning(EPISODES.c.id)).first() is None:
        raise SalesforceError(
            f"An episode with id {episode_id} has a result kept: choose another id, or purge "
            f"it first (DELETE /__localforce/results/{episode_id})",
            error_code="DUPLICATE_VALUE",
            status_code=409,
        )


def file_episode(
    platform: Engine, episode_id: str, task: EpisodeTask, labels: EpisodeLabels, now: datetime
) -> None:
    """File a new episode (see save_episode), in a platform transaction of its own."""
    with platform_transaction(platform) as conn:
        save_episode(conn, episode_id, task, labels, now)


def find_episode(conn: Connection, episode_id: str) -> EpisodeTask:
    found = conn.execute(select(EPISODES.c.task).where(EPISODES.c.id == episode_id)).scalar()
    if found is None:
        raise NotFound(f"No episode has the id {episode_id}")
    return EpisodeTask(row=json.loads(found))


@dataclass(frozen=True)
class EpisodeCaller:
    """An episode as its agent's calls are checked against it: its task's type and tool set,
    and whether it is answered."""

    episode_id: str
    task: str
    tools: frozenset[str]
    answered: bool


def episode_caller(conn: Connection, sandbox_id: str) -> EpisodeCaller | None:
    """The episode of the sandbox, as it stands now; None for a sandbox that is no episode's."""
    row = conn.execute(
        select(EPISODES.c.task, EPISODES.c.answered_at).where(EPISODES.c.id == sandbox_id)
    ).first()
    if row is None:
        return None
    task = json.loads(row.task)
    return EpisodeCaller(
        episode_id=sandbox_id,
        task=str(task.get("task")),
        tools=tool_set_of(task),
        answered=row.answered_at is not None,
    )


@dataclass(frozen=True)
class EpisodeSummary:
    """An episode as a list shows it: its task's idx and type, and its reward once answered."""

    id: str
    idx: int | None
    task: str
    created_at: datetime
    reward: float | None
    answered_at: datetime | None


def episode_summaries(conn: Connection, episode_id: str | None = None) -> list[EpisodeSummary]:
    """Every episode (or the one of that id), newest first."""
    statement = select(
        EPISODES.c.id,
        EPISODES.c.task,
        EPISODES.c.created_at,
        EPISODES.c.reward,
        EPISODES.c.answered_at,
    ).order_by(EPISODES.c.created_at.desc(), EPISODES.c.id)
    if episode_id is not None:
        statement = statement.where(EPISODES.c.id == episode_id)
    rows = conn.execute(statement)
    summaries = []
    for row in rows:
        task = json.loads(row.task)
        idx = task.get("idx")
        summaries.append(
            EpisodeSummary(
                id=row.id,
                idx=idx if isinstance(idx, int) else None,
                task=str(task.get("task", "")),
                created_at=row.created_at,
                reward=row.reward,
                answered_at=row.answered_at,
            )
        )
    return summaries
