"""One HTTP request to an ASGI app in this process, without an HTTP client: the scope built, the
body handed over, the response collected. It runs through the app's whole middleware stack, as
a request over the network does (authentication, the call log, the usage count), at a fraction
of an in-process client's cost (httpx's ASGITransport added a fifth of a REST call's time to
each MCP tool call)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from starlette.types import ASGIApp, Message

from app.api.subrequests import body_first

# The longest URL sent, as HTTP clients refuse longer ones (httpx's limit).
MAX_URL_LENGTH = 65536


class UrlTooLong(ValueError):
    """A request whose URL no HTTP client would send (a server's 414)."""


@dataclass(frozen=True)
class AsgiResponse:
    status: int
    body: bytes


async def asgi_call(
    app: ASGIApp,
    method: str,
    target: str,
    query: str = "",
    headers: dict[str, str] | None = None,
    body: bytes = b"",
) -> AsgiResponse:
    """`method target?query` (`target` percent-encoded, and may carry a query of its own)
    with `headers` and `body`, as the app answers it."""
    raw_path, _, own_query = target.partition("?")
    query = "&".join(part for part in (own_query, query) if part)
    if len(raw_path) + len(query) + 1 > MAX_URL_LENGTH:
        raise UrlTooLong(f"URL too long: {len(raw_path) + len(query) + 1} characters")
    raw = [(b"host", b"localforce")]
    raw += [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in (headers or {}).items()
    ]
    if body:
        raw.append((b"content-length", str(len(body)).encode()))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote(raw_path),
        "raw_path": raw_path.encode("latin-1"),
        "query_string": query.encode("latin-1"),
        "root_path": "",
        "headers": raw,
        "client": ("127.0.0.1", 0),
        "server": ("localforce", 80),
        "extensions": {},
    }
    status = 500
    chunks: list[bytes] = []
    # A client stays connected until its response is whole: the app (a streaming response
    # listening for a disconnect) must not see one before.
    complete = asyncio.Event()

    async def disconnect() -> Message:
        await complete.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                complete.set()

    try:
        await app(scope, body_first(body, disconnect), send)
    finally:
        complete.set()
    return AsgiResponse(status=status, body=b"".join(chunks))
