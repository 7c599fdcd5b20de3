"""The OpenEnv client of /openenv: OpenEnv's MCPToolClient (reset, step, list_tools,
call_tool over one WebSocket session), reading reset's observation and the state as
localforce gives them.

    key = "..."  # the server's admin key: `localforce admin-key`
    async with LocalforceEnvClient("http://127.0.0.1:8000/openenv", admin_key=key) as env:
        started = await env.reset(task=3)
        print(started.observation.prompt)
        records = await env.call_tool("soql_query", query="SELECT Id FROM Case")
"""

from __future__ import annotations

import asyncio
from typing import Any, Self, cast

import orjson
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import Observation
from openenv.core.mcp_client import MCPToolClient

from app.agents.environment import EpisodeObservation, EpisodeState


class LocalforceEnvClient(MCPToolClient):
    """`admin_key` goes with every reset: an episode is started through the control plane."""

    def __init__(self, base_url: str, admin_key: str | None = None, **options: Any) -> None:
        super().__init__(base_url=base_url, **options)
        self.admin_key = admin_key

    async def reset(self, **kwargs: Any) -> StepResult[Observation]:
        if self.admin_key is not None:
            kwargs.setdefault("admin_key", self.admin_key)
        result: StepResult[Observation] = await super().reset(**kwargs)
        return result

    async def __aenter__(self) -> Self:  # the client's own type, for the checker
        await super().__aenter__()
        return self

    async def _receive(self) -> dict[str, Any]:
        """OpenEnv's, for less of a step's time: the message read by orjson (an observation
        carries the tool's result three times over: its text, structured content and data),
        and awaited under a timeout scope, not a task of its own as `wait_for` makes."""
        assert self._ws is not None
        async with asyncio.timeout(self._message_timeout):
            raw = await self._ws.recv()
        message: dict[str, Any] = orjson.loads(raw)
        return message

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Observation]:
        observation = payload.get("observation", {})
        if "prompt" not in observation:  # a tool's: MCPToolClient reads those
            parsed: StepResult[Observation] = super()._parse_result(payload)
            return parsed
        return StepResult(
            observation=EpisodeObservation(
                **observation, done=payload.get("done", False), reward=payload.get("reward")
            ),
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )

    def _parse_state(self, payload: dict[str, Any]) -> EpisodeState:
        return EpisodeState(**payload)

    async def state(self) -> EpisodeState:
        return cast(EpisodeState, await super().state())  # what _parse_state gives
