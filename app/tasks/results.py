"""The results store: each episode's result, in the platform database, the same for every
channel that answers (REST, MCP, OpenEnv). The first answer is final and is kept with what the
episode did (its diff and call log as they stood then, its tool calls), after its sandbox is
deleted, until an explicit purge."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, delete, insert, select, update

from app.errors import SalesforceError
from app.storage.database import platform_transaction
from app.storage.pending import WriteQueue, storable
from app.storage.platform import EpisodeRecord, ToolCallRecord

EPISODES = EpisodeRecord.__table__  # type: ignore[attr-defined]
TOOL_CALLS = ToolCallRecord.__table__  # type: ignore[attr-defined]
# A tool's arguments and result are kept up to this many characters (a query_all of
# thousands of records would otherwise grow the store by megabytes a call).
RESULT_CHARS = 100_000
TOOL_NAME_CHARS = 80  # lf_tool_call.tool
# The columns of an export, in order (CSV writes nested values as JSON).
COLUMNS = (
    "episode",
    "run",
    "agent",
    "idx",
    "task",
    "org",
    "seed",
    "clock",
    "channel",
    "answer",
    "expected",
    "reward",
    "metric",
    "steps",
    "tool_calls",
    "calls",
    "diff",
    "created_at",
    "answered_at",
    "seconds",
)


class EpisodeEnded(SalesforceError):
    """The episode was answered: its first answer is final."""

    error_code = "EPISODE_ENDED"
    status_code = 409

    def __init__(self, episode_id: str) -> None:
        super().__init__(
            f"Episode {episode_id} has ended: it was answered, and its first answer is final. "
            "It takes no other answer, reset, restore or tool call; start another episode."
        )


def answered(conn: Connection, episode_id: str) -> bool:
    found = conn.execute(select(EPISODES.c.answered_at).where(EPISODES.c.id == episode_id)).first()
    return found is not None and found.answered_at is not None


def ensure_open(conn: Connection, episode_id: str) -> None:
    """Raise EpisodeEnded if `episode_id` names an answered episode (a sandbox that is no
    episode's is always open)."""
    if answered(conn, episode_id):
        raise EpisodeEnded(episode_id)


def record_answer(
    conn: Connection,
    episode_id: str,
    *,
    graded: Mapping[str, Any],
    channel: str,
    outcome: Mapping[str, Any],
    now: datetime,
) -> None:
    """Keep the episode's answer, once: a second answer, even one racing the first on
    another worker, finds it answered and changes nothing."""
    done = conn.execute(
        update(EPISODES)
        .where(EPISODES.c.id == episode_id, EPISODES.c.answered_at.is_(None))
        .values(
            response=graded["response"],
            reward=graded["reward"],
            metric=graded["metric"],
            channel=channel,
            outcome=json.dumps(outcome, default=str),
            answered_at=now,
        )
    )
    if not done.rowcount:
        raise EpisodeEnded(episode_id)


def close_episode(
    platform: Engine,
    episode_id: str,
    *,
    graded: Mapping[str, Any],
    channel: str,
    outcome: Mapping[str, Any],
    now: datetime,
    end_sessions: Callable[[Connection, str], object],
) -> None:
    """Keep the episode's answer (see record_answer) and end its sessions with `end_sessions`
    (the sessions are the services'), in one platform transaction: both, or neither."""
    with platform_transaction(platform) as conn:
        record_answer(conn, episode_id, graded=graded, channel=channel, outcome=outcome, now=now)
        end_sessions(conn, episode_id)


@dataclass(frozen=True)
class ToolCall:
    """A tool call as it ended: its arguments and result as the tool had them (turned into
    text when written, off the call's path)."""

    at: datetime
    tool: str
    arguments: Any
    result: Any  # what the trajectory keeps: the structured result, or the text of an error
    is_error: bool
    latency_ms: float


class ToolCallQueue(WriteQueue[ToolCall]):
    """This process's tool calls on their way to the episodes' trajectories, written in
    batches with the call log (app.main's flusher), and before this process reads a result."""

    def write(self, conn: Connection, rows: list[tuple[str, ToolCall]]) -> None:
        """The rows of the episodes that still have a result: a call still under way when its
        result was purged leaves no row behind (the episodes' rows are held till the insert
        commits, so no purge comes between)."""
        ids = {episode for episode, _ in rows}
        kept = set(
            conn.execute(
                select(EPISODES.c.id).where(EPISODES.c.id.in_(ids)).with_for_update(read=True)
            ).scalars()
        )
        written = [_tool_call_row(episode, call) for episode, call in rows if episode in kept]
        if written:
            conn.execute(insert(TOOL_CALLS), written)


def _tool_call_row(episode_id: str, call: ToolCall) -> dict[str, Any]:
    text = call.result if isinstance(call.result, str) else _json_text(call.result)
    return {
        "episode_id": episode_id,
        "at": call.at,
        # A name is the caller's: any length and any character may come.
        "tool": storable(call.tool[:TOOL_NAME_CHARS]),
        "arguments": _capped(_json_text(call.arguments)),
        "result": storable(_capped(text)),
        "is_error": call.is_error,
        "latency_ms": call.latency_ms,
    }


def _json_text(value: Any) -> str:
    """`value` as JSON text: by orjson (a result of thousands of records is written in a
    fraction of the time), or by the standard library for what orjson refuses (an integer
    past 64 bits, a key that is not a string)."""
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:
        return json.dumps(value, default=str)


def _capped(text: str) -> str:
    if len(text) <= RESULT_CHARS:
        return text
    return text[:RESULT_CHARS] + f"... [{len(text) - RESULT_CHARS} more characters]"


def tool_calls(conn: Connection, episode_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Each episode's tool calls, in order."""
    ids = list(episode_ids)
    found: dict[str, list[dict[str, Any]]] = {episode_id: [] for episode_id in ids}
    if not ids:
        return found
    rows = conn.execute(
        select(TOOL_CALLS)
        .where(TOOL_CALLS.c.episode_id.in_(ids))
        .order_by(TOOL_CALLS.c.episode_id, TOOL_CALLS.c.at, TOOL_CALLS.c.seq)
    )
    for row in rows:
        found[row.episode_id].append(
            {
                "tool": row.tool,
                "arguments": _json_or_text(row.arguments),
                "result": _json_or_text(row.result),
                "is_error": bool(row.is_error),
                "latency_ms": round(row.latency_ms, 3),
                "at": _iso(row.at),
            }
        )
    return found


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="milliseconds") + "Z"


def result_rows(
    conn: Connection,
    *,
    episode_id: str | None = None,
    run: str | None = None,
    agent: str | None = None,
    task: str | None = None,
    org: str | None = None,
    answered_only: bool = False,
) -> list[dict[str, Any]]:
    """One row per episode (the export's), oldest first, filtered by what is given."""
    statement = select(EPISODES).order_by(EPISODES.c.created_at, EPISODES.c.id)
    for column, value in (
        (EPISODES.c.id, episode_id),
        (EPISODES.c.run, run),
        (EPISODES.c.agent, agent),
        (EPISODES.c.org, org),
    ):
        if value is not None:
            statement = statement.where(column == value)
    if answered_only:
        statement = statement.where(EPISODES.c.answered_at.is_not(None))
    records = [row for row in conn.execute(statement) if task in (None, _task(row)["task"])]
    calls_of = tool_calls(conn, [row.id for row in records])
    return [_result_row(row, calls_of[row.id]) for row in records]


def _task(row: Any) -> dict[str, Any]:
    task: dict[str, Any] = json.loads(row.task)
    return task


def _result_row(row: Any, calls: list[dict[str, Any]]) -> dict[str, Any]:
    task = _task(row)
    outcome = json.loads(row.outcome) if row.outcome else {}
    api_calls = outcome.get("calls", [])
    seconds = (
        None
        if row.answered_at is None
        else round((row.answered_at - row.created_at).total_seconds(), 3)
    )
    return {
        "episode": row.id,
        "run": row.run,
        "agent": row.agent,
        "idx": task.get("idx"),
        "task": task.get("task"),
        "org": row.org,
        "seed": row.seed,
        "clock": _iso(row.clock),
        "channel": row.channel,
        "answer": row.response,
        "expected": task.get("answer"),
        "reward": row.reward,
        "metric": row.metric or task.get("reward_metric"),
        # The trajectory's length: its tool calls, or its API calls where it used none.
        "steps": len(calls) if calls else len(api_calls),
        "tool_calls": calls,
        "calls": api_calls,
        "diff": outcome.get("diff"),
        "created_at": _iso(row.created_at),
        "answered_at": _iso(row.answered_at),
        "seconds": seconds,
    }


def purge(conn: Connection, *, episode_id: str | None = None, run: str | None = None) -> int:
    """Delete results (and their tool calls): one episode's, or a run's; how many."""
    where = EPISODES.c.id == episode_id if episode_id is not None else EPISODES.c.run == run
    ids = [row.id for row in conn.execute(select(EPISODES.c.id).where(where))]
    if ids:
        conn.execute(delete(TOOL_CALLS).where(TOOL_CALLS.c.episode_id.in_(ids)))
        conn.execute(delete(EPISODES).where(EPISODES.c.id.in_(ids)))
    return len(ids)


def purge_results(
    platform: Engine, *, episode_id: str | None = None, run: str | None = None
) -> int:
    """Delete results, as purge does, in a platform transaction of their own; how many."""
    with platform_transaction(platform) as conn:
        return purge(conn, episode_id=episode_id, run=run)


def export(rows: Iterable[Mapping[str, Any]], fmt: str) -> str:
    """Rows as JSON Lines or CSV (nested values as JSON)."""
    if fmt == "jsonl":
        return "".join(json.dumps(row, default=str) + "\n" for row in rows)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(
            {
                key: json.dumps(value) if isinstance(value, list | dict) else value
                for key, value in row.items()
            }
        )
    return out.getvalue()
