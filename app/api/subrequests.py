"""Composite subrequests, answered by the application's own routes.

A subrequest of /composite or /composite/batch is routed by the app's router as if it had come
over HTTP: the same endpoint, dependencies, validation and exception handlers, so every resource
the app serves is reachable from composite with nothing written here or in the composite
service. What a subrequest does not get of its own it borrows from the composite request
(deps.Parent): the session, the sandbox, the open transaction and the org context. Nor does it
pass through the HTTP middleware: the composite is one API call, counted and logged once.

Threads: the composite service is synchronous and waits for each subrequest, whose endpoint
FastAPI runs in its thread pool. Were the composite itself in that pool, enough composites at once
would hold every thread of it, each waiting for a thread for its subrequest: a deadlock. So a
composite runs in a pool of its own (`Subrequests.run`) and hands each subrequest to the event
loop, which routes it like any request.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, cast
from urllib.parse import quote, unquote, urlsplit

import anyio
import orjson
from anyio import CapacityLimiter, from_thread, to_thread
from anyio.lowlevel import RunVar
from fastapi import Depends, Request
from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from sqlalchemy import Connection
from starlette.exceptions import HTTPException
from starlette.types import Message, Receive, Scope

from app.api.deps import (
    PARENT,
    ConnectionDep,
    OrgContextDep,
    Parent,
    SandboxDep,
    SessionDep,
)
from app.api.middleware import PathMiddleware
from app.api.routing import serves
from app.api.transactions import Transaction, opened, turn_for
from app.errors import MethodNotAllowed, NotFound, SalesforceError
from app.services.composite import Dispatch, Outcome

T = TypeVar("T")

# How many composites may run at once (the rest queue on the event loop): as many as the
# default pool has threads. Their threads are their own, never the default pool's.
COMPOSITE_THREADS = 40
_composite_threads: RunVar[CapacityLimiter] = RunVar("composite_threads")

# What a subrequest keeps of the composite's headers: where the client reached us (for URLs a
# route builds). Not its token (the session is lent), nor its body's headers, nor its options
# such as Sforce-Query-Options: a subrequest is answered with the defaults.
_KEPT_HEADERS = {b"host", b"x-forwarded-host", b"x-forwarded-proto"}
_JSON_HEADER = (b"content-type", b"application/json")
# The composite's own response describes its body: a subrequest's answer drops these.
_BODY_HEADERS = {"content-length", "content-type"}
# The order a 405 lists what is allowed in (HEAD is no subrequest method).
_METHOD_ORDER = ("GET", "POST", "PATCH", "PUT", "DELETE")


def _threads() -> CapacityLimiter:
    """This event loop's limiter of composite threads (a limiter belongs to one loop; test
    clients may start several)."""
    try:
        return _composite_threads.get()
    except LookupError:
        limiter = CapacityLimiter(COMPOSITE_THREADS)
        _composite_threads.set(limiter)
        return limiter


class Subrequests:
    """The subrequests of one composite request: called as the service's `Dispatch`."""

    def __init__(
        self,
        request: Request,
        lent: Callable[[Connection], Parent],
        transaction: Transaction,
    ) -> None:
        self.request = request
        self.lent = lent  # what subrequests borrow, given the composite's connection
        self.transaction = transaction
        self.parent: Parent | None = None  # set once `run` has begun the transaction

    async def run(self, work: Callable[[Connection, Dispatch], T]) -> T:
        """`work(conn, dispatch)` in a composite thread (from where it may call this object),
        in the composite's transaction, begun and ended on that thread."""
        async with turn_for(self.transaction):
            return await to_thread.run_sync(self._in_transaction, work, limiter=_threads())

    def _in_transaction(self, work: Callable[[Connection, Dispatch], T]) -> T:
        with opened(self.transaction) as conn:
            self.parent = self.lent(conn)
            return work(conn, self)

    def __call__(self, method: str, url: str, body: Any) -> Outcome:
        """Answers one subrequest; called from a composite thread (see `run`)."""
        return from_thread.run(self.answer, method, url, body)

    async def answer(self, method: str, url: str, body: Any) -> Outcome:
        """The outcome of `method url` with a JSON `body`, as the app's routes answer it."""
        scope = self._scope(method, url)
        sent = _Sent()
        # The router, under the middleware that decides what a path names (a control
        # character: none) and the one of FastAPI's own that its routes rely on; not under
        # those that count, log or answer HEAD: the composite is the API call.
        router = PathMiddleware(AsyncExitStackMiddleware(self.request.app.router))
        try:
            await router(scope, _receive(body), sent.send)
        except HTTPException as error:  # the router's own: no route, or none for this method
            raise self._unrouted(scope, error) from None
        return sent.outcome()

    def _scope(self, method: str, url: str) -> Scope:
        """The ASGI scope of a subrequest: the composite's connection details, the
        subrequest's method and URL, and the Parent its dependencies borrow from."""
        parts = urlsplit(url)
        parent = self.request.scope
        return {
            "type": "http",
            "asgi": parent.get("asgi", {"version": "3.0"}),
            "http_version": parent.get("http_version", "1.1"),
            "scheme": parent.get("scheme", "http"),
            "server": parent.get("server"),
            "client": parent.get("client"),
            "method": method,
            "root_path": "",
            "path": unquote(parts.path),
            "raw_path": _ascii(parts.path),
            "query_string": _ascii(parts.query),
            "headers": [*(h for h in parent["headers"] if h[0] in _KEPT_HEADERS), _JSON_HEADER],
            "state": {},
            "app": parent["app"],
            # The app's exception handlers, so that an error is rendered as for any request.
            "starlette.exception_handlers": parent["starlette.exception_handlers"],
            PARENT: self.parent,
        }

    def _unrouted(self, scope: Scope, error: HTTPException) -> SalesforceError:
        """A path no route serves is NOT_FOUND; a method none serves there is a 405 that
        names the methods some route does."""
        if error.status_code != 405:
            return NotFound()
        routes = self.request.app.router.routes
        allowed = [m for m in _METHOD_ORDER if serves(routes, scope["path"], m)]
        method = scope["method"]
        return MethodNotAllowed(
            f"HTTP Method '{method}' not allowed. Allowed are {','.join(allowed)}"
        )


def _ascii(text: str) -> bytes:
    """A URL part as the bytes a client would send: spaces and non-ASCII characters
    percent-encoded (as UTF-8), what is already encoded left as it is."""
    return quote(text, safe=string.punctuation).encode("ascii")


def _receive(body: Any) -> Receive:
    """The subrequest's body as JSON, then a client that stays until the answer is sent."""
    payload = b"" if body is None else json.dumps(body, ensure_ascii=False).encode()
    return body_first(payload, _staying)


async def _staying() -> Message:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")  # pragma: no cover


def body_first(body: bytes, then: Receive) -> Receive:
    """An ASGI `receive` that hands over `body` whole, then whatever `then` receives."""
    given = False

    async def receive() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await then()

    return receive


class _Sent:
    """What a route sent: its status, headers and body, read back into an Outcome."""

    def __init__(self) -> None:
        self.status = 500
        self.headers: dict[str, str] = {}
        self.body = bytearray()

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            for name, value in message.get("headers", []):
                self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    def outcome(self) -> Outcome:
        kept = {
            _header_case(name): value
            for name, value in self.headers.items()
            if name not in _BODY_HEADERS
        }
        return Outcome(self.status, self._content(), kept)

    def _content(self) -> Any:
        if not self.body:
            return None
        if "json" in self.headers.get("content-type", ""):
            return orjson.loads(self.body)
        return self.body.decode("utf-8", errors="replace")


def _header_case(name: str) -> str:
    """`location` -> `Location`: header names as Salesforce writes them in httpHeaders."""
    return "-".join(part.capitalize() for part in name.split("-"))


async def get_subrequests(
    request: Request,
    session: SessionDep,
    sandbox: SandboxDep,
    conn: ConnectionDep,
    ctx: OrgContextDep,
) -> Subrequests:
    # `conn` is still pending (or a composite's, lent to this one): `run` begins it.
    transaction = cast(Transaction, conn)

    def lent(opened_conn: Connection) -> Parent:
        return Parent(session=session, sandbox=sandbox, conn=opened_conn, ctx=ctx)

    return Subrequests(request, lent, transaction)


SubrequestsDep = Annotated[Subrequests, Depends(get_subrequests)]
