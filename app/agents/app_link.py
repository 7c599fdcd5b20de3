"""The link from an agent interface to an app served in this process: HTTP clients that reach
the app in process, and the event loop every call runs on.

The app's lifespan runs in one event loop, and what it starts there (the MCP endpoint's session
manager) serves requests of that loop only; so an environment's calls, made from any thread or
loop, run there. `LocalOrg` runs an app's lifespan in a thread of its own, for use outside any
server."""

from __future__ import annotations

import asyncio
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
from mcp.types import CallToolResult, Tool
from starlette.types import ASGIApp

from app.errors import SalesforceError

T = TypeVar("T")
BASE_URL = "http://localforce"
MCP_PATH = "/mcp"
TIMEOUT = 120.0


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
    """One MCP client session of a token, held open across calls, so that a call costs one
    request, not a session's handshake too. The SDK's client must be left by the task that
    entered it, so a task of the session's own, on the app's loop, holds it."""

    def __init__(self, link: AppLink, token: str, channel: str | None = None) -> None:
        self.link = link
        self.token = token
        self.channel = channel
        self._held: asyncio.Task[None] | None = None
        self._opened: asyncio.Future[Client] | None = None
        self._closing = asyncio.Event()

    async def _client(self) -> Client:
        held, opened = self._held, self._opened
        if held is None or held.done() or opened is None:
            opened = self._open()
        return await opened

    async def list_tools(self) -> list[Tool]:
        """The tools this token may call (an episode's: its task's). On the app's loop."""
        client = await self._client()
        try:
            return list((await client.list_tools()).tools)
        except BaseException:
            await self.close()
            raise

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """On the app's loop."""
        client = await self._client()
        try:
            return await client.call_tool(name, arguments)
        except BaseException:
            await self.close()  # the next call opens a session anew
            raise

    def _open(self) -> asyncio.Future[Client]:
        loop = asyncio.get_running_loop()
        self._opened, self._closing = loop.create_future(), asyncio.Event()
        self._held = loop.create_task(self._hold(self._opened, self._closing))
        return self._opened

    async def _hold(self, opened: asyncio.Future[Client], closing: asyncio.Event) -> None:
        try:
            async with self.link.mcp(self.token, self.channel) as client:
                opened.set_result(client)
                await closing.wait()
        except Exception as error:  # the caller awaiting the session gets it
            if not opened.done():
                opened.set_exception(error)

    async def close(self) -> None:
        """On the app's loop."""
        held, self._held = self._held, None
        if held is not None:
            self._closing.set()
            await held


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
