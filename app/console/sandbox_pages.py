"""Sandboxes and episodes: the live ones; create, reset, snapshot, restore and delete; each
one's call log as a timeline and its diff."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from app.api.control import SandboxCreate, create_with_session, reset_open, restore_open
from app.api.deps import StateDep
from app.api.state import AppState
from app.api.write_gate import run_writing
from app.console.pages import ConsoleRoute, back_to, render, require_admin_key
from app.errors import NotFound, SalesforceError
from app.sandbox.model import Sandbox
from app.tasks.episodes import EpisodeSummary, episode_summaries, find_episode

router = APIRouter(
    prefix="/console/sandboxes",
    route_class=ConsoleRoute,
    dependencies=[Depends(require_admin_key)],
    include_in_schema=False,
)
LIST = "/console/sandboxes"


def known_orgs(state: AppState) -> list[str]:
    orgs = state.settings.seed_dir / "orgs"
    return sorted(path.parent.name for path in orgs.glob("*/objects") if path.is_dir())


@router.get("", response_class=HTMLResponse)
def sandboxes(request: Request, state: StateDep, done: str = "") -> HTMLResponse:
    with state.platform.connect() as conn:
        episodes = {summary.id: summary for summary in episode_summaries(conn)}
    live = sorted(state.sandboxes.all(), key=lambda sandbox: (not sandbox.is_default, sandbox.id))
    return render(
        request,
        "sandboxes.html",
        sandboxes=live,
        episodes=episodes,
        orgs=known_orgs(state),
        default_org=state.settings.org,
        done=done,
    )


def _form_error(error: ValidationError) -> SalesforceError:
    problems = "; ".join(
        f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}" for item in error.errors()
    )
    return SalesforceError(f"Bad request: {problems}", error_code="INVALID_INPUT")


def _seed(text: str) -> int | None:
    """The form's seed: empty for the server's, else an integer."""
    if not text.strip():
        return None
    try:
        return int(text)
    except ValueError:
        raise SalesforceError(
            "Bad request: seed: Input should be a valid integer", error_code="INVALID_INPUT"
        ) from None


@router.post("")
def create(
    state: StateDep,
    sandbox_id: Annotated[str, Form(alias="id", max_length=100)] = "",
    org: Annotated[str, Form(max_length=100)] = "",
    seed: Annotated[str, Form(max_length=30)] = "",
) -> RedirectResponse:
    try:
        body = SandboxCreate.model_validate(
            {"id": sandbox_id.strip() or None, "org": org or None, "seed": _seed(seed)}
        )
    except ValidationError as error:
        raise _form_error(error) from None
    # The console shows no token, so no password either: its pages read the sandbox directly.
    sandbox = create_with_session(state, body).sandbox
    return RedirectResponse(f"{LIST}/{sandbox.id}?done=created", status_code=303)


def _summary(state: AppState, sandbox_id: str) -> tuple[EpisodeSummary | None, dict[str, Any]]:
    with state.platform.connect() as conn:
        found = episode_summaries(conn, sandbox_id)
        if not found:
            return None, {}
        return found[0], find_episode(conn, sandbox_id).row


def _ended(call: dict[str, object]) -> datetime:
    return datetime.fromisoformat(str(call["time"]).replace("Z", "+00:00"))


def _timeline(calls: list[dict[str, object]]) -> list[dict[str, object]]:
    """Each call with when it ended after the first one did (s), and its duration's share of
    the longest one's (the width of its bar)."""
    if not calls:
        return []
    start = _ended(calls[0])
    longest = max(float(str(call["durationMs"])) for call in calls) or 1.0
    return [
        {
            **call,
            "after": f"+{(_ended(call) - start).total_seconds():.3f} s",
            "width": max(1, round(100 * float(str(call["durationMs"])) / longest)),
        }
        for call in calls
    ]


@router.get("/{sandbox_id}", response_class=HTMLResponse)
def sandbox(request: Request, sandbox_id: str, state: StateDep, done: str = "") -> HTMLResponse:
    found: Sandbox = state.sandboxes.get(sandbox_id)
    if not found.lease():  # being deleted: as if already gone
        raise NotFound(f"No sandbox with id {sandbox_id}")
    try:
        calls = state.record.call_log(sandbox_id)
        diff = state.record.diff(sandbox_id)
    finally:
        found.release()
    summary, task = _summary(state, sandbox_id)
    return render(
        request,
        "sandbox.html",
        sandbox=found,
        calls=_timeline(calls),
        diff=diff,
        episode=summary,
        task=task,
        done=done,
    )


@router.post("/{sandbox_id}/reset")
async def reset(sandbox_id: str, state: StateDep) -> RedirectResponse:
    result = await reset_open(state, sandbox_id)
    return back_to_sandbox(sandbox_id, f"reset: {result['undoneWrites']} writes undone")


@router.post("/{sandbox_id}/snapshots")
async def snapshot(
    sandbox_id: str, state: StateDep, name: Annotated[str, Form(max_length=100)]
) -> RedirectResponse:
    engine = state.sandboxes.get(sandbox_id).engine
    await run_writing(engine, state.record.snapshot, sandbox_id, name)
    return back_to_sandbox(sandbox_id, f"snapshot {name} saved")


@router.post("/{sandbox_id}/snapshots/{name}/restore")
async def restore(sandbox_id: str, name: str, state: StateDep) -> RedirectResponse:
    await restore_open(state, sandbox_id, name)
    return back_to_sandbox(sandbox_id, f"snapshot {name} restored")


@router.post("/{sandbox_id}/delete")
def delete(sandbox_id: str, state: StateDep) -> RedirectResponse:
    # An episode's row stays: its reward is still a task result.
    state.sandboxes.delete(sandbox_id)
    state.sessions.clear()
    return back_to(LIST, done=f"deleted {sandbox_id}")


def back_to_sandbox(sandbox_id: str, done: str) -> RedirectResponse:
    return back_to(f"{LIST}/{sandbox_id}", done=done)
