"""Dependencies: the request's session, sandbox and transaction, the context services take, and
the sObject a route's path names (a composite subrequest borrows those of its composite request:
see Parent)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Annotated, Any, cast

from fastapi import Depends, Request
from sqlalchemy import Connection
from starlette.requests import ClientDisconnect

from app.api.state import AppState, Resolved
from app.api.threads import run_in_request_thread
from app.api.transactions import PendingTransaction, Transaction
from app.errors import BodyTooLarge, InvalidSession, SalesforceError, UnsupportedMediaType
from app.metadata.model import SObjectDef
from app.sandbox.model import Sandbox
from app.sandbox.registry import find_sandbox
from app.services.auth import Session, end_sessions, find_session, mark_used
from app.services.context import OrgContext
from app.services.org import parse_version
from app.services.records import resolve_sobject
from app.soql.date_literals import OrgCalendar
from app.tasks.episodes import episode_caller


# Light dependencies are async so they run on the event loop, not through the thread pool.
def app_state(request: Request) -> AppState:
    return cast(AppState, request.app.state.localforce)


async def get_state(request: Request) -> AppState:
    return app_state(request)


StateDep = Annotated[AppState, Depends(get_state)]


@dataclass(frozen=True)
class Parent:
    """What a composite subrequest borrows from the request that carries it: the session,
    the sandbox (and its lease), the open transaction and the org context. The dependencies
    below hand these out instead of their own, so a subrequest runs in the composite's
    transaction and never commits it."""

    session: Session
    sandbox: Sandbox
    conn: Connection
    ctx: OrgContext


PARENT = "localforce.parent"  # the scope key of a subrequest's Parent


def parent_of(request: Request) -> Parent | None:
    """The composite request this request is a subrequest of, if it is one."""
    return cast(Parent | None, request.scope.get(PARENT))


def bearer_token(request: Request) -> str | None:
    return token_in(request.headers)


def token_in(headers: Mapping[str, str]) -> str | None:
    """The token of an 'Authorization: Bearer <token>' (or 'OAuth <token>') header."""
    header = headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() in {"bearer", "oauth"} and token.strip():
        return token.strip()
    return None


def resolve_token(state: AppState, token: str) -> Resolved | None:
    """The session a token names, the sandbox it reaches and the sandbox's episode, in one
    trip to the pool; a session idle too long, or issued under other strict credentials,
    ends here."""
    with state.platform.connect() as conn:  # one connection reads them all
        stored = find_session(conn, token)
        if stored is None:
            return None
        sandbox_id = stored.session.sandbox_id
        row = find_sandbox(conn, sandbox_id)
        episode = episode_caller(conn, sandbox_id)
    now, policy = state.clock(), state.session_policy
    if not policy.stands(stored, now):
        end_sessions(state.platform, [token])
        return None
    if policy.needs_touch(stored, now):
        mark_used(state.platform, token, now)
    return Resolved(stored.session, state.sandboxes.in_use(row), episode)


async def cached_resolve(state: AppState, token: str) -> Resolved | None:
    """resolve_token, trusted for SESSION_CACHE_SECONDS (see session_of)."""
    resolved = state.sessions.get(token)
    if resolved is None:
        resolved = await run_in_request_thread(resolve_token, state, token)
        if resolved is not None:
            state.sessions.put(token, resolved)
    return resolved


# The request's own state (shared by every copy of its scope), where the lookups below keep
# what they found: each dependency reads it once, however many routes' parameters name it.
_SESSION = "session"
_SANDBOX = "sandbox"  # also read by middleware.ApiCallMiddleware, which releases its lease


def _request_state(request: Request) -> dict[str, Any]:
    return cast(dict[str, Any], request.scope.setdefault("state", {}))


async def session_of(request: Request) -> Session:
    """The session a bearer token names, as the platform database says (cached for at most
    SESSION_CACHE_SECONDS, and forgotten at once here when this process revokes or deletes):
    a session ended through any worker ends everywhere within that time."""
    parent = parent_of(request)
    if parent is not None:
        return parent.session
    return await session_for(request, bearer_token(request))


async def session_for(request: Request, token: str | None) -> Session:
    """The session `token` names, kept in the request's state for the lookups after it (a
    route that also takes the token from elsewhere than the header calls this itself)."""
    found = _request_state(request).get(_SESSION)
    if found is not None:
        return cast(Session, found[0])
    if token is None:
        raise InvalidSession()
    resolved = await cached_resolve(app_state(request), token)
    if resolved is None:
        raise InvalidSession()
    _request_state(request)[_SESSION] = (resolved.session, resolved.sandbox)
    return resolved.session


async def sandbox_of(request: Request) -> Sandbox:
    """The sandbox the token belongs to: a token never reaches another sandbox's data. The
    request holds a lease on it until the response is sent (ApiCallMiddleware releases it and
    logs the call then), so a delete waits for it."""
    parent = parent_of(request)
    if parent is not None:  # the composite holds the lease, and its call is the one logged
        return parent.sandbox
    request_state = _request_state(request)
    leased = request_state.get(_SANDBOX)
    if leased is not None:
        return cast(Sandbox, leased)
    await session_of(request)
    sandbox: Sandbox | None = request_state[_SESSION][1]
    if sandbox is None or not sandbox.lease():
        raise InvalidSession()
    app_state(request).sandboxes.served(sandbox)
    request_state[_SANDBOX] = sandbox
    return sandbox


# FastAPI walks a dependency's own dependencies each time a parameter names it, cached or not
# (about 8 us each): these take the request alone, and share what they find through it.
async def get_session(request: Request) -> Session:
    return await session_of(request)


SessionDep = Annotated[Session, Depends(get_session)]


async def get_sandbox(request: Request) -> Sandbox:
    return await sandbox_of(request)


SandboxDep = Annotated[Sandbox, Depends(get_sandbox)]


READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_connection(request: Request) -> Transaction:
    """The request's transaction on its sandbox, pending until its route begins it (see
    app.api.transactions), or the composite's that a subrequest runs in."""
    parent = parent_of(request)
    if parent is not None:  # the composite's transaction: the composite ends it
        return parent.conn
    sandbox = await sandbox_of(request)
    return PendingTransaction(sandbox.engine, write=request.method not in READ_METHODS)


# Typed as the Connection the route sees: `in_request_transaction` begins it first.
ConnectionDep = Annotated[Connection, Depends(get_connection)]


async def get_org_context(request: Request, version: str) -> OrgContext:
    return await org_context_at(request, parse_version(version))


async def org_context_at(request: Request, api_version: str) -> OrgContext:
    """The org as the request's session sees it, at `api_version` (a known version, "62.0")."""
    parent = parent_of(request)
    if parent is not None:  # the composite's clock reading, at the subrequest's API version
        return replace(parent.ctx, base_path=f"/services/data/v{api_version}")
    session = await session_of(request)
    sandbox = await sandbox_of(request)
    now = sandbox.clock.now()
    state = app_state(request)
    settings = state.settings
    return OrgContext(
        registry=sandbox.schema.registry,
        tables=sandbox.schema.tables,
        user_id=session.user_id,
        now=now,
        base_path=f"/services/data/v{api_version}",
        sandbox_id=sandbox.instance,  # what cursors are bound to: never a later namesake
        calendar=OrgCalendar.at(now, settings.timezone, settings.fiscal_year_start_month),
        functions=state.functions,
    )


OrgContextDep = Annotated[OrgContext, Depends(get_org_context)]


async def get_sobject(request: Request, sobject: str) -> SObjectDef:
    """The object a route's path names (`{sobject}`, case-insensitively) in the request's org:
    NOT_FOUND when the org has none. It reads the session first (a bad token is a 401 whatever
    the type); a route names it after its other dependencies, so that their errors (the API
    version, a JSON body's media type and size) come before the type's."""
    sandbox = await sandbox_of(request)
    return resolve_sobject(sandbox.schema.registry, sobject)


SObjectDep = Annotated[SObjectDef, Depends(get_sobject)]


async def get_described_sobject(request: Request, sobject: str) -> SObjectDef:
    """What `GET /sobjects/{sobject}/describe` describes: an object of the org, or an activity
    view (ActivityHistory, OpenActivity), which a real org describes though nothing else
    reaches it on its own."""
    sandbox = await sandbox_of(request)
    registry = sandbox.schema.registry
    view = registry.activity_view(sobject) if registry.get(sobject) is None else None
    return view or resolve_sobject(registry, sobject)


DescribedSObjectDep = Annotated[SObjectDef, Depends(get_described_sobject)]


async def read_body(request: Request) -> bytes:
    """The raw body, read here so that routes can stay synchronous (run in the thread pool):
    at most LOCALFORCE_MAX_BODY_BYTES of it, refused by its Content-Length when that says more
    and as soon as more arrives when it lied."""
    limit = app_state(request).settings.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and len(declared) < 20 and int(declared) > limit:
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(limit)
            chunks.append(chunk)
    except ClientDisconnect:
        # Nobody will read the answer; end the request as an error, not a traceback.
        raise SalesforceError("The client closed the connection before sending its body") from None
    return b"".join(chunks)


RawBodyDep = Annotated[bytes, Depends(read_body)]


async def read_json_body(request: Request) -> bytes:
    """The raw body of a route that reads JSON, once the session is known good (a bad token
    is a 401 whatever the body). A body declared as anything else (text/plain, a form, XML)
    is the 415 Salesforce answers; one sent without a Content-Type is read as JSON, as
    lenient clients expect."""
    await session_of(request)
    declared = request.headers.get("content-type")
    if declared is not None:
        media_type = declared.partition(";")[0].strip().lower()
        if media_type != "application/json" and not media_type.endswith("+json"):
            raise UnsupportedMediaType(media_type)
    return await read_body(request)


JsonBodyDep = Annotated[bytes, Depends(read_json_body)]


# The dependencies that authenticate the request (the OpenAPI document marks their routes).
AUTHENTICATED = frozenset(
    {get_session, get_sandbox, get_connection, get_org_context, get_sobject, read_json_body}
)
