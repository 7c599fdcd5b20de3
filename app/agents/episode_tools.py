"""The MCP endpoint's gate for episodes: a caller whose token is an episode's sees and calls
that task's tools only (its type's tool set, app.tasks.tools), nothing once the episode is
answered, and every call it makes, refused or not, is recorded with its arguments, result and
latency: the episode's trajectory in the results store (queued, and written with the call log's
batches: a tool call waits for no database). A token of the org or of a plain
sandbox passes through untouched."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.types import CallToolResult, ListToolsResult, TextContent
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from mcp_types.methods import serialize_server_result

from app.api.deps import cached_resolve, token_in
from app.api.state import AppState
from app.tasks.episodes import EpisodeCaller
from app.tasks.results import EpisodeEnded, ToolCall
from app.tasks.tools import allows

LIST, CALL = "tools/list", "tools/call"


async def _caller(state: AppState, headers: Mapping[str, str]) -> EpisodeCaller | None:
    """The episode the request's token belongs to, as the session cache has it (the REST
    call the tool makes reads the same entry): an answer through this process is seen at
    once, one through another within SESSION_CACHE_SECONDS, as an ended session is. None for
    no episode's token."""
    token = token_in(headers)
    resolved = None if token is None else await cached_resolve(state, token)
    return None if resolved is None else resolved.episode  # no session: the tool's call answers


def _refused(text: str, version: str) -> dict[str, Any]:
    """A refusal as an error result, in the wire's form for the caller's protocol version: the
    SDK sends a middleware's result as it is, unshaped."""
    result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return serialize_server_result(CALL, version, dumped)


def _recorded(result: HandlerResult) -> tuple[Any, bool]:
    """A tool's result as the trajectory keeps it, and whether it is an error."""
    if isinstance(result, dict):  # the wire's form
        result = CallToolResult.model_validate(result)
    if isinstance(result, CallToolResult):
        if result.structured_content is not None and not result.is_error:
            return result.structured_content, False
        text = "\n".join(item.text for item in result.content if isinstance(item, TextContent))
        return text, bool(result.is_error)
    return result, False


class EpisodeToolGate(ServerMiddleware[Any]):
    """Scope and record the tool calls of an episode's agent."""

    def __init__(self, state: AppState, server: MCPServer) -> None:
        self.state = state
        self.server = server
        # Each tool's MCP readOnlyHint, by name (a task's READS take every read-only tool),
        # read from the server once its tools are all added.
        self.reads_only: dict[str, bool] | None = None

    async def _reads_only(self) -> dict[str, bool]:
        if self.reads_only is None:
            self.reads_only = {
                tool.name: tool.annotations is not None and tool.annotations.read_only_hint is True
                for tool in await self.server.list_tools()
            }
        return self.reads_only

    async def _allowed(self, caller: EpisodeCaller, name: str) -> bool:
        reads_only = await self._reads_only()
        return name in reads_only and allows(caller.tools, name, reads_only=reads_only[name])

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method not in (LIST, CALL):
            return await call_next(ctx)
        headers = getattr(ctx.request, "headers", None) or {}
        caller = await _caller(self.state, headers)
        if caller is None:
            return await call_next(ctx)
        if ctx.method == LIST:
            # The chain answers the wire's form here (a dict), or the model.
            listed = await call_next(ctx)
            if isinstance(listed, ListToolsResult):
                listed = listed.model_dump(by_alias=True, mode="json", exclude_none=True)
            if isinstance(listed, dict):
                tools = listed.get("tools", [])
                listed = {
                    **listed,
                    "tools": [tool for tool in tools if await self._allowed(caller, tool["name"])],
                }
            return listed
        params = ctx.params or {}
        name, arguments = str(params.get("name")), params.get("arguments") or {}

        async def run() -> HandlerResult:
            return await call_next(ctx)

        version = ctx.protocol_version or DEFAULT_NEGOTIATED_VERSION
        return await self.gated(headers, name, arguments, run, version, caller)

    async def gated(
        self,
        headers: Mapping[str, str],
        name: str,
        arguments: Any,
        run: Callable[[], Awaitable[HandlerResult]],
        version: str,
        caller: EpisodeCaller | None = None,
    ) -> HandlerResult:
        """Call the tool (`run`) for a caller of no episode; for an episode's, if its task
        allows the tool and it is not answered yet, and record the call either way."""
        if caller is None:
            caller = await _caller(self.state, headers)
            if caller is None:
                return await run()
        started = time.perf_counter()
        result: HandlerResult
        if caller.answered:
            error = EpisodeEnded(caller.episode_id)
            result = _refused(f"{error.error_code}: {error}", version)
        elif not await self._allowed(caller, name):
            result = _refused(
                f"TOOL_NOT_ALLOWED: {name} is not a tool of this episode's task "
                f"({caller.task}); list_tools names the ones it has",
                version,
            )
        else:
            result = await run()
        latency_ms = (time.perf_counter() - started) * 1000
        kept, is_error = _recorded(result)
        # Real time to the microsecond, as the call log's: an episode's calls answered by
        # several workers are read back in the order they ended, whichever batch came first.
        ended = datetime.now(UTC).replace(tzinfo=None)
        call = ToolCall(ended, name, arguments, kept, is_error, latency_ms)
        self.state.tool_calls.add(caller.episode_id, call)  # written with the next batch
        return result
