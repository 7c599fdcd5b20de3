"""localforce.verifiers against a live localforce server, through verifiers 0.4.0's own loops,
with a scripted policy standing in for the model.

The policy is a `vf.Client` (verifiers' model-client interface, verifiers/v1/clients/client.py):
the interception server hands it each chat-completions request the harness makes and serves
what it returns. verifiers builds its clients from a ClientConfig through
`verifiers.v1.interception.server.resolve_client` (InterceptionServer._client), with no hook
for a client object, so the test swaps that one function for configs naming SCRIPTED_URL.

Rollouts (one localforce episode each):
  via vf-eval's runner (run_eval, the taskset's first three tasks):
    task 0: soql_query, then submit_answer(right answer)        -> reward 1.0
    task 1: soql_query, then submit_answer(wrong answer)        -> reward 0.0
    task 2: soql_query, then the right answer as plain text;
            the adapter submits it (never calls submit_answer)  -> reward 1.0
  via the Env object load_environment returned (Env.serving + Env.run_slot):
    task 6: soql_query, then submit_answer(right answer)        -> reward 1.0
    task 9: soql_query again and again, until the seat's max_turns (6) refuses a turn;
            the adapter submits the (empty) final text           -> reward 0.0
    task 12: soql_query, then the model call fails (a 502): the rollout fails, unscored,
            and the episode is still ended (harness cleanup)     -> no reward, unanswered
Then the server's results for the run label hold each episode once, with the same rewards,
and no episode's sandbox is left.

Usage: LOCALFORCE_URL=... LOCALFORCE_ADMIN_KEY=... LOCALFORCE_ANSWERS=tasks.json
  LOCALFORCE_OUT=dir venv/bin/python verifiers_episodes.py
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import localforce
import verifiers.v1 as vf
import verifiers.v1.interception.server as interception_server
from localforce.verifiers import LocalforceTaskData, load_environment
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.configs.select import SelectCLIConfig
from verifiers.v1.dialects import Dialect
from verifiers.v1.graph import PendingTurn

URL = os.environ["LOCALFORCE_URL"]
ADMIN_KEY = os.environ["LOCALFORCE_ADMIN_KEY"]
TASKS = {row["idx"]: row for row in json.loads(Path(os.environ["LOCALFORCE_ANSWERS"]).read_text())}
SCRIPTED_URL = "http://scripted-policy.invalid/v1"
RUN = f"vf-test-{uuid.uuid4().hex[:8]}"
OUT = Path(os.environ["LOCALFORCE_OUT"])

# What the policy does on each task (by its idx in the server's task file).
PLAN = {0: "right", 1: "wrong", 2: "text", 6: "right", 9: "loop", 12: "crash"}
EXPECTED = {0: 1.0, 1: 0.0, 2: 1.0, 6: 1.0, 9: 0.0, 12: None}
MAX_TURNS = 6


class ScriptedPolicy(vf.Client):
    """A model that answers with tool calls from a script: one soql_query, then the answer."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    async def get_response(
        self,
        dialect: Dialect,
        body: dict,
        sampling: vf.SamplingConfig,
        session_id: str | None = None,
        turn: PendingTurn | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> vf.Response:
        self.requests.append(body)
        messages = body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        idx = next(i for i, row in TASKS.items() if row["query"].strip() == prompt.strip())
        tools = {tool["function"]["name"] for tool in body.get("tools", [])}
        assert {"soql_query", "submit_answer"} <= tools, tools
        results = [m for m in messages if m["role"] == "tool"]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if not results or PLAN[idx] == "loop":
            message["tool_calls"] = [
                call("soql_query", {"query": "SELECT Id, Subject FROM Case LIMIT 2"})
            ]
        else:
            assert results[-1]["content"] and "Subject" in results[-1]["content"], results[-1]
            answer = str(TASKS[idx]["answer"])
            if PLAN[idx] == "crash":
                raise RuntimeError("scripted model failure")
            if PLAN[idx] == "right":
                message["tool_calls"] = [call("submit_answer", {"response": answer})]
            elif PLAN[idx] == "wrong":
                message["tool_calls"] = [call("submit_answer", {"response": "005000000000000AAA"})]
            else:
                message["content"] = answer
        raw = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        response = dialect.parse_response(dialect.validate_response(raw))
        response.raw = raw  # what the interception server returns to the harness
        return response


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{uuid.uuid4().hex[:8]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


POLICY = ScriptedPolicy()
_resolve = interception_server.resolve_client
interception_server.resolve_client = lambda config: (
    POLICY if config.base_url == SCRIPTED_URL else _resolve(config)
)
CLIENT = vf.EvalClientConfig(base_url=SCRIPTED_URL, api_key_var="SCRIPTED_POLICY_KEY")


def check(trace: vf.Trace, label: str) -> tuple[int, str]:
    data = trace.task.data
    assert isinstance(data, LocalforceTaskData), type(data)
    idx = data.task_idx
    episode = trace.info["localforce_episode"]
    print(
        f"  {label}: task {idx} ({data.task_type}) reward={trace.reward} rewards="
        f"{ {k: (v.score if v else None) for k, v in trace.rewards.items()} } "
        f"metrics={trace.metrics} turns={trace.num_turns} stop={trace.stop_condition} ok={trace.ok}"
    )
    if PLAN[idx] == "crash":  # failed: recorded as an error, not scored
        assert not trace.ok and trace.errors, trace
        print(f"    error: {trace.errors[-1].type}: {trace.errors[-1].message[:100]}")
        return idx, episode
    assert trace.ok and not trace.errors, trace.errors
    assert trace.reward == EXPECTED[idx], (idx, trace.reward)
    assert trace.metrics["answered_by_model"] == (1.0 if PLAN[idx] in ("right", "wrong") else 0.0)
    if PLAN[idx] == "loop":
        assert trace.stop_condition == "max_turns" and trace.num_turns == MAX_TURNS, trace
    return idx, episode


async def main() -> None:
    started = time.monotonic()
    env = load_environment(None, url=URL, admin_key=ADMIN_KEY, run=RUN, max_turns=MAX_TURNS)
    assert isinstance(env, vf.Env), type(env)
    rows = list(env.taskset)
    print(
        f"environment: {type(env).__name__}, harness {type(env._harnesses['agent']).__name__}, "
        f"{len(rows)} tasks; row 0: {rows[0].data.model_dump(exclude_defaults=True)}"
    )
    assert [row.data.task_idx for row in rows] == sorted(TASKS)
    assert all("answer" not in row.data.model_dump() for row in rows)

    # 1. vf-eval's runner (what `vf-eval localforce_verifiers -n 3` runs after parsing).
    config = EvalConfig(
        env=env.config,
        model="scripted-policy",
        client=CLIENT,
        select=SelectCLIConfig(limit=3),
        num_rollouts=1,
        max_concurrent=3,
        push=False,
        rich=None,
        output_dir=OUT,
    )
    episodes = await run_eval(config)
    print(f"run_eval: {len(episodes)} episodes, traces in {OUT / config.run.dir}")
    seen = [check(episode.traces[0], "run_eval") for episode in episodes]
    saved = (OUT / config.run.dir / "configs").rglob("*.json")
    assert all(ADMIN_KEY not in path.read_text() for path in saved), "admin key saved"
    assert ADMIN_KEY not in (OUT / config.run.dir / "traces.jsonl").read_text()

    # 2. The Env object itself: Env.serving() + Env.run_slot(), as the runner does.
    ctx = vf.ModelContext(model="scripted-policy", client=CLIENT)
    slots = [slot for row in rows if row.data.task_idx in (6, 9, 12) for slot in env.slots(row)]
    async with env.serving():
        episodes = await asyncio.gather(*(env.run_slot(slot, ctx) for slot in slots))
    seen += [check(episode.traces[0], "run_slot") for episode in episodes]
    assert sorted(idx for idx, _ in seen) == sorted(PLAN), seen

    # 3. The server recorded each episode once, graded as the rollouts were.
    results = localforce.Control(URL, ADMIN_KEY).results(run=RUN)
    print(f"server results for run {RUN}:")
    for result in results:
        print(
            f"  episode {result['episode']} task {result['idx']} answer={result['answer']!r} "
            f"reward={result['reward']} steps={result['steps']}"
        )
    assert len(results) == len(PLAN), len(results)
    assert max(Counter(r["episode"] for r in results).values()) == 1
    assert {r["idx"]: r["reward"] for r in results} == EXPECTED
    # Each trace names its episode (trace.info), the one the server graded for that task.
    assert {(r["idx"], r["episode"]) for r in results} == set(seen)
    assert all(bool(r["answered_at"]) == (r["reward"] is not None) for r in results)
    # Every episode is over: its sandbox deleted, its result kept.
    control = localforce.Control(URL, ADMIN_KEY)
    live = {box["id"] for box in control.sandboxes()}
    assert not any(r["episode"] in live for r in results), live
    print(f"model requests: {len(POLICY.requests)}; elapsed {time.monotonic() - started:.1f}s")
    print("PASS")


if __name__ == "__main__":
    asyncio.run(main())
