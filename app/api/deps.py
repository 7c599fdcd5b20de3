"""Dependencies: the request's transaction, its session, and the context services take."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Annotated, cast

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy import Connection

from app.api.state import AppState
from app.errors import InvalidSession
from app.sandbox.manager import Sandbox
from app.services.auth import Session, find_session
from app.services.context import OrgContext
from app.services.org import parse_version
from app.soql.date_literals import OrgCalendar


# Light dependencies are async so they run on the event loop, not through the thread pool.
async def get_state(request: Request) -> AppState:
    return cast(AppState, request.app.state.localforce)


StateDep = Annotated[AppState, Depends(get_state)]


def get_platform_connection(state: StateDep) -> Iterator[Connection]:
    """A transaction on the server's own database, where sessions live (logins use it)."""
    with state.engine.begin() as conn:
        yield conn


PlatformConnectionDep = Annotated[Connection, Depends(get_platform_connection, scope="function")]


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() in {"bearer", "oauth"} and token.strip():
        return token.strip()
    return None


def _load_session(state: AppState, token: str) -> Session | None:
    with state.engine.connect() as conn:
        return find_session(conn, token)


async def get_session(request: Request, state: StateDep) -> Session:
    """The session a bearer token names: from memory, else (once) from the database."""
    token = bearer_token(request)
    if token is None:
        raise InvalidSession()
    session = state.sessions.get(token)
    if session is None:
        session = await run_in_threadpool(_load_session, state, token)
        if session is None:
            raise InvalidSession()
        state.sessions[token] = session
    return session


SessionDep = Annotated[Session, Depends(get_session)]


async def get_sandbox(request: Request, state: StateDep, session: SessionDep) -> Sandbox:
    """The sandbox the token belongs to: a token never reaches another sandbox's data."""
    sandbox = state.sandboxes.find(session.sandbox_id)
    if sandbox is None:
        raise InvalidSession()
    sandbox.last_used = time.monotonic()
    request.state.sandbox = sandbox  # for the call log, written after the response
    return sandbox


SandboxDep = Annotated[Sandbox, Depends(get_sandbox)]


def get_connection(sandbox: SandboxDep) -> Iterator[Connection]:
    """One connection and transaction per request, on the request's sandbox: committed on
    success, rolled back on error."""
    with sandbox.engine.begin() as conn:
        yield conn


ConnectionDep = Annotated[Connection, Depends(get_connection, scope="function")]


async def get_api_version(version: str) -> str:
    return parse_version(version)


ApiVersionDep = Annotated[str, Depends(get_api_version)]


async def get_org_context(
    state: StateDep, session: SessionDep, sandbox: SandboxDep, api_version: ApiVersionDep
) -> OrgContext:
    now = sandbox.clock.now()
    settings = state.settings
    return OrgContext(
        registry=sandbox.schema.registry,
        tables=sandbox.schema.tables,
        user_id=session.user_id,
        now=now,
        base_path=f"/services/data/v{api_version}",
        sandbox_id=sandbox.id,
        calendar=OrgCalendar.at(now, settings.timezone, settings.fiscal_year_start_month),
    )


OrgContextDep = Annotated[OrgContext, Depends(get_org_context)]


async def read_body(request: Request) -> bytes:
    """The raw body, read here so that routes can stay synchronous (run in the thread pool)."""
    return await request.body()


RawBodyDep = Annotated[bytes, Depends(read_body)]
