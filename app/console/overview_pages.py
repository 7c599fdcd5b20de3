"""The console's front page, its login, task results and the coverage page."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.api.control import same_key
from app.api.deps import StateDep
from app.api.state import AppState
from app.console import coverage
from app.console.pages import (
    COOKIE,
    LOGIN_PATH,
    ConsoleRoute,
    cookie_for,
    render,
    require_admin_key,
)
from app.errors import BodyTooLarge, SalesforceError
from app.tasks.episodes import EpisodeSummary, episode_summaries, task_rows
from app.tasks.grading import Grades, GradingFailed, grade
from app.tasks.judge import Judge

router = APIRouter(route_class=ConsoleRoute, include_in_schema=False)
guarded = APIRouter(
    route_class=ConsoleRoute, dependencies=[Depends(require_admin_key)], include_in_schema=False
)


@guarded.get("/console", response_class=HTMLResponse)
def home(request: Request, state: StateDep) -> HTMLResponse:
    with state.platform.connect() as conn:
        episodes = episode_summaries(conn)
    return render(
        request,
        "home.html",
        settings=state.settings,
        sandboxes=state.sandboxes.all(),
        episodes=episodes,
        registry=state.registry,
    )


@router.get(LOGIN_PATH, response_class=HTMLResponse)
def login_page(request: Request, next: str = "/console") -> HTMLResponse:
    return render(request, "login.html", next=_local(next), failed=False)


def _local(target: str) -> str:
    """Only a console path is a place to go back to after logging in (percent-encoded: it
    goes into a Location header)."""
    if not target.startswith("/console") or "//" in target or "\\" in target:
        return "/console"
    return quote(target, safe="/?=&%;+-_.~", errors="surrogatepass")


@router.post(LOGIN_PATH, response_model=None)
def login(
    request: Request,
    state: StateDep,
    key: Annotated[str, Form(max_length=1000)],
    next: Annotated[str, Form(max_length=2000)] = "/console",
) -> Response:
    expected = state.settings.admin_key
    if state.settings.insecure_control_plane:  # an open console needs no key
        return RedirectResponse(_local(next), status_code=303)
    if not same_key(key, expected):
        return render(request, "login.html", status_code=401, next=_local(next), failed=True)
    response = RedirectResponse(_local(next), status_code=303)
    response.set_cookie(
        COOKIE, cookie_for(expected), httponly=True, samesite="strict", path="/console"
    )
    return response


@dataclass
class TypeScore:
    """One task type of the task file, and its answered episodes' mean reward."""

    task: str
    metric: str
    tasks: int
    answered: int = 0
    total_reward: float = 0.0

    @property
    def score(self) -> float | None:
        return self.total_reward / self.answered if self.answered else None


def task_scores(rows: list[dict[str, Any]], episodes: list[EpisodeSummary]) -> list[TypeScore]:
    by_type: dict[str, TypeScore] = {}
    for row in rows:
        kind = str(row.get("task", ""))
        found = by_type.setdefault(kind, TypeScore(kind, str(row.get("reward_metric", "")), 0))
        found.tasks += 1
    answered: dict[str, list[float]] = defaultdict(list)
    for episode in episodes:
        if episode.reward is not None:
            answered[episode.task].append(episode.reward)
    for kind, rewards in answered.items():
        found = by_type.setdefault(kind, TypeScore(kind, "", 0))
        found.answered, found.total_reward = len(rewards), sum(rewards)
    return sorted(by_type.values(), key=lambda score: score.task)


def _task_file_rows(state: AppState) -> tuple[list[dict[str, Any]], str]:
    if state.settings.task_file is None:
        return (
            [],
            "No task file: set LOCALFORCE_TASK_FILE to a file of `localforce tasks generate`.",
        )
    try:
        return task_rows(state.settings.task_file), ""
    except SalesforceError as error:
        return [], error.message


@guarded.get("/console/tasks", response_class=HTMLResponse)
def tasks(request: Request, state: StateDep) -> HTMLResponse:
    return _tasks_page(request, state, None)


def _tasks_page(request: Request, state: AppState, graded: Grades | None) -> HTMLResponse:
    rows, problem = _task_file_rows(state)
    with state.platform.connect() as conn:
        episodes = episode_summaries(conn)
    scores = task_scores(rows, episodes)
    answered = [episode.reward for episode in episodes if episode.reward is not None]
    return render(
        request,
        "tasks.html",
        task_file=state.settings.task_file,
        problem=problem,
        scores=scores,
        episodes=episodes,
        overall=sum(answered) / len(answered) if answered else None,
        live={sandbox.id for sandbox in state.sandboxes.all()},
        graded=graded,
    )


@guarded.post("/console/tasks/grade", response_class=HTMLResponse)
def grade_results(
    request: Request, state: StateDep, results: Annotated[UploadFile, File()]
) -> HTMLResponse:
    """Grade a results file against the task file, as `localforce tasks grade` does."""
    limit = state.settings.max_body_bytes
    raw = results.file.read(limit + 1)
    if len(raw) > limit:
        raise BodyTooLarge(limit)
    rows, problem = _task_file_rows(state)
    if problem:
        raise GradingFailed(problem)
    try:
        listed = json.loads(raw.decode("utf-8"))  # UTF-8, as the CLI reads the file
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GradingFailed(f"The results file is not JSON: {error}") from None
    if not isinstance(listed, list) or not all(isinstance(item, dict) for item in listed):
        raise GradingFailed("The results file must hold a JSON list of objects")
    graded = grade(rows, listed, Judge.from_settings(state.settings))
    return _tasks_page(request, state, graded)


@guarded.get("/console/coverage", response_class=HTMLResponse)
def coverage_page(request: Request) -> HTMLResponse:
    return render(request, "coverage.html", report=coverage.load())
