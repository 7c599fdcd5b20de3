"""ASGI middleware: API usage accounting, and each sandbox's call log."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.state import AppState
from app.sandbox.calllog import Call, call_time
from app.sandbox.manager import Sandbox


class ApiUsageMiddleware:
    """Counts REST API calls and reports them in Sforce-Limit-Info, as Salesforce does, and
    appends every authenticated call to its sandbox's log once the response is sent."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/services/data/v"):
            await self.app(scope, receive, send)
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
            # Queued, not written: the lifespan's flusher writes calls and usage in batches.
            sandbox = scope.get("state", {}).get("sandbox")
            if isinstance(sandbox, Sandbox):
                self.state.sandboxes.record_call(sandbox, _call(scope, status, started))


def _call(scope: Scope, status: int, started: float) -> Call:
    query_string = scope.get("query_string", b"").decode("latin-1")
    soql = parse_qs(query_string).get("q", [None])[0]
    return Call(
        time=call_time(datetime.now(UTC)),
        method=scope["method"],
        path=scope["path"],
        query=soql,
        status=status,
        durationMs=round((time.perf_counter() - started) * 1000, 3),
    )
