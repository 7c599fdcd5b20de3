"""Benchmark episodes under /__localforce/episodes: a sandbox made for a task, with its clock at
the task's today; the agent's answer graded, with the sandbox's diff and call log."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from app.api.control import SandboxCreate, create_with_session, require_admin
from app.api.deps import StateDep
from app.api.routing import SalesforceJSONResponse, SalesforceRouter, public_base_url
from app.api.state import AppState
from app.errors import NotFound
from app.storage.database import platform_transaction
from app.tasks.episodes import (
    TOOLS,
    EpisodeTask,
    find_episode,
    forget_episode,
    record_grade,
    save_episode,
    task_from_file,
    task_rows,
)
from app.tasks.judge import Judge

router = SalesforceRouter(
    prefix="/__localforce", tags=["localforce episodes"], dependencies=[Depends(require_admin)]
)


class EpisodeCreate(SandboxCreate):
    """The body of `POST /__localforce/episodes`: the task (a task file's row, or its idx in
    the server's LOCALFORCE_TASK_FILE), and the sandbox's id, org and seed as for a sandbox.
    The clock defaults to noon UTC of the task's today, pinned."""

    task: dict[str, Any] | StrictInt = Field(description="A task row, or its idx in the task file")


class EpisodeAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="The agent's final answer")


def _task(state: AppState, body: EpisodeCreate) -> EpisodeTask:
    if isinstance(body.task, int):
        return task_from_file(state.settings.task_file, body.task)
    return EpisodeTask.parse(body.task)


def _create(state: AppState, body: EpisodeCreate) -> tuple[dict[str, Any], EpisodeTask]:
    task = _task(state, body)
    # Validated already: a copy with the task's clock need not be validated again.
    sandbox_body = body.model_copy(update={"clock": body.clock or task.clock})
    created = create_with_session(state, sandbox_body)
    sandbox = created.sandbox
    try:
        with platform_transaction(state.platform) as conn:
            forget_episode(conn, sandbox.id)  # a row left by a sandbox deleted on its own
            save_episode(conn, sandbox.id, task, state.clock())
    except BaseException:
        state.sandboxes.delete(sandbox.id)
        raise
    return {"sandbox": sandbox.describe(), **created.logins()}, task


def _episode(task: EpisodeTask) -> dict[str, Any]:
    return {"prompt": task.row["query"], "metadata": task.row["metadata"], "task": task.given()}


@router.post("/episodes", status_code=201)
async def create_episode(
    request: Request, state: StateDep, body: Annotated[EpisodeCreate, Body()]
) -> SalesforceJSONResponse:
    """Start an episode: a fresh sandbox of the org for the task, and what the agent gets."""
    made, task = await run_in_threadpool(_create, state, body)
    sandbox = made["sandbox"]
    return SalesforceJSONResponse(
        {
            "id": sandbox["id"],
            **_episode(task),
            "tools": list(TOOLS),
            "instance_url": public_base_url(request),
            "access_token": made["access_token"],
            "username": made["username"],
            "password": made["password"],  # shown this once
            "sandbox": sandbox,
        },
        status_code=201,
    )


def _task_list(state: AppState) -> dict[str, Any]:
    rows = task_rows(state.settings.task_file)
    return {"tasks": [{"idx": row.get("idx"), "task": row.get("task")} for row in rows]}


@router.get("/tasks")
async def list_tasks(state: StateDep) -> dict[str, Any]:
    """The tasks of the server's task file (LOCALFORCE_TASK_FILE) an episode may name: each
    one's idx and type, its answer left out."""
    return await run_in_threadpool(_task_list, state)


def _read(state: AppState, episode_id: str) -> EpisodeTask:
    with state.platform.connect() as conn:
        return find_episode(conn, episode_id)


@router.get("/episodes/{episode_id}")
async def get_episode(episode_id: str, state: StateDep) -> dict[str, Any]:
    return await run_in_threadpool(_show, state, episode_id)


def _show(state: AppState, episode_id: str) -> dict[str, Any]:
    task = _read(state, episode_id)
    sandbox = state.sandboxes.find(episode_id)  # None once it expired or was deleted
    return {
        "id": episode_id,
        **_episode(task),
        "sandbox": None if sandbox is None else sandbox.describe(),
    }


def _answer(state: AppState, episode_id: str, response: str) -> dict[str, Any]:
    task = _read(state, episode_id)
    diff = state.sandboxes.diff(episode_id)
    graded = task.grade(response, diff, Judge.from_settings(state.settings))
    with platform_transaction(state.platform) as conn:
        record_grade(conn, episode_id, graded, state.clock())
    return {
        "id": episode_id,
        **graded,
        "diff": diff,
        "calls": state.sandboxes.call_log(episode_id),
    }


@router.post("/episodes/{episode_id}/answer")
async def answer_episode(
    episode_id: str, state: StateDep, body: Annotated[EpisodeAnswer, Body()]
) -> SalesforceJSONResponse:
    """Grade the agent's answer: the reward, the expected answer, and what the episode did
    to its sandbox (its diff and call log)."""
    return SalesforceJSONResponse(
        await run_in_threadpool(_answer, state, episode_id, body.response)
    )


def _delete(state: AppState, episode_id: str) -> None:
    with platform_transaction(state.platform) as conn:
        had_row = forget_episode(conn, episode_id)
    if state.sandboxes.find(episode_id) is not None:
        state.sandboxes.delete(episode_id)
        state.sessions.clear()
    elif not had_row:
        raise NotFound(f"No episode has the id {episode_id}")


@router.delete("/episodes/{episode_id}", status_code=204)
async def delete_episode(episode_id: str, state: StateDep) -> Response:
    """End an episode: its sandbox is deleted."""
    await run_in_threadpool(_delete, state, episode_id)
    return Response(status_code=204)
