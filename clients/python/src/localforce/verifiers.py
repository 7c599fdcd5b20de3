"""localforce's benchmark episodes as a Prime Intellect `verifiers` environment (0.4.0, whose
stack is `verifiers.v1`; `pip install verifiers` beside this client):

    from localforce.verifiers import load_environment
    env = load_environment("crmarena-original@v1:train", url="http://127.0.0.1:8000",
                           admin_key=key)            # a verifiers.v1 Env (SingleAgentEnv)

Each row of the taskset is one task of the split (or of the server's task file): its idx and
type, never its answer (the client never sees one). Each rollout is one localforce episode:
the task's `setup` starts it (its own sandbox), the harness plays it, calling the episode's
own tools through `AsyncEnv.step` (the MCP endpoint, with the episode's token), and the
task's `finalize` ends it. The reward is the server's grade of `submit_answer`; a model that
never submits has its last message's text submitted for it, so the server grades it.

verifiers resolves plugins by id, importing a module of that name: this module registers
itself as `localforce_verifiers` (PLUGIN_ID) on import, so that id names its taskset and its
harness (`vf-eval` needs `import localforce.verifiers` first).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any, TypeAlias

import httpx
import verifiers.v1 as vf
from pydantic import Field, SecretStr
from verifiers.v1.runtimes import ProgramResult, Runtime, SubprocessConfig

from localforce.control import Control
from localforce.env import ANSWER_TOOL, AsyncEnv

PLUGIN_ID = "localforce_verifiers"
ADMIN_KEY_VAR = "LOCALFORCE_ADMIN_KEY"
DEFAULT_URL = "http://127.0.0.1:8000"
DEFAULT_MAX_TURNS = 30

Trace: TypeAlias = "vf.Trace[Any, Any, Any]"

# verifiers imports a plugin by its id (`_import_plugin`), and a dotted id fails there.
sys.modules.setdefault(PLUGIN_ID, sys.modules[__name__])


class LocalforceTaskConfig(vf.TaskConfig):
    """Where each task's episode runs (`--env.taskset.task.*`)."""

    url: str = DEFAULT_URL
    # SecretStr: saved run configs (eval.json) show it masked. None: $LOCALFORCE_ADMIN_KEY.
    admin_key: SecretStr | None = None
    run: str | None = None
    """The label the server files the episodes' results under."""
    agent: str | None = None

    def admin(self) -> str | None:
        return (
            self.admin_key.get_secret_value() if self.admin_key else os.environ.get(ADMIN_KEY_VAR)
        )


class LocalforceTaskData(vf.TaskData):
    """A row: the task's idx in the split (or the server's task file), its type, and its
    prompt as the task list gives it (the episode gives the same when it starts)."""

    task_idx: int
    task_type: str
    split: str | None = None


class LocalforceState(vf.State):
    """One rollout's episode. Traces exclude `trace.state` from what they record."""

    env: Any = Field(default=None, exclude=True)  # the episode's AsyncEnv, while it runs
    prompt: str = ""
    context: str = ""  # the task's metadata: today's date, the policy to apply
    tools: list[dict[str, Any]] = Field(default_factory=list)
    reward: float | None = None  # the server's grade, once an answer is submitted
    submitted_by: str | None = None  # "model", or "adapter" (the final text, for it)


def _state(trace: Trace) -> LocalforceState:
    state = trace.state
    if not isinstance(state, LocalforceState):
        raise TypeError(f"a localforce rollout's state is LocalforceState, not {type(state)}")
    return state


async def _end_episode(state: LocalforceState) -> None:
    """End the episode (its sandbox deleted, its result kept) and close its client; again
    is a no-op, so finalize and the harness's cleanup may both call it."""
    env, state.env = state.env, None
    if env is not None:
        await env.aclose()


class LocalforceTask(vf.Task[LocalforceTaskData, LocalforceState, LocalforceTaskConfig]):
    @property
    def key(self) -> str:
        # The task's place in its split: what a result and a trace are filed under.
        return f"{self.data.split or 'tasks'}:{self.data.task_idx}"

    async def setup(self, trace: Trace, runtime: Runtime) -> None:
        """Start the rollout's episode."""
        state = _state(trace)
        config = self.config
        state.env = AsyncEnv(
            config.url,
            split=self.data.split,
            admin_key=config.admin(),
            run=config.run,
            agent=config.agent,
        )
        prompt, info = await state.env.reset(task=self.data.task_idx)
        metadata = info.get("metadata") or {}
        trace.info["localforce_episode"] = info["episode_id"]  # recorded: the server's result
        state.prompt = prompt
        state.context = "\n".join(metadata.get(key) or "" for key in ("required", "optional"))
        state.tools = info["tools"]

    async def finalize(self, trace: Trace, runtime: Runtime) -> None:
        await _end_episode(_state(trace))

    @vf.reward
    async def localforce(self, trace: Trace) -> float:
        """The server's grade of the submitted answer (0.0 when none was)."""
        return _state(trace).reward or 0.0

    @vf.metric
    async def answered_by_model(self, trace: Trace) -> float:
        return 1.0 if _state(trace).submitted_by == "model" else 0.0


class LocalforceTasksetConfig(vf.TasksetConfig):
    """Which tasks (`--env.taskset.*`)."""

    id: str = PLUGIN_ID
    split: str | None = None
    """A split's part ("crmarena-original@v1:train"); None: the server's task file."""
    types: list[str] | None = None
    """Only these task types."""
    task: LocalforceTaskConfig = LocalforceTaskConfig()


# verifiers' TaskT is bound to Task's defaults, and Task is invariant in its parameters.
class LocalforceTaskset(vf.Taskset[LocalforceTask, LocalforceTasksetConfig]):  # type: ignore[type-var]
    def load(self) -> Iterator[LocalforceTask]:
        config = self.config
        with Control(config.task.url, config.task.admin()) as control:
            rows = control.split_tasks(config.split) if config.split else control.tasks()
        for row in rows:
            if config.types and row["task"] not in config.types:
                continue
            name = f"{config.split or 'tasks'}:{row['idx']}"
            data = LocalforceTaskData(
                task_idx=row["idx"],
                task_type=row["task"],
                split=config.split,
                id=name,
                name=name,
                prompt=row["query"],
            )
            yield LocalforceTask(data, config.task)


class LocalforceHarnessConfig(vf.HarnessConfig):
    id: str = PLUGIN_ID
    submit_final_message: bool = True
    """Submit the model's last text as the answer when it never called submit_answer."""
    request_timeout: float = 600.0
    """Seconds one model call may take."""


class LocalforceHarness(vf.Harness[LocalforceHarnessConfig]):
    """A chat loop run in-process (verifiers' contract for harnesses: every model call goes
    through the rollout's interception endpoint, which records the turns and applies the
    run's limits; the program may be a loop of the env's own). Tool calls go to the
    episode's AsyncEnv, so the model gets exactly the task's tools."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False  # nothing runs on the host: no subprocess-runtime warning
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: Trace,
        runtime: Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> ProgramResult:
        state = _state(trace)
        env = state.env
        if not isinstance(env, AsyncEnv) or env.episode is None:
            raise RuntimeError("the rollout has no episode: LocalforceTask.setup starts it")
        # The system message as the server's own runner gives it: the task's metadata, after
        # the run's system prompt (if any).
        system = "\n\n".join(text for text in (data.system_prompt, state.context.strip()) if text)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": state.prompt})
        headers = {"Authorization": f"Bearer {secret}"}
        timeout = httpx.Timeout(self.config.request_timeout, connect=10.0)
        async with httpx.AsyncClient(timeout=timeout) as http:
            while state.reward is None:
                request = {"model": ctx.model, "messages": messages, "tools": state.tools}
                reply = await http.post(
                    f"{endpoint}/chat/completions", json=request, headers=headers
                )
                if reply.status_code >= 400:
                    if trace.stop_condition is not None:
                        break  # a limit or @stop refused the turn: the run ends cleanly
                    raise RuntimeError(f"model call failed ({reply.status_code}): {reply.text}")
                message = reply.json()["choices"][0]["message"]
                messages.append({key: value for key, value in message.items() if value is not None})
                calls = message.get("tool_calls") or []
                if not calls:
                    break
                for call in calls:
                    step = await env.step(call)
                    name = call.get("function", {}).get("name", "")
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": call.get("id"),
                            "name": name,
                            "content": step.observation,
                        }
                    )
                    if step.terminated:  # graded: the episode takes no more calls
                        state.reward, state.submitted_by = step.reward, "model"
                        break
            if state.reward is None and self.config.submit_final_message:
                await self._submit_final(state, messages)
        return ProgramResult(exit_code=0, stdout="", stderr="")

    async def _submit_final(self, state: LocalforceState, messages: list[dict[str, Any]]) -> None:
        """Submit the model's last text through the episode's own answer tool."""
        if not any(tool["function"]["name"] == ANSWER_TOOL for tool in state.tools):
            return
        said = [m.get("content") for m in messages if m.get("role") == "assistant"]
        text = next((content for content in reversed(said) if isinstance(content, str)), "")
        step = await state.env.step({"name": ANSWER_TOOL, "arguments": {"response": text}})
        if step.terminated:
            state.reward, state.submitted_by = step.reward, "adapter"

    async def cleanup(self, trace: Trace, runtime: Runtime) -> None:
        # Always runs, also when the rollout failed and finalize was skipped.
        if isinstance(trace.state, LocalforceState):
            await _end_episode(trace.state)


def load_environment(
    split: str | None = None,
    url: str = DEFAULT_URL,
    admin_key: str | None = None,
    *,
    types: list[str] | None = None,
    run: str | None = None,
    agent: str | None = None,
    **options: Any,
) -> vf.Env[Any]:
    """A verifiers environment of `split`'s tasks (None: the server's task file), of the
    `types` given, its episodes' results filed under `run` and `agent`. `options` are the
    agent seat's (vf.AgentConfig: max_turns, timeout, sampling, ...)."""
    task = LocalforceTaskConfig(
        url=url, admin_key=SecretStr(admin_key) if admin_key else None, run=run, agent=agent
    )
    taskset = LocalforceTasksetConfig(split=split, types=types, task=task)
    # The harness runs in-process: the local subprocess runtime only gives it a work dir
    # (the seat's default runtime is a Prime cloud sandbox).
    seat = vf.AgentConfig(
        harness=LocalforceHarnessConfig(),
        runtime=SubprocessConfig(),
        **{"max_turns": DEFAULT_MAX_TURNS, **options},
    )
    return vf.load_environment(vf.SingleAgentEnvConfig(taskset=taskset, agent=seat))


__all__ = [
    "PLUGIN_ID",
    "LocalforceHarness",
    "LocalforceHarnessConfig",
    "LocalforceState",
    "LocalforceTask",
    "LocalforceTaskConfig",
    "LocalforceTaskData",
    "LocalforceTaskset",
    "LocalforceTasksetConfig",
    "load_environment",
]
