"""The MCP request an agent makes most, one `tools/call` in a JSON-RPC message of its own,
answered in process: the MCP SDK's stateless streamable HTTP transport runs every request
through a session, task groups and memory streams made for it, which cost a tool call about
half its time. Anything else (another method, a batch, a notification, a `_meta`, a protocol
version of the SDK's newer era, an Accept or Content-Type the SDK refuses, a body that is not
JSON) goes to the SDK's transport as it came.

The answer is the SDK's: the same tool run (`MCPServer.call_tool`, argument validation and all),
a failure as the same error result, the same episode gate (`EpisodeToolGate`), the same JSON-RPC
envelope; tests/agents/test_mcp_direct.py holds the two to the same answers."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from mcp.server import MCPServer
from mcp.server.context import HandlerResult
from mcp.server.mcpserver import Context
from mcp.server.streamable_http import check_accept_headers
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.methods import serialize_server_result, validate_client_request
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Scope

from app.agents.episode_tools import CALL, EpisodeToolGate

logger = logging.getLogger(__name__)

JSON = "application/json"
VERSION_HEADER = "mcp-protocol-version"
MESSAGE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
PARAMS_KEYS = frozenset({"name", "arguments"})


@dataclass(frozen=True)
class DirectCall:
    """A tools/call this module answers."""

    id: int | str
    name: str
    arguments: dict[str, Any]
    headers: Mapping[str, str]
    version: str  # the protocol version it speaks (the header's, else the SDK's default)


def direct_call(scope: Scope, body: bytes) -> DirectCall | None:
    """The request as a tools/call answered here; None for one the SDK's transport takes."""
    headers = Headers(scope=scope)
    version = _version(scope, headers)
    if version is None:
        return None
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return _call(message, headers, version)


def _version(scope: Scope, headers: Headers) -> str | None:
    """The protocol version of a JSON request the SDK's legacy transport would take; None for
    anything it refuses or its newer era's transport takes."""
    content_type = headers.get("content-type", "").split(";")[0].split(",")
    has_json, _ = check_accept_headers(Request(scope))
    if not has_json or JSON not in (part.strip() for part in content_type):
        return None
    version = headers.get(VERSION_HEADER, DEFAULT_NEGOTIATED_VERSION)
    return version if version in HANDSHAKE_PROTOCOL_VERSIONS else None


def _call(message: Any, headers: Headers, version: str) -> DirectCall | None:
    """The message as one tools/call, by the SDK's own check of it for its version."""
    if not (isinstance(message, dict) and message.keys() <= MESSAGE_KEYS):
        return None
    params = message.get("params")
    if message.get("jsonrpc") != "2.0" or message.get("method") != CALL:
        return None
    if not (isinstance(params, dict) and params.keys() <= PARAMS_KEYS):
        return None
    call_id, name, arguments = message.get("id"), params.get("name"), params.get("arguments", {})
    named = isinstance(name, str) and isinstance(arguments, dict)
    if not (named and isinstance(call_id, int | str) and type(call_id) is not bool):
        return None
    try:
        validate_client_request(CALL, version, params)
    except (ValueError, KeyError, ValidationError):
        return None
    return DirectCall(call_id, str(name), arguments, headers, version)


def _shaped(result: HandlerResult, version: str) -> dict[str, Any]:
    """The result in the wire's form for the caller's protocol version, by the SDK's shaping.
    A tool's structured content is JSON already, which shaping leaves as it is: it is set
    aside while the rest is shaped (walking it twice was most of the cost) and put back where
    the version has it."""
    structured = None
    if isinstance(result, CallToolResult):
        structured = result.structured_content
        result = result.model_dump(
            by_alias=True, mode="json", exclude_none=True, exclude={"structured_content"}
        )
        if structured is not None:
            result["structuredContent"] = {}
    elif isinstance(result, BaseModel):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    shaped = serialize_server_result(CALL, version, result or {})
    if structured is not None and "structuredContent" in shaped:
        shaped["structuredContent"] = structured
    return shaped


class HeaderContext(Context):
    """A tool's context of a call answered here: the request's headers, which the tools read
    (the caller's token), and the server."""

    def __init__(self, headers: Mapping[str, str], server: MCPServer) -> None:
        super().__init__(mcp_server=server)
        self._headers = headers

    @property
    def headers(self) -> Mapping[str, str] | None:
        return self._headers


class DirectCalls:
    """Answers a DirectCall as the SDK's tools/call handler does, through the episode gate."""

    def __init__(self, server: MCPServer, gate: EpisodeToolGate) -> None:
        self.server = server
        self.gate = gate

    async def answer(self, call: DirectCall) -> bytes:
        """The JSON-RPC response's body."""
        try:
            result: Any = await self.result(call)
        except MCPError as error:
            envelope = {"error": error.error.model_dump(by_alias=True, exclude_none=True)}
            return orjson.dumps({"jsonrpc": "2.0", "id": call.id, **envelope})
        shaped = _shaped(result, call.version)
        return orjson.dumps({"jsonrpc": "2.0", "id": call.id, "result": shaped})

    async def result(self, call: DirectCall) -> HandlerResult:
        """The call's result through the gate: the tool's (a CallToolResult), or a refusal
        in the wire's form for the caller's version; an MCPError raises."""

        async def run() -> CallToolResult:
            return await self._run(call)

        return await self.gate.gated(call.headers, call.name, call.arguments, run, call.version)

    async def _run(self, call: DirectCall) -> CallToolResult:
        """The SDK's tools/call handler's own steps (MCPServer._handle_call_tool)."""
        context = HeaderContext(call.headers, self.server)
        try:
            result = await self.server.call_tool(call.name, call.arguments, context)
        except MCPError:
            raise
        except Exception as error:
            logger.info("Tool %r failed: %r", call.name, str(error))
            return CallToolResult(
                content=[TextContent(type="text", text=str(error))], is_error=True
            )
        if not isinstance(result, CallToolResult):  # a tool asking for input: none here does
            raise MCPError(code=-32603, message=f"{call.name} asked for input it cannot get")
        return result
