"""The OpenEnv environment: an episode of a benchmark task, acted on with the MCP endpoint's
tools, one call a step, following OpenEnv's tool-calling actions (RFC 003: ListToolsAction and
CallToolAction; their observations).

`reset()` starts an episode (a task of the server's task file, by idx, by type or drawn with
`seed`, or a task row given whole) and observes its prompt. `step()` calls one tool through the
MCP endpoint with the episode's own token, so a step reaches its episode's sandbox and no
other; `submit_answer` is graded, its reward observed, and the episode ends. `state` holds the
episode's id, its step count and its sandbox's diff.

The environment reaches the org through its HTTP API in process (the control plane for
episodes, /mcp for tools), on the app's event loop (`AppLink`)."""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from typing import Any

import httpx
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as McpTool
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from app.agents.app_link import AppLink, McpSession
from app.errors import SalesforceError

CONTROL = "/__localforce"
ANSWER_TOOL = "submit_answer"
# The MCP SDK's text of a tool error: "Error executing tool <name>: <what went wrong>".
TOOL_ERROR = re.compile(r"Error executing tool [^:]+: (?P<text>.*)", re.DOTALL)
BAD_ARGUMENTS = re.compile(r"\d+ validation errors? for \w+Arguments")


class EpisodeObservation(Observation):
    """What reset() observes: the task's prompt, and what the agent is given of the task."""

    episode_id: str = Field(description="The episode's id (its sandbox's id)")
    prompt: str = Field(description="The task's query, as the agent is asked it")
    task: dict[str, Any] = Field(description="The task as given: its type, query and metadata")
    tools: list[str] = Field(description="The names of the tools step() may call")


class EpisodeState(State):
    """The episode: its id and step count (OpenEnv's), its task type, whether it has ended,
    its reward, and its sandbox's diff (what the episode changed in the org)."""

    task: str | None = Field(default=None, description="The task's type")
    done: bool = Field(default=False, description="Whether the answer was given")
    reward: float | None = Field(default=None, description="The answer's reward")
    diff: dict[str, Any] = Field(default_factory=dict, description="The sandbox's diff")


class EpisodeError(SalesforceError):
    """The control plane refused to start an episode: its errorCode, message and status."""

    def __str__(self) -> str:  # what OpenEnv's server tells the client
        return f"{self.error_code}: {self.message}"


@dataclass(frozen=True)
class Labels:
    """What an episode's result is filed under: its run and its model or agent's label."""

    run: str | None = None
    agent: str | None = None

    @property
    def given(self) -> dict[str, str]:
        return {name: value for name, value in (("run", self.run), ("agent", self.agent)) if value}


@dataclass
class _Episode:
    id: str
    tools: McpSession  # the MCP endpoint, with the episode's token


class LocalforceEnvironment(Environment[Action, Observation, EpisodeState]):
    """One episode at a time of a localforce org, over its tools."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each episode has its own sandbox and token

    def __init__(self, link: AppLink, admin_key: str = "") -> None:
        super().__init__()
        self.link = link
        self.admin_key = admin_key
        self._episode: _Episode | None = None
        # What the session's episodes are filed under (set by a reset with the admin key).
        self.labels = Labels()
        # The episode's tools (its task's), by name, as its token lists them.
        self._tools: dict[str, McpTool] = {}
        self._ending: asyncio.Task[None] | None = None
        self._state = EpisodeState()

    # The OpenEnv interface: the synchronous methods wait for the app's loop, the async ones
    # await it; both run the same coroutines there.

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task: int | dict[str, Any] | None = None,
        task_type: str | None = None,
        org: str | None = None,
        admin_key: str | None = None,
        run: str | None = None,
        agent: str | None = None,
        **unknown: Any,
    ) -> EpisodeObservation:
        _known_only(unknown)
        labels = Labels(run, agent)
        return self.link.run_blocking(
            self._reset(seed, episode_id, task, task_type, org, admin_key, labels)
        )

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task: int | dict[str, Any] | None = None,
        task_type: str | None = None,
        org: str | None = None,
        admin_key: str | None = None,
        run: str | None = None,
        agent: str | None = None,
        **unknown: Any,
    ) -> EpisodeObservation:
        _known_only(unknown)
        labels = Labels(run, agent)
        return await self.link.run(
            self._reset(seed, episode_id, task, task_type, org, admin_key, labels)
        )

    # OpenEnv's HTTP /step passes on the request's other fields (request_id): nothing to do.
    def step(self, action: Action, timeout_s: float | None = None, **_: Any) -> Observation:
        return self.link.run_blocking(self._step(action, timeout_s))

    async def step_async(
        self, action: Action, timeout_s: float | None = None, **_: Any
    ) -> Observation:
        return await self.link.run(self._step(action, timeout_s))

    @property
    def state(self) -> EpisodeState:
        return self._state.model_copy(deep=True)

    def close(self) -> None:
        """End the episode: its sandbox is deleted."""
        if self._episode is None:
            return
        if self.link.on_app_loop():  # OpenEnv's HTTP routes close there: end it, not waiting
            self._ending = asyncio.get_running_loop().create_task(self._end())
        else:
            self.link.run_blocking(self._end())

    # Episodes, through the control plane.

    async def _reset(
        self,
        seed: int | None,
        episode_id: str | None,
        task: int | dict[str, Any] | None,
        task_type: str | None,
        org: str | None,
        admin_key: str | None,
        labels: Labels,
    ) -> EpisodeObservation:
        if admin_key is not None:
            self.admin_key = admin_key
            self.labels = labels
        elif self.admin_key and (isinstance(task, dict) or episode_id or org or labels.given):
            # The session holds the rights it was opened with: a reset without the key starts
            # another of the server's own tasks, never one the client writes or places.
            raise EpisodeError(
                "reset: only a task of the server's task file (by idx, task_type or seed) may "
                "be started without the admin key, in a session opened with it; a task row, "
                "an episode_id, an org, a run or an agent label needs admin_key",
                error_code="INVALID_AUTH_HEADER",
                status_code=401,
            )
        await self._end()
        if task is None:
            task = await self._draw(seed, task_type)
        body: dict[str, Any] = {"task": task, **self.labels.given}
        if episode_id is not None:
            body["id"] = episode_id
        if org is not None:
            body["org"] = org
        made = await self._control("POST", "/episodes", body)
        tools = McpSession(self.link, made["access_token"], channel="openenv")
        self._episode = _Episode(id=made["id"], tools=tools)
        self._tools = {tool.name: tool for tool in await tools.list_tools()}
        self._state = EpisodeState(
            episode_id=made["id"],
            task=made["task"]["task"],
            diff=await self._control("GET", f"/sandboxes/{made['id']}/diff"),
        )
        return EpisodeObservation(
            episode_id=made["id"],
            prompt=made["prompt"],
            task=made["task"],
            tools=list(self._tools),
        )

    async def _draw(self, seed: int | None, task_type: str | None) -> int:
        """A task of the server's task file (of `task_type`, if given), drawn with `seed`."""
        listed = (await self._control("GET", "/tasks"))["tasks"]
        idxs = sorted(
            row["idx"]
            for row in listed
            if isinstance(row["idx"], int) and task_type in (None, row["task"])
        )
        if not idxs:
            raise EpisodeError(
                f"task_type: the task file has no task of type {task_type}",
                error_code="INVALID_INPUT",
            )
        return random.Random(seed).choice(idxs)

    async def _end(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            async with self._control_client() as client:
                await client.delete(f"{CONTROL}/episodes/{episode.id}")

    def _control_client(self) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.admin_key}"} if self.admin_key else None
        return self.link.http(headers)

    async def _control(self, method: str, path: str, body: Any = None) -> Any:
        async with self._control_client() as client:
            response = await client.request(method, f"{CONTROL}{path}", json=body)
        if response.is_success:
            return response.json()
        try:
            error = response.json()[0]
            message, code = str(error["message"]), str(error["errorCode"])
        except (ValueError, LookupError, TypeError):
            message, code = response.text[:500], "UNKNOWN_EXCEPTION"
        raise EpisodeError(message, error_code=code, status_code=response.status_code)

    # Steps: one tool call each, through the MCP endpoint.

    async def _step(self, action: Action, timeout_s: float | None) -> Observation:
        self._state.step_count += 1
        every = await self.link.tools()
        if isinstance(action, ListToolsAction):
            # An episode's tools are its task's; before any, the endpoint's.
            shown = self._tools if self._episode is not None else every
            listed = [
                Tool(name=t.name, description=t.description or "", input_schema=t.input_schema)
                for t in shown.values()
            ]
            return ListToolsObservation(tools=listed, done=self._state.done)
        if not isinstance(action, CallToolAction):
            raise TypeError(f"{type(action).__name__} is not a ListToolsAction or CallToolAction")
        # A tool outside the episode's task goes to the endpoint all the same, which refuses
        # it and records the attempt in the episode's trajectory.
        name = action.tool_name
        if name not in every:
            return self._failed(name, ToolErrorType.TOOL_NOT_FOUND, f"Unknown tool: {name}")
        episode = self._episode
        if episode is None:
            return self._failed(
                name, ToolErrorType.EXECUTION_ERROR, "No episode is running: reset() starts one"
            )
        if self._state.done:
            return self._failed(
                name,
                ToolErrorType.EXECUTION_ERROR,
                "The episode has ended (its answer was given): reset() starts another",
            )
        try:
            result = await asyncio.wait_for(
                episode.tools.call_tool(name, action.arguments), timeout=timeout_s
            )
        except TimeoutError:
            return self._failed(
                name, ToolErrorType.TIMEOUT, f"Tool '{name}' timed out after {timeout_s} seconds"
            )
        if not _reads_only(every[name]):
            self._state.diff = await self._control("GET", f"/sandboxes/{episode.id}/diff")
        if result.is_error:
            return self._tool_error(name, result)
        data = _data(every[name], result)
        if name == ANSWER_TOOL:
            self._state.done, self._state.reward = True, float(data["reward"])
        return CallToolObservation(
            tool_name=name,
            result=_result(result, data),
            done=self._state.done,
            reward=self._state.reward if name == ANSWER_TOOL else None,
        )

    def _failed(self, name: str, kind: ToolErrorType, message: str) -> CallToolObservation:
        return CallToolObservation(
            tool_name=name,
            error=ToolError(error_type=kind, message=message),
            done=self._state.done,
        )

    def _tool_error(self, name: str, result: CallToolResult) -> CallToolObservation:
        """A tool error's text, the Salesforce error '<errorCode>: <message>' for the org's."""
        text = _text(result)
        found = TOOL_ERROR.fullmatch(text)
        if found is not None:
            text = found.group("text")
        kind = (
            ToolErrorType.INVALID_ARGS
            if BAD_ARGUMENTS.match(text)
            else ToolErrorType.EXECUTION_ERROR
        )
        return self._failed(name, kind, text)


def _known_only(unknown: dict[str, Any]) -> None:
    if unknown:
        raise EpisodeError(
            f"reset: unknown argument {', '.join(sorted(unknown))}; reset takes seed, "
            "episode_id, task, task_type, org, admin_key, run and agent",
            error_code="INVALID_INPUT",
        )


def _reads_only(tool: McpTool) -> bool:
    """Whether the tool says it changes nothing (MCP's readOnlyHint), so the diff stands."""
    return tool.annotations is not None and tool.annotations.read_only_hint is True


def _text(result: CallToolResult) -> str:
    return "\n".join(item.text for item in result.content if isinstance(item, TextContent))


def _data(tool: McpTool, result: CallToolResult) -> Any:
    """What the tool returned: its structured content, without the wrapper the MCP SDK puts
    around a result that is not an object ({"result": ...})."""
    structured = result.structured_content
    schema = tool.output_schema or {}
    if structured is not None and set(schema.get("properties", {})) == {"result"}:
        return structured.get("result")
    return structured if structured is not None else _text(result)


def _result(result: CallToolResult, data: Any) -> dict[str, Any]:
    """A tool's result as OpenEnv's MCP clients read it (FastMCP's CallToolResult fields)."""
    return {
        "content": [item.model_dump(mode="json", exclude_none=True) for item in result.content],
        "structured_content": result.structured_content,
        "data": data,
        "is_error": False,
    }
