"""/openenv: OpenEnv's server (its WebSocket session per client at /openenv/ws, and its HTTP
routes) over LocalforceEnvironment, each session an environment of its own on the app's loop.

openenv-core is an extra (`pip install 'localforce[openenv]'`): without it, /openenv answers an
error naming the extra. With it, its server is built on the first call to /openenv: importing
openenv-core imports its web UI's toolkit (gradio), seconds and about 90 MB a process, which a
process that serves no OpenEnv episode is spared."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from importlib.util import find_spec

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from starlette.routing import BaseRoute, Mount
from starlette.types import Message, Receive, Scope, Send

from app.agents.app_link import AppLink
from app.api.routing import error_response, salesforce_error
from app.errors import SalesforceError

PATH = "/openenv"
MISSING = SalesforceError(
    "The OpenEnv environment needs openenv-core: pip install 'localforce[openenv]'",
    error_code="FUNCTIONALITY_NOT_ENABLED",
    status_code=501,
)


class OpenEnvEndpoint:
    """OpenEnv's server app, mounted at /openenv; its environments reach the host app on the
    loop of the host's lifespan."""

    def __init__(self, host: FastAPI, max_sessions: int) -> None:
        self.host = host
        self.max_sessions = max_sessions
        self.link = AppLink(host)  # its loop is the lifespan's, once that runs
        self.available = find_spec("openenv") is not None
        self.app: FastAPI | None = None
        self._building = threading.Lock()

    def _built(self) -> FastAPI:
        with self._building:
            if self.app is None:
                self.app = self._server()
            return self.app

    def _server(self) -> FastAPI:
        from openenv.core.env_server.http_server import create_fastapi_app
        from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

        from app.agents.environment import LocalforceEnvironment

        server: FastAPI = create_fastapi_app(
            partial(LocalforceEnvironment, self.link),
            CallToolAction,
            CallToolObservation,
            max_concurrent_envs=self.max_sessions,
        )
        server.add_exception_handler(SalesforceError, salesforce_error)
        return server

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self.link.loop = asyncio.get_running_loop()
        try:
            yield
        finally:
            self.link.loop = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.available:
            server = self.app if self.app is not None else await run_in_threadpool(self._built)
            await server(scope, receive, _closing_a_closed_socket_is_done(scope, send))
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1011, "reason": MISSING.message})
        else:
            await error_response(MISSING)(scope, receive, send)

    def route(self) -> BaseRoute:
        return Mount(PATH, app=self)


def _closing_a_closed_socket_is_done(scope: Scope, send: Send) -> Send:
    """OpenEnv's server closes a session's WebSocket after the client has closed it (on the
    client's 'close' message); the client is gone, so there is nothing left to close."""
    if scope["type"] != "websocket":
        return send

    async def sending(message: Message) -> None:
        try:
            await send(message)
        except OSError:  # the server's word for a client that has gone
            if message["type"] != "websocket.close":
                raise

    return sending
