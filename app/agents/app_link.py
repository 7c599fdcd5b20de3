"""The link from an agent interface to an app served in this process: HTTP clients that reach
the app in process, and the event loop every call runs on.

The app's lifespan runs in one event loop, and what it starts there (the MCP endpoint's session
manager) serves requests of that loop only; so an environment's calls, made from any thread or
loop, run there. `LocalOrg` runs an app's lifespan in a thread of its own, for use outside any
server."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator, Coroutine, Mapping
from concurrent.futures import Future
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, TypeVar

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ListToolsResult, Tool
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp

from app.agents.asgi_call import asgi_call
from app.agents.mcp import McpEndpoint
from app.agents.mcp_direct import DirectCall, DirectCalls
from app.errors import SalesforceError

T = TypeVar("T")
BASE_URL = "http://localforce"
MCP_PATH = "/mcp"
TIMEOUT = 120.0
VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]  # the protocol version the tools are called in


class AppLink:
    """An app served in this process and the event loop its lifespan runs in (None while it
    does not run)."""

    def __init__(self, app: ASGIApp, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.app = app
        self.loop = loop
        self._tools: dict[str, Tool] | None = None

    def _app_loop(self) -> asyncio.AbstractEventLoop:
        if self.loop is None or self.loop.is_closed():
            raise SalesforceError(
                "The app is not running: its lifespan has not started, or has ended",
                error_code="SERVER_UNAVAILABLE",
                status_code=503,
            )
        return self.loop

    def http(self, headers: Mapping[str, str] | None = None) -> httpx.AsyncClient:
        """A client of the app's HTTP API, in process."""
        transport = httpx.ASGITransport(app=self.app)
        return httpx.AsyncClient(
            transport=transport, base_url=BASE_URL, headers=headers, timeout=TIMEOUT
        )

    @asynccontextmanager
    async def mcp(self, token: str | None, channel: str | None = None) -> AsyncIterator[Client]:
        """The app's MCP endpoint through the MCP SDK's client, carrying `token` (and the
        agent interface the calls come through, for the results store)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if channel:
            headers["X-Localforce-Channel"] = channel
        http = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=self.app),
            base_url=BASE_URL,
            headers=headers,
            timeout=TIMEOUT,
        )
        transport = streamable_http_client(f"{BASE_URL}{MCP_PATH}", http_client=http)
        async with http, Client(transport) as client:
            yield client

    async def tools(self) -> dict[str, Tool]:
        """The MCP endpoint's tools by name, as a caller of no episode sees them: listed once."""
        if self._tools is None:
            async with self.mcp(None) as client:
                listed = (await client.list_tools()).tools
            self._tools = {tool.name: tool for tool in listed}
        return self._tools

    def on_app_loop(self) -> bool:
        return self.loop is not None and _running_loop() is self.loop

    async def run(self, call: Coroutine[Any, Any, T]) -> T:
        """Await `call` on the app's loop, from whichever loop this is."""
        try:
            loop = self._app_loop()
        except SalesforceError:
            call.close()
            raise
        if _running_loop() is loop:
            return await call
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, loop))

    def run_blocking(self, call: Coroutine[Any, Any, T]) -> T:
        """Run `call` on the app's loop and wait for it: from a thread other than the loop's
        own, which would wait on itself."""
        try:
            loop = self._app_loop()
            if _running_loop() is loop:
                raise RuntimeError(
                    "A blocking call from the app's own event loop would wait on itself: await "
                    "the async method (reset_async, step_async) instead"
                )
        except BaseException:
            call.close()
            raise
        return asyncio.run_coroutine_threadsafe(call, loop).result()


class McpSession:
    """The MCP endpoint's tools with one token, called in process, with no MCP client session
    to open or hold: a tool call is answered as the endpoint answers a JSON-RPC tools/call
    (mcp_direct: the same tool run, episode gate and trajectory) without its message written
    and read back; anything else is one JSON-RPC request to /mcp through the app."""

    def __init__(self, link: AppLink, token: str, channel: str | None = None) -> None:
        self.link = link
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
        }
        if channel:
            self.headers["X-Localforce-Channel"] = channel
        # What the tools read of a request's headers, as Starlette's headers name them.
        self.context = {name.lower(): value for name, value in self.headers.items()}
        self._ids = itertools.count(1)

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        body = json.dumps(message).encode()
        answered = await asgi_call(self.link.app, "POST", MCP_PATH, "", self.headers, body)
        try:
            reply = json.loads(answered.body)
        except ValueError:
            reply = None
        if not isinstance(reply, dict) or "result" not in reply:
            error = reply.get("error") if isinstance(reply, dict) else None
            if isinstance(error, dict):
                raise MCPError(
                    int(error.get("code", 0)), str(error.get("message")), error.get("data")
                )
            raise MCPError(-32603, f"HTTP {answered.status}: {answered.body[:200]!r}")
        return dict(reply["result"])

    async def list_tools(self) -> list[Tool]:
        """The tools this token may call (an episode's: its task's). On the app's loop."""
        return list(ListToolsResult.model_validate(await self._request("tools/list", {})).tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """On the app's loop."""
        direct = self._direct()
        if direct is None:
            params = {"name": name, "arguments": arguments}
            return CallToolResult.model_validate(await self._request("tools/call", params))
        call = DirectCall(next(self._ids), name, arguments, self.context, VERSION)
        result = await direct.result(call)
        if isinstance(result, CallToolResult):
            return result
        return CallToolResult.model_validate(result)  # a refusal, in the wire's form

    def _direct(self) -> DirectCalls | None:
        """The app's MCP endpoint's in-process answers, if it has them on."""
        endpoint = getattr(getattr(self.link.app, "state", None), "mcp", None)
        return endpoint.direct if isinstance(endpoint, McpEndpoint) else None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class LocalOrg:
    """An app's lifespan, run in a thread of its own for as long as the block lasts; entering
    gives the AppLink that environments take.

        with LocalOrg(create_app()) as link:
            env = LocalforceEnvironment(link)
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self._thread: threading.Thread | None = None
        self._started: Future[asyncio.AbstractEventLoop] = Future()
        self._stop: asyncio.Event | None = None

    def __enter__(self) -> AppLink:
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self._thread.start()
        return AppLink(self.app, self._started.result(timeout=TIMEOUT))

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self.app.router.lifespan_context(self.app):
                self._started.set_result(asyncio.get_running_loop())
                await self._stop.wait()
        except BaseException as error:
            if not self._started.done():
                self._started.set_exception(error)
            raise

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        loop, stop = self._started.result(), self._stop
        if stop is not None:
            loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout=TIMEOUT)
