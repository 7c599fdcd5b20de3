"""The control plane under /__localforce: sandboxes for agent episodes (create, reset, diff,
call log, snapshots). Not part of Salesforce's API; errors keep its format all the same."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.api.deps import StateDep
from app.api.routing import (
    ERROR_ARRAY,
    JSON,
    SalesforceJSONResponse,
    SalesforceRouter,
    public_base_url,
)
from app.api.state import AppState
from app.api.write_gate import run_writing
from app.config import Settings
from app.errors import SalesforceError
from app.sandbox.calllog import json_lines
from app.sandbox.clock import SandboxClock, to_naive_utc
from app.sandbox.model import Sandbox
from app.services.auth import (
    Session,
    fingerprint_of,
    login_user,
    new_sandbox_password,
    start_session,
    token_hash,
)
from app.tasks.results import ensure_open


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a form may carry any code point


def same_key(offered: str, key: str) -> bool:
    """Whether `offered` is `key` (an empty key matches nothing), in constant time."""
    return bool(key) and hmac.compare_digest(_utf8(offered), _utf8(key))


def offered_admin_key(request: Request) -> str:
    """The key a request offers: 'X-Localforce-Admin-Key: <key>' or 'Authorization: Bearer
    <key>'."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return request.headers.get("x-localforce-admin-key") or (
        token.strip() if scheme.lower() == "bearer" else ""
    )


def is_operator(request: Request, settings: Settings) -> bool:
    """Whether the request may use the control plane: it carries the admin key, or the server
    serves the control plane open (--insecure-control-plane, on a loopback address)."""
    return settings.insecure_control_plane or same_key(
        offered_admin_key(request), settings.admin_key
    )


async def require_admin(request: Request, state: StateDep) -> None:
    """Control-plane calls carry the operator's key (an agent's session token is not it)."""
    if not is_operator(request, state.settings):
        raise SalesforceError(
            "The localforce control plane needs the admin key (LOCALFORCE_ADMIN_KEY, or the "
            "one `localforce admin-key` prints), as 'Authorization: Bearer <key>' or "
            "'X-Localforce-Admin-Key: <key>'.",
            error_code="INVALID_AUTH_HEADER",
            status_code=401,
        )


router = SalesforceRouter(
    prefix="/__localforce", tags=["localforce control plane"], dependencies=[Depends(require_admin)]
)


LIMIT_REACHED = {
    "description": "LOCALFORCE_MAX_SANDBOXES or LOCALFORCE_MAX_TEMPLATES is reached",
    "content": {JSON: {"schema": ERROR_ARRAY}},
}
TAKEN = {
    "description": "A sandbox of that id exists (DUPLICATE_VALUE)",
    "content": {JSON: {"schema": ERROR_ARRAY}},
}
ENDED = {
    "description": "The sandbox's episode was answered: its state is final (EPISODE_ENDED)",
    "content": {JSON: {"schema": ERROR_ARRAY}},
}
BUSY = {
    "description": "Requests in flight on the sandbox outlasted the drain time",
    "content": {JSON: {"schema": ERROR_ARRAY}},
}


class SandboxCreate(BaseModel):
    """The optional body of `POST /__localforce/sandboxes`."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(default=None, description="Your own id (1-40 letters, digits, - _)")
    org: str | None = Field(
        default=None, description="Which org's schema and data: original, b2b or b2c"
    )
    # Within +/-(2**53 - 1), which every JSON reader holds exactly.
    seed: int | None = Field(
        default=None, ge=-(2**53 - 1), le=2**53 - 1, description="Seed of the generated data"
    )
    clock: datetime | None = Field(default=None, description="Start of the sandbox's clock")
    clockMode: Literal["pinned", "running"] = Field(  # camelCase: a JSON key
        default="pinned", description="pinned: time stands still; running: it moves on"
    )

    @field_validator("seed", mode="before")
    @classmethod
    def _seed_is_a_number(cls, value: object) -> object:
        # A JSON integer (2.0 is one); pydantic would also read true and "2" as integers.
        if isinstance(value, bool | str):
            raise ValueError("Input should be a valid integer")
        return value

    @field_validator("clock", mode="before")
    @classmethod
    def _clock_is_text(cls, value: object) -> object:
        # pydantic would read a number as Unix seconds; a clock is written as a date-time.
        if value is not None and not isinstance(value, str):
            raise ValueError("a clock is an ISO 8601 date-time string")
        return value


class SnapshotCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str


def _clock(state: StateDep, body: SandboxCreate) -> SandboxClock:
    if body.clock is not None:
        return SandboxClock(start=to_naive_utc(body.clock), pinned=body.clockMode == "pinned")
    server = state.settings.clock
    return SandboxClock(start=to_naive_utc(server), pinned=True) if server else SandboxClock()


@dataclass(frozen=True)
class CreatedSandbox:
    """A new sandbox and how to reach it: a session of its first user, and the password its
    logins need, shown this once (the registry keeps only its hash)."""

    sandbox: Sandbox
    session: Session
    username: str  # the login's, with the sandbox's suffix
    password: str

    def logins(self) -> dict[str, str]:
        return {
            "access_token": self.session.token,
            "username": self.username,
            "password": self.password,
        }


def create_with_session(state: AppState, body: SandboxCreate) -> CreatedSandbox:
    """The sandbox, its password, and a session for its first user, in one thread-pool call."""
    password = new_sandbox_password()
    sandbox = state.sandboxes.create(
        sandbox_id=body.id,
        org=state.settings.org if body.org is None else body.org,
        seed=state.settings.seed if body.seed is None else body.seed,
        clock=_clock(state, body),
        password_hash=token_hash(password),
    )
    # A new sandbox is its template as seeded, so its first user is the template's: known
    # after one look, and the sandbox's storage need not be opened to make it.
    first_user = state.first_users.get(sandbox.template) if sandbox.template else None
    if first_user is None:
        with sandbox.engine.connect() as conn:
            first_user = login_user(conn, sandbox.schema.tables, "")
        if sandbox.template:
            state.first_users[sandbox.template] = first_user
    user_id, username = first_user
    session = start_session(
        state.platform,
        username=username,
        user_id=user_id,
        sandbox_id=sandbox.id,
        now=state.clock(),
        credentials=fingerprint_of(state.credentials),
    )
    return CreatedSandbox(sandbox, session, f"{username}.{sandbox.id}", password)


@router.post("/sandboxes", status_code=201, responses={403: LIMIT_REACHED, 409: TAKEN})
async def create_sandbox(
    request: Request,
    state: StateDep,
    body: Annotated[SandboxCreate | None, Body()] = None,
) -> SalesforceJSONResponse:
    """Create a sandbox: a fresh copy of the org, with a token that reaches only it, and the
    password its logins need (returned here only)."""
    created = await run_in_threadpool(create_with_session, state, body or SandboxCreate())
    return SalesforceJSONResponse(
        {
            **created.sandbox.describe(),
            "instance_url": public_base_url(request),
            **created.logins(),
        },
        status_code=201,
    )


@router.get("/sandboxes")
def list_sandboxes(state: StateDep) -> dict[str, Any]:
    return {"sandboxes": [sandbox.describe() for sandbox in state.sandboxes.all()]}


def _sandbox(state: StateDep, sandbox_id: str) -> Sandbox:
    return state.sandboxes.get(sandbox_id)


@router.get("/sandboxes/{sandbox_id}")
def get_sandbox(sandbox_id: str, state: StateDep) -> dict[str, Any]:
    return _sandbox(state, sandbox_id).describe()


@router.delete("/sandboxes/{sandbox_id}", status_code=204, responses={409: BUSY})
def delete_sandbox(sandbox_id: str, state: StateDep) -> Response:
    state.sandboxes.delete(sandbox_id)
    state.sessions.clear()
    return Response(status_code=204)


def _still_open(state: AppState, sandbox_id: str) -> Sandbox:
    """The sandbox, unless it is an answered episode's: that state is final."""
    sandbox = state.sandboxes.get(sandbox_id)
    with state.platform.connect() as conn:
        ensure_open(conn, sandbox_id)
    return sandbox


async def reset_open(state: AppState, sandbox_id: str) -> dict[str, Any]:
    """Undo every write since the last reset (cost follows the writes, not the org's size);
    refused once the sandbox's episode is answered."""
    sandbox = await run_in_threadpool(_still_open, state, sandbox_id)
    return await run_writing(sandbox.engine, state.sandboxes.reset, sandbox_id)


async def restore_open(state: AppState, sandbox_id: str, name: str) -> dict[str, Any]:
    """Write a snapshot back; refused once the sandbox's episode is answered."""
    sandbox = await run_in_threadpool(_still_open, state, sandbox_id)
    return await run_writing(sandbox.engine, state.sandboxes.restore, sandbox_id, name)


@router.post("/sandboxes/{sandbox_id}/reset", responses={409: ENDED})
async def reset_sandbox(sandbox_id: str, state: StateDep) -> dict[str, Any]:
    """Undo every write since the last reset (cost follows the writes, not the org's size)."""
    return await reset_open(state, sandbox_id)


@router.get("/sandboxes/{sandbox_id}/diff")
def sandbox_diff(sandbox_id: str, state: StateDep) -> dict[str, Any]:
    """Records created, updated (field by field) and deleted since the last reset."""
    return state.record.diff(sandbox_id)


@router.get("/sandboxes/{sandbox_id}/log")
async def sandbox_log(sandbox_id: str, request: Request, state: StateDep) -> Response:
    """The API calls made since the last reset; `?format=jsonl` (or Accept:
    application/x-ndjson) gives JSON Lines."""
    entries = await run_in_threadpool(state.record.call_log, sandbox_id)
    wants_lines = request.query_params.get("format") == "jsonl" or "ndjson" in request.headers.get(
        "accept", ""
    )
    if wants_lines:
        return Response(json_lines(entries), media_type="application/x-ndjson")
    return SalesforceJSONResponse({"calls": entries})


@router.post("/sandboxes/{sandbox_id}/snapshots", status_code=201)
async def create_snapshot(
    sandbox_id: str, state: StateDep, body: Annotated[SnapshotCreate, Body()]
) -> dict[str, Any]:
    engine = _sandbox(state, sandbox_id).engine
    return await run_writing(engine, state.record.snapshot, sandbox_id, body.name)


@router.post("/sandboxes/{sandbox_id}/snapshots/{name}/restore", responses={409: ENDED})
async def restore_snapshot(sandbox_id: str, name: str, state: StateDep) -> dict[str, Any]:
    return await restore_open(state, sandbox_id, name)
