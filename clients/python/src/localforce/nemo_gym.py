"""A NeMo Gym resources server backed by localforce's benchmark episodes (needs `nemo-gym`,
which needs Python >= 3.12; the rest of this package does not import it).

Each rollout is one episode: `/seed_session` starts it for the row's `task_idx` (of `split`,
or of the server's task file), `POST /<tool>` calls one of the episode's tools through
localforce's MCP endpoint with the episode's own token, and `/verify` grades the rollout's
final answer through the control plane, once. A row of the data set is

    {"responses_create_params": {"input": [...], "tools": [...]}, "task_idx": 18, "split": null}

which `dataset_rows()` builds from the episodes themselves. The episode rides in NeMo Gym's
signed session cookie, so parallel rollouts never share one and any worker serves any call.
In a NeMo Gym checkout, `resources_servers/localforce/app.py` is

    from localforce.nemo_gym import LocalforceResourcesServer
    if __name__ == "__main__":
        LocalforceResourcesServer.run_webserver()

with `localforce-client` in its requirements.txt and its YAML config naming
`localforce_url` and `admin_key` beside `entrypoint: app.py` and `domain: agent`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import PlainTextResponse, Response
from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseSeedSessionRequest,
    BaseSeedSessionResponse,
    BaseVerifyRequest,
    BaseVerifyResponse,
    SimpleResourcesServer,
)
from nemo_gym.openai_utils import NeMoGymResponse
from pydantic import BaseModel, ConfigDict, PrivateAttr

from localforce.control import TIMEOUT, AsyncControl
from localforce.errors import SalesforceError, ToolError, Unanswered
from localforce.plans import arun
from localforce.tools import call_tool, list_tools

# Where the session cookie keeps the rollout's episode.
EPISODE_KEY = "localforce_episode"
NO_EPISODE = "NO_EPISODE: this session has no episode; POST /seed_session first, with its cookie"


class LocalforceResourcesServerConfig(BaseResourcesServerConfig):
    localforce_url: str = "http://127.0.0.1:8000"
    admin_key: str | None = None
    split: str | None = None  # the split of rows that name none (None: the server's task file)
    run: str | None = None  # the labels the episodes' results are filed under
    agent: str | None = None
    timeout: float = TIMEOUT


class LocalforceTask(BaseModel):
    """The task a row names: its idx in `split`'s part, or in the server's task file."""

    model_config = ConfigDict(extra="allow")  # the rest of the row rides along

    task_idx: int
    split: str | None = None


class LocalforceSeedSessionRequest(BaseSeedSessionRequest, LocalforceTask):
    pass


class LocalforceSeedSessionResponse(BaseSeedSessionResponse):
    episode_id: str
    task: str


class LocalforceVerifyRequest(BaseVerifyRequest, LocalforceTask):
    pass


class LocalforceVerifyResponse(BaseVerifyResponse):
    model_config = ConfigDict(extra="allow")

    episode_id: str
    metric: str | None = None
    answer: str | None = None  # what was graded
    channel: str | None = None  # "rest": graded at /verify; "mcp": by the submit_answer tool


def _field(item: Any, name: str) -> Any:
    """A field of an output item, whichever of NeMo Gym's models (or a dict) it was read as."""
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def final_text(response: NeMoGymResponse) -> str:
    """The rollout's final answer: the text of the assistant message that ends its output
    ("" when a tool call ends it, as a rollout cut short by max_steps)."""
    for item in reversed(response.output):
        kind = _field(item, "type")
        if kind == "reasoning":
            continue
        if kind != "message" or _field(item, "role") != "assistant":
            return ""
        content = _field(item, "content")
        if isinstance(content, str):
            return content
        return "".join(
            _field(part, "text") or "" for part in content if _field(part, "type") == "output_text"
        )
    return ""


class LocalforceResourcesServer(SimpleResourcesServer):
    config: LocalforceResourcesServerConfig
    _control: AsyncControl = PrivateAttr()
    _live: set[str] = PrivateAttr(default_factory=set)  # this worker's unverified episodes

    def model_post_init(self, context: Any) -> None:
        self._control = AsyncControl(
            self.config.localforce_url, self.config.admin_key, timeout=self.config.timeout
        )

    def setup_webserver(self) -> FastAPI:
        app: FastAPI = super().setup_webserver()
        # After /seed_session, /verify and /aggregate_metrics, so it never shadows them: the
        # agent posts each function call to /<its name>, and an episode's tools vary by task.
        app.post("/{tool}")(self.tool)
        inner = app.router.lifespan_context

        @asynccontextmanager
        async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
            async with inner(app) as state:
                yield state
            await self.aclose()

        app.router.lifespan_context = lifespan
        return app

    async def seed_session(
        self, request: Request, body: LocalforceSeedSessionRequest
    ) -> LocalforceSeedSessionResponse:
        split = body.split or self.config.split
        try:
            made = await self._control.start_episode(
                body.task_idx, split=split, run=self.config.run, agent=self.config.agent
            )
        except SalesforceError as error:
            raise HTTPException(error.status, str(error)) from error
        former = request.session.get(EPISODE_KEY)
        if former:  # a session seeded again: its former episode ends (its result is kept)
            await self._end(former["id"])
        request.session[EPISODE_KEY] = {
            "id": made["id"],
            "token": made["access_token"],
            "task_idx": body.task_idx,
            "split": split,
        }
        self._live.add(made["id"])
        return LocalforceSeedSessionResponse(episode_id=made["id"], task=made["task"]["task"])

    async def tool(self, tool: str, request: Request) -> Response:
        """One of the episode's tools, as an MCP agent sees it: its text (a tool's own error
        reads "<errorCode>: ..."), which the agent hands the model as the call's output."""
        episode = request.session.get(EPISODE_KEY)
        if not episode:
            return PlainTextResponse(NO_EPISODE, status_code=409)
        raw = await request.body()
        try:
            arguments = (await request.json()) if raw.strip() else {}
            if not isinstance(arguments, dict):
                raise ValueError(f"the arguments of {tool} are an object of named values")
            result = await arun(
                call_tool(episode["token"], tool, arguments),
                self._control.http,
                self._control.retry,
            )
        except (ValueError, ToolError, SalesforceError) as error:
            return PlainTextResponse(f"INVALID_TOOL_CALL: {error}", status_code=400)
        except Unanswered as error:  # the server behind a balancer was lost mid-call
            return PlainTextResponse(f"UNANSWERED: {error}", status_code=502)
        return PlainTextResponse(result.text)

    async def verify(
        self, request: Request, body: LocalforceVerifyRequest
    ) -> LocalforceVerifyResponse:
        episode = request.session.get(EPISODE_KEY)
        if not episode:
            raise HTTPException(409, NO_EPISODE)
        named = (body.task_idx, body.split or self.config.split)
        if named != (episode["task_idx"], episode["split"]):  # a cookie of another rollout
            raise HTTPException(409, f"the session's episode is of task {episode['task_idx']}")
        try:
            graded = await self._grade(episode["id"], final_text(body.response))
        finally:
            await self._end(episode["id"])
        # Merged, not keywords: a row's own extra fields may share a name with ours.
        verified: LocalforceVerifyResponse = LocalforceVerifyResponse.model_validate(
            body.model_dump()
            | {
                "reward": float(graded.get("reward") or 0.0),
                "episode_id": episode["id"],
                "metric": graded.get("metric"),
                "answer": graded.get("answer"),
                "channel": graded.get("channel"),
            }
        )
        return verified

    async def _grade(self, episode_id: str, text: str) -> dict[str, Any]:
        """The episode's result: the text graded now, unless the rollout answered already
        (submit_answer), whose grade stands: the server grades an episode once."""
        try:
            graded = await self._control.answer(episode_id, text)
            return {**graded, "answer": graded.get("response"), "channel": "rest"}
        except SalesforceError as error:
            if error.status != 409:  # 409 EPISODE_ENDED: answered through its tool
                raise HTTPException(error.status, str(error)) from error
        return dict((await self._control.episode(episode_id))["result"])

    async def _end(self, episode_id: str) -> None:
        """Free the episode's sandbox; its result stays in localforce's results."""
        self._live.discard(episode_id)
        await self._control.end_episode(episode_id)

    async def aclose(self) -> None:
        """End the episodes this worker started and no rollout verified, then the client."""
        try:
            for episode_id in list(self._live):
                await self._end(episode_id)
        finally:
            await self._control.aclose()


def responses_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An MCP tool as a Responses-API function tool."""
    return {
        "type": "function",
        "name": tool["name"],
        "description": tool.get("description", ""),
        "parameters": tool.get("inputSchema", {"type": "object", "properties": {}}),
        "strict": False,
    }


async def dataset_rows(
    control: AsyncControl, tasks: Iterable[int], split: str | None = None
) -> list[dict[str, Any]]:
    """NeMo Gym data set rows of the tasks (idx of `split`'s part, or of the server's task
    file): each one's prompt, with its metadata as the system message (both from the task
    list, which holds no answer), and its type's tools, read off one episode of that type,
    which is ended and purged at once."""
    listed = await (control.split_tasks(split) if split else control.tasks())
    by_idx = {row["idx"]: row for row in listed}
    tools_of: dict[str, list[dict[str, Any]]] = {}  # a task type's tools are the same for all
    rows = []
    for idx in tasks:
        task = by_idx.get(idx)
        if task is None:
            raise ValueError(f"no task has idx {idx} in {split or 'the server task file'}")
        if task["task"] not in tools_of:
            made = await control.start_episode(idx, split=split, run="nemo-gym-dataset")
            try:
                tools = await arun(list_tools(made["access_token"]), control.http, control.retry)
            finally:
                await control.end_episode(made["id"])
                await control.purge_result(made["id"])
            tools_of[task["task"]] = [responses_tool(tool) for tool in tools]
        metadata = task.get("metadata") or {}
        system = "\n".join(text for key in ("required", "optional") if (text := metadata.get(key)))
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": task["query"]})
        rows.append(
            {
                "responses_create_params": {"input": messages, "tools": tools_of[task["task"]]},
                "task_idx": idx,
                "split": split,
            }
        )
    return rows
