"""Benchmark episodes under /__localforce/episodes: a sandbox made for a task, with its clock at
the task's today; the agent's answer graded once and kept, with what the episode did, in the
results store (/__localforce/results), which outlives the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from app.api.control import ENDED, SandboxCreate, create_with_session, require_admin
from app.api.deps import StateDep
from app.api.routing import JSON, SalesforceJSONResponse, SalesforceRouter, public_base_url
from app.api.state import AppState
from app.errors import NotFound
from app.services.auth import revoke_sandbox_sessions
from app.tasks.episodes import (
    EpisodeLabels,
    EpisodeTask,
    InvalidTask,
    file_episode,
    find_episode,
    rest_tools,
    task_from_file,
    task_rows,
)
from app.tasks.judge import Judge
from app.tasks.results import close_episode, ensure_open, export, purge_results, result_rows
from app.tasks.splits import PARTS, SPLITS, Split

router = SalesforceRouter(
    prefix="/__localforce", tags=["localforce episodes"], dependencies=[Depends(require_admin)]
)


class EpisodeCreate(SandboxCreate):
    """The body of `POST /__localforce/episodes`: the task (a task file's row, or its idx in
    the server's LOCALFORCE_TASK_FILE), the labels its result is filed under, and the
    sandbox's id, org and seed as for a sandbox (the seed defaults to the one the task row
    names, a split's train part drawn from sibling orgs). The clock defaults to noon UTC of
    the task's today, pinned."""

    task: dict[str, Any] | StrictInt = Field(
        description="A task row, or its idx in the task file (or in `split`'s part)"
    )
    split: str | None = Field(
        default=None,
        max_length=80,
        description="A split's part (crmarena-original@v1:test) whose task `task` is the idx of: "
        "the episode is on the split's org and the row's seed",
    )
    run: str | None = Field(default=None, max_length=80, description="The run it belongs to")
    agent: str | None = Field(
        default=None, max_length=120, description="The model or agent's label"
    )


class EpisodeAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="The agent's final answer")


def _task(state: AppState, body: EpisodeCreate) -> tuple[EpisodeTask, Split | None]:
    """The task, and the split it is of (None: a task row, or the server's task file's)."""
    if body.split is not None:
        if not isinstance(body.task, int):
            raise InvalidTask(f"task: the idx of one of {body.split}'s tasks, with split")
        split, path = state.splits.path(body.split)
        return task_from_file(path, body.task), split
    if isinstance(body.task, int):
        return task_from_file(state.settings.task_file, body.task), None
    return EpisodeTask.parse(body.task), None


def _create(state: AppState, body: EpisodeCreate) -> tuple[dict[str, Any], EpisodeTask]:
    task, split = _task(state, body)
    org = body.org or (split.org if split else None)
    seed = next((s for s in (body.seed, task.seed, split and split.seed) if s is not None), None)
    # Validated already: a copy with the task's clock, org and seed need not be validated again.
    sandbox_body = body.model_copy(
        update={"clock": body.clock or task.clock, "org": org, "seed": seed}
    )
    created = create_with_session(state, sandbox_body)
    sandbox = created.sandbox
    labels = EpisodeLabels(
        org=sandbox.org,
        seed=sandbox.seed,
        clock=sandbox.clock.start,
        run=body.run,
        agent=body.agent,
    )
    try:
        file_episode(state.platform, sandbox.id, task, labels, state.clock())
    except BaseException:
        state.sandboxes.delete(sandbox.id)
        raise
    return {"sandbox": sandbox.describe(), **created.logins()}, task


def _episode(task: EpisodeTask) -> dict[str, Any]:
    """What the agent is given: never the answer."""
    return {
        "prompt": task.row["query"],
        "metadata": task.row["metadata"],
        "task": task.given(),
        "tools": rest_tools(task.tools),
    }


@router.post("/episodes", status_code=201)
async def create_episode(
    request: Request, state: StateDep, body: Annotated[EpisodeCreate, Body()]
) -> SalesforceJSONResponse:
    """Start an episode: a fresh sandbox of the org for the task, and what the agent gets
    (the task's tools only)."""
    made, task = await run_in_threadpool(_create, state, body)
    sandbox = made["sandbox"]
    return SalesforceJSONResponse(
        {
            "id": sandbox["id"],
            **_episode(task),
            "instance_url": public_base_url(request),
            "access_token": made["access_token"],
            "username": made["username"],
            "password": made["password"],  # shown this once
            "sandbox": sandbox,
        },
        status_code=201,
    )


def _task_list(task_file: Path | None) -> dict[str, Any]:
    """Each task's idx, type, query and metadata (what its agent is given), and the seed of its
    org where the row names one: never its answer."""
    if task_file is None:  # no task an episode could name by its idx
        return {"tasks": []}
    named = ("idx", "task", "query", "metadata", "seed")
    return {
        "tasks": [{key: row[key] for key in named if key in row} for row in task_rows(task_file)]
    }


@router.get("/tasks")
async def list_tasks(state: StateDep) -> dict[str, Any]:
    """The tasks of the server's task file (LOCALFORCE_TASK_FILE) an episode may name: each
    one's idx, type, query and metadata, its answer left out (none without a task file)."""
    return await run_in_threadpool(_task_list, state.settings.task_file)


def _split_list(state: AppState) -> dict[str, Any]:
    return {
        "splits": [
            {
                "name": f"{split.id}:{part}",
                "org": split.org,
                "seeds": list(split.seeds(part)),
                "types": list(split.types),
                "size": split.size(part),
                "sha256": split.sha256[part],
                "drawn": state.splits.drawn(split, part),
            }
            for split in SPLITS
            for part in PARTS
        ]
    }


@router.get("/splits")
async def list_splits(state: StateDep) -> dict[str, Any]:
    """The fixed splits' parts an episode may name: each one's org, seeds, task types, size,
    published SHA-256, and whether this server has drawn it yet."""
    return await run_in_threadpool(_split_list, state)


@router.get("/splits/{name}/tasks")
async def list_split_tasks(name: str, state: StateDep) -> dict[str, Any]:
    """A split's part's tasks an episode may name (`"split": name, "task": idx`): each one's
    idx, type, query, metadata and seed, the answers left out. The first call draws the part
    (seconds to a couple of minutes, by its size) and keeps it in the data directory."""

    def listed() -> dict[str, Any]:
        return _task_list(state.splits.path(name)[1])

    return await run_in_threadpool(listed)


@router.get("/episodes/{episode_id}")
async def get_episode(episode_id: str, state: StateDep) -> dict[str, Any]:
    """The operator's view of an episode: what the agent was given, its sandbox while it
    lives, and its result (expected answer included)."""
    return await run_in_threadpool(_show, state, episode_id)


def _show(state: AppState, episode_id: str) -> dict[str, Any]:
    state.tool_calls.flush()  # this process's last tool calls are the result's too
    with state.platform.connect() as conn:
        task = find_episode(conn, episode_id)
        (result,) = result_rows(conn, episode_id=episode_id)
    sandbox = state.sandboxes.find(episode_id)  # None once it expired or was deleted
    return {
        "id": episode_id,
        **_episode(task),
        "sandbox": None if sandbox is None else sandbox.describe(),
        "result": result,
    }


def answer(state: AppState, episode_id: str, response: str, channel: str) -> dict[str, Any]:
    """Grade an episode's answer and keep it: the first answer is final (a later one answers
    409 EPISODE_ENDED and changes nothing), and the episode's sessions end with it. What is
    kept is the outcome as it stood at the answer: the reward, the diff, the call log."""
    with state.platform.connect() as conn:
        task = find_episode(conn, episode_id)
        ensure_open(conn, episode_id)  # answered already: not graded again
    diff = state.record.diff(episode_id)
    calls = state.record.call_log(episode_id)
    graded = task.grade(response, diff, Judge.from_settings(state.settings))
    close_episode(
        state.platform,
        episode_id,
        graded=graded,
        channel=channel,
        outcome={"diff": diff, "calls": calls},
        now=state.clock(),
        end_sessions=revoke_sandbox_sessions,
    )
    state.sessions.clear()
    return {"id": episode_id, **graded, "done": True, "diff": diff, "calls": calls}


@router.post("/episodes/{episode_id}/answer", responses={409: ENDED})
async def answer_episode(
    episode_id: str, state: StateDep, body: Annotated[EpisodeAnswer, Body()]
) -> SalesforceJSONResponse:
    """Grade the episode's answer, once: the reward and what the episode did to its sandbox
    (its diff and call log). The expected answer is in the operator's view of the episode
    and the results, not here (a harness may pass this on to its agent)."""
    return SalesforceJSONResponse(
        await run_in_threadpool(answer, state, episode_id, body.response, "rest")
    )


def _delete(state: AppState, episode_id: str) -> None:
    with state.platform.connect() as conn:
        find_episode(conn, episode_id)  # NotFound for no episode
    if state.sandboxes.find(episode_id) is not None:
        state.sandboxes.delete(episode_id)
        state.sessions.clear()


@router.delete("/episodes/{episode_id}", status_code=204)
async def delete_episode(episode_id: str, state: StateDep) -> Response:
    """End an episode: its sandbox is deleted; its result is kept (purge it at
    /__localforce/results)."""
    await run_in_threadpool(_delete, state, episode_id)
    return Response(status_code=204)


def _results(state: AppState, **filters: Any) -> list[dict[str, Any]]:
    state.tool_calls.flush()  # this process's last tool calls are the results' too
    with state.platform.connect() as conn:
        return result_rows(conn, **filters)


# The answer of GET /results in each of its formats.
RESULTS_FORMATS: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The results, as `format` asks",
        "content": {
            JSON: {"schema": {"type": "object", "required": ["results"]}},
            "application/x-ndjson": {"schema": {"type": "string"}},
            "text/csv": {"schema": {"type": "string"}},
        },
    }
}


@router.get("/results", responses=RESULTS_FORMATS)
async def list_results(
    state: StateDep,
    run: str | None = None,
    agent: str | None = None,
    task: Annotated[str | None, Query(description="A task type")] = None,
    org: str | None = None,
    answered: bool = False,
    format: Literal["json", "jsonl", "csv"] = "json",
) -> Response:
    """Every episode's result (one row each, oldest first), with its trajectory: the
    answer, the expected answer, the reward, the tool calls, the API calls and the diff.
    `answered=true` keeps the answered ones; `format=jsonl|csv` as `localforce results
    export` writes them."""
    rows = await run_in_threadpool(
        _results, state, run=run, agent=agent, task=task, org=org, answered_only=answered
    )
    if format == "json":
        return SalesforceJSONResponse({"results": rows})
    media = "application/x-ndjson" if format == "jsonl" else "text/csv"
    return Response(export(rows, format), media_type=media)


def _purge(state: AppState, episode_id: str | None, run: str | None) -> int:
    state.tool_calls.flush()  # none of this process's may land after the purge
    return purge_results(state.platform, episode_id=episode_id, run=run)


@router.delete("/results/{episode_id}", status_code=204)
async def purge_result(episode_id: str, state: StateDep) -> Response:
    """Delete an episode's result, on purpose (its sandbox, if it lives, stays)."""
    if not await run_in_threadpool(_purge, state, episode_id, None):
        raise NotFound(f"No episode has the id {episode_id}")
    return Response(status_code=204)


@router.delete("/results")
async def purge_run(run: Annotated[str, Query(min_length=1)], state: StateDep) -> dict[str, int]:
    """Delete a run's results, on purpose."""
    return {"purged": await run_in_threadpool(_purge, state, None, run)}
