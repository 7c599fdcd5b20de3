"""ASGI middleware: API usage accounting, each sandbox's call log, HEAD, and what a path names
(control characters, a trailing slash)."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.routing import error_response, route_path, serves
from app.api.state import AppState
from app.errors import NotFound
from app.sandbox.calllog import Call
from app.sandbox.model import Sandbox


class ApiCallMiddleware:
    """Counts REST API calls and reports them in Sforce-Limit-Info, as Salesforce does; once
    the response is sent, appends an authenticated call to its sandbox's log and releases the
    request's lease on the sandbox (deps.sandbox_of took it)."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Shared with every copy of the scope made further in: where the lease is noted.
        request_state = scope.setdefault("state", {})
        if not scope["path"].startswith("/services/data/v"):
            try:
                await self.app(scope, receive, send)
            finally:
                _release(request_state)
            return
        usage = f"api-usage={self.state.usage.count()}/15000".encode()
        started = time.perf_counter()
        status = 500

        async def send_with_usage(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message["headers"] = [*message.get("headers", []), (b"sforce-limit-info", usage)]
            await send(message)

        try:
            await self.app(scope, receive, send_with_usage)
        finally:
            sandbox = _release(request_state)
            if sandbox is not None:
                # Queued, not written: the lifespan's flusher writes calls and usage in batches.
                self.state.calls.add(sandbox.id, _call(scope, status, started))


def _release(request_state: dict[str, object]) -> Sandbox | None:
    """The sandbox this request leased, its lease released."""
    sandbox = request_state.pop("sandbox", None)
    if not isinstance(sandbox, Sandbox):
        return None
    sandbox.release()
    return sandbox


def _call(scope: Scope, status: int, started: float) -> Call:
    return Call(
        ended=datetime.now(UTC),
        method=scope["method"],
        path=scope["path"],
        query_string=scope.get("query_string", b"").decode("latin-1"),
        status=status,
        durationMs=round((time.perf_counter() - started) * 1000, 3),
    )


class HeadMiddleware:
    """HEAD wherever GET is served, as Salesforce (and Starlette's own routes) do: the GET's
    status and headers, Content-Length included, without its body. FastAPI's routes match
    only the methods they name, so HEAD would otherwise be a 405. Where no GET is served,
    HEAD goes on as HEAD, to the 405 that lists what is allowed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        if not serves(scope["app"].router.routes, scope["path"], "GET"):
            await self.app(scope, receive, send)
            return

        async def send_headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, send_headers_only)


_CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f]")


class PathMiddleware:
    """What a path names, before routing. One holding a control character (a %0A, a %00) names
    no resource: 404 (routes match with Python's `$`, which also matches before a final
    newline, so `/sandboxes/%0A` would otherwise be served as `/sandboxes/`). One ending in a
    slash, or with repeated slashes, names what it names without them (routing.route_path)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if _CONTROL_CHARACTER.search(path):
            await error_response(NotFound())(scope, receive, send)
            return
        routed = route_path(path)
        # A copy: the call log, outside, records the path as the client sent it.
        await self.app(scope if routed == path else {**scope, "path": routed}, receive, send)
