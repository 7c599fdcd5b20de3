"""The MCP endpoint's tools (/mcp: stateless, answering JSON), called with a token: an
episode's token lists and calls its task's tools only. JSON-RPC over the client's own HTTP,
so nothing but httpx is needed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localforce.errors import ToolError
from localforce.plans import Call, Plan, body

PATH = "/mcp"
ACCEPT = "application/json, text/event-stream"


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer: its text (what an agent reads), its structured content where it has
    one, and whether it is the tool's error (a Salesforce error reads "<errorCode>: ...")."""

    text: str
    structured: Any
    is_error: bool


def _rpc(token: str, method: str, params: dict[str, Any]) -> Call:
    headers = {"Authorization": f"Bearer {token}", "Accept": ACCEPT}
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return Call("POST", PATH, json=message, headers=headers)


def _result(reply: Any) -> dict[str, Any]:
    if not isinstance(reply, dict) or "result" not in reply:
        error = reply.get("error", {}) if isinstance(reply, dict) else {}
        raise ToolError(f"MCP error {error.get('code')}: {error.get('message', reply)}")
    return dict(reply["result"])


def list_tools(token: str) -> Plan[list[dict[str, Any]]]:
    """The tools the token may call (MCP's: name, description, inputSchema, annotations)."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        listed = _result(
            body((yield _rpc(token, "tools/list", {"cursor": cursor} if cursor else {})))
        )
        tools += listed["tools"]
        cursor = listed.get("nextCursor")
        if not cursor:
            return tools


def call_tool(token: str, name: str, arguments: dict[str, Any]) -> Plan[ToolResult]:
    """One tool call; a tool's own error is a result (is_error), not an exception."""
    answered = yield _rpc(token, "tools/call", {"name": name, "arguments": arguments})
    result = _result(body(answered))
    texts = [
        item.get("text", "") for item in result.get("content", []) if item.get("type") == "text"
    ]
    structured = result.get("structuredContent")
    text = "\n".join(texts) if texts else json.dumps(structured)
    return ToolResult(text=text, structured=structured, is_error=bool(result.get("isError")))


def function_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """An MCP tool as a chat model's function (OpenAI's tools format)."""
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": tool.get("inputSchema", {"type": "object", "properties": {}}),
        },
    }
