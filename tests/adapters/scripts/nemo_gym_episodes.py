"""localforce.nemo_gym.LocalforceResourcesServer, driven as NeMo Gym drives it.

Three real NeMo Gym servers on one event loop (uvicorn, loopback ports, no Ray, no hydra):
the localforce resources server, NeMo Gym's own SimpleAgent (responses_api_agents.simple_agent)
and a scripted Responses-API model server. Rollouts are posted to the agent's /run as
RolloutCollectionHelper.run_examples posts them, in parallel; the agent seeds a session, posts
the model's function calls to the resources server with the session cookie, and verifies.

    LOCALFORCE_URL=... LOCALFORCE_ADMIN_KEY=... LOCALFORCE_ANSWERS=tasks.json \
        venv/bin/python run_test.py

The tasks' answers come from $LOCALFORCE_ANSWERS (the scripted policy's only), never from
the server code.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import localforce
import uvicorn
from fastapi import FastAPI
from localforce.nemo_gym import (
    LocalforceResourcesServer,
    LocalforceResourcesServerConfig,
    dataset_rows,
)
from nemo_gym.base_responses_api_model import (
    BaseResponsesAPIModelConfig,
    SimpleResponsesAPIModel,
)
from nemo_gym.config_types import BaseServerConfig, ModelServerRef, ResourcesServerRef
from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseCreateParamsNonStreaming
from nemo_gym.server_utils import (
    GlobalAIOHTTPAsyncClientConfig,
    ServerClient,
    get_response_json,
    raise_for_status,
    set_global_aiohttp_client,
)
from omegaconf import OmegaConf
from responses_api_agents.simple_agent.app import SimpleAgent, SimpleAgentConfig

URL = os.environ["LOCALFORCE_URL"]
ADMIN_KEY = os.environ["LOCALFORCE_ADMIN_KEY"]
ANSWERS = os.environ["LOCALFORCE_ANSWERS"]
RESOURCES, MODEL, AGENT = "localforce_resources", "policy_model", "localforce_agent"
RUN = f"nemo-gym-test-{uuid.uuid4().hex[:8]}"
QUERY = "SELECT Id, Subject FROM Case ORDER BY Id LIMIT 1"
ONE_ROW = re.compile(r'"totalSize": ?1\b')  # the query's answer, as its tool's text gives it

# The rollouts: (task idx, how the policy answers, right or wrong). Task 18 twice, as
# num_repeats would: each repeat must get an episode of its own.
PLANS = {18: ("message", True), 6: ("message", False), 19: ("submit_answer", True)}
ROLLOUTS = [18, 18, 6, 19]

failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def response(output: list[dict[str, Any]]) -> NeMoGymResponse:
    return NeMoGymResponse.model_validate(
        {
            "id": f"resp_{uuid.uuid4().hex}",
            "created_at": time.time(),
            "model": "scripted",
            "object": "response",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def function_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call_id = f"call_{uuid.uuid4().hex[:12]}"
    return {
        "type": "function_call",
        "name": name,
        "arguments": json.dumps(arguments),
        "call_id": call_id,
        "id": call_id,
        "status": "completed",
    }


def message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "id": f"msg_{uuid.uuid4().hex}",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


class ScriptedModelConfig(BaseResponsesAPIModelConfig):
    pass


class ScriptedModel(SimpleResponsesAPIModel):
    """A policy by script: one SOQL query, then the answer (right or wrong, by its plan) as its
    final message or through submit_answer; it knows its task by the prompt."""

    config: ScriptedModelConfig
    plans: dict[str, tuple[str, str]]  # prompt -> (how, answer)
    seen: list[tuple[str, str]] = []  # (prompt, the tool output it read)

    async def chat_completions(self, body: Any = None) -> Any:
        raise NotImplementedError("the scripted policy speaks the Responses API only")

    async def responses(self, body: NeMoGymResponseCreateParamsNonStreaming) -> NeMoGymResponse:
        items = [item if isinstance(item, dict) else item.model_dump() for item in body.input]
        prompt = next(i["content"] for i in items if i.get("role") == "user")
        how, answer = self.plans[prompt]
        outputs = [i["output"] for i in items if i.get("type") == "function_call_output"]
        if len(outputs) == 1:
            self.seen.append((prompt, outputs[0]))
        if not outputs:
            return response([function_call("soql_query", {"query": QUERY})])
        if len(outputs) == 1 and how == "submit_answer":
            return response([function_call("submit_answer", {"response": answer})])
        if len(outputs) == 1:
            return response([message(answer)])
        return response([message("I gave my answer with submit_answer.")])


def served(server: Any) -> FastAPI:
    """The app as NeMo Gym's run_webserver makes it, less Ray, hydra and the process."""
    app = server.setup_webserver()
    server.setup_liveness(app)
    server.setup_exception_middleware(app)
    return app


async def main() -> int:
    answers = {row["idx"]: row for row in json.loads(Path(ANSWERS).read_text(encoding="utf-8"))}
    control = localforce.AsyncControl(URL, ADMIN_KEY)

    # The data set, as a trainer would write its JSONL: prompt and tools of each task.
    started = time.monotonic()
    rows = {row["task_idx"]: row for row in await dataset_rows(control, sorted(PLANS))}
    print(
        f"dataset_rows: {len(rows)} rows in {time.monotonic() - started:.2f}s; task 18 has "
        f"{len(rows[18]['responses_create_params']['tools'])} tools"
    )
    prompts = {
        idx: row["responses_create_params"]["input"][-1]["content"] for idx, row in rows.items()
    }
    check(len(set(prompts.values())) == len(prompts), "each planned task has its own prompt")
    check(
        all(p == answers[i]["query"] for i, p in prompts.items()), "rows carry the tasks' prompts"
    )
    check(await control.results(run="nemo-gym-dataset") == [], "dataset_rows leaves no result")
    plans = {}
    for idx, (how, right) in PLANS.items():
        expected = answers[idx]["answer"]
        # A wrong answer is another task's answer of the type: the metrics extract Ids from
        # the text, so "not <the right Id>" would still score 1.
        others = [
            r["answer"]
            for r in answers.values()
            if r["task"] == answers[idx]["task"] and r["answer"] != expected
        ]
        plans[prompts[idx]] = (how, expected if right else (others or ["None"])[0])

    ports = {name: free_port() for name in (RESOURCES, MODEL, AGENT)}
    kinds = {
        RESOURCES: ("resources_servers", "localforce"),
        MODEL: ("responses_api_models", "scripted"),
        AGENT: ("responses_api_agents", "simple_agent"),
    }
    global_config = OmegaConf.create(
        {
            name: {kind: {impl: {"host": "127.0.0.1", "port": ports[name]}}}
            for name, (kind, impl) in kinds.items()
        }
    )
    # NeMo Gym's own aiohttp client (DummyCookieJar: cookies travel only as the agent passes
    # them), made on this loop, which every server and the driver share.
    set_global_aiohttp_client(GlobalAIOHTTPAsyncClientConfig())
    client = ServerClient(
        head_server_config=BaseServerConfig(host="127.0.0.1", port=free_port()),
        global_config_dict=global_config,
    )

    base = {"host": "127.0.0.1", "entrypoint": "app.py"}
    resources = LocalforceResourcesServer(
        config=LocalforceResourcesServerConfig(
            **base,
            port=ports[RESOURCES],
            name=RESOURCES,
            domain="agent",
            localforce_url=URL,
            admin_key=ADMIN_KEY,
            run=RUN,
            agent="scripted",
        ),
        server_client=client,
    )
    model = ScriptedModel(
        config=ScriptedModelConfig(**base, port=ports[MODEL], name=MODEL),
        server_client=client,
        plans=plans,
    )
    agent = SimpleAgent(
        config=SimpleAgentConfig(
            **base,
            port=ports[AGENT],
            name=AGENT,
            max_steps=6,
            resources_server=ResourcesServerRef(type="resources_servers", name=RESOURCES),
            model_server=ModelServerRef(type="responses_api_models", name=MODEL),
        ),
        server_client=client,
    )

    servers = []
    for name, server in ((RESOURCES, resources), (MODEL, model), (AGENT, agent)):
        config = uvicorn.Config(
            served(server), host="127.0.0.1", port=ports[name], log_level="warning", lifespan="on"
        )
        servers.append(uvicorn.Server(config))
    tasks = [asyncio.create_task(s.serve()) for s in servers]
    while not all(s.started for s in servers):
        await asyncio.sleep(0.05)

    try:
        # Rollouts in parallel, as RolloutCollectionHelper.run_examples posts them.
        async def rollout(idx: int, n: int) -> dict[str, Any]:
            row = rows[idx] | {
                "agent_ref": {"name": AGENT},
                "_ng_task_index": idx,
                "_ng_rollout_index": n,
            }
            res = await client.post(server_name=AGENT, url_path="/run", json=row)
            await raise_for_status(res)
            return dict(await get_response_json(res))

        started = time.monotonic()
        verified = await asyncio.gather(*(rollout(i, n) for n, i in enumerate(ROLLOUTS)))
        print(f"{len(ROLLOUTS)} rollouts in parallel in {time.monotonic() - started:.2f}s")
        for idx, result in zip(ROLLOUTS, verified, strict=False):
            how, right = PLANS[idx]
            print(
                f"  task {idx:2} ({how}, {'right' if right else 'wrong'}): reward "
                f"{result['reward']} episode {result['episode_id']} channel {result['channel']} "
                f"answer {result['answer']!r}"
            )
            check(
                result["reward"] == (1.0 if right else 0.0),
                f"task {idx}: reward {result['reward']}",
            )
            check(result["task_idx"] == idx, f"task {idx}: the row's fields ride through verify")
            check(
                result["channel"] == ("mcp" if how == "submit_answer" else "rest"),
                f"task {idx}: graded by {result['channel']}",
            )
            last = result["response"]["output"][-1]
            check(last["type"] == "message", f"task {idx}: the rollout ends on the model's message")
        episodes = [result["episode_id"] for result in verified]
        check(len(set(episodes)) == len(episodes), "every rollout had an episode of its own")
        for _prompt, output in model.seen[: len(ROLLOUTS)]:
            check(ONE_ROW.search(output) is not None, "the policy read its SOQL tool's answer")

        # The raw contract, as the agent speaks it: the session is the cookie.
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports[RESOURCES]}") as raw:
            empty = {"responses_create_params": {"input": "x"}, "response": verified[0]["response"]}
            no_session = await raw.post("/verify", json=empty | {"task_idx": 7})
            check(
                no_session.status_code == 409, f"verify without a session: {no_session.status_code}"
            )
            no_tool = await raw.post("/soql_query", json={"query": QUERY})
            check(no_tool.status_code == 409, f"a tool without a session: {no_tool.status_code}")
            unknown = await raw.post("/seed_session", json={"task_idx": 999})
            print(f"  seed_session of no task answers {unknown.status_code}: {unknown.text[:120]}")
            check(unknown.status_code == 400, "seed_session of no task: 400")
            former = await raw.post("/seed_session", json={"task_idx": 8})
            abandoned = former.json()["episode_id"]
            raw.cookies = former.cookies
            seeded = await raw.post("/seed_session", json={"task_idx": 7})
            check(seeded.status_code == 200, f"seed_session again on the session: {seeded.json()}")
            view = await control.episode(abandoned)
            check(
                view["sandbox"] is None and view["result"]["answered_at"] is None,
                "seeding a session again ends its former episode, unanswered",
            )
            raw.cookies = seeded.cookies
            tool = await raw.post("/soql_query", json={"query": QUERY})
            check(tool.status_code == 200 and ONE_ROW.search(tool.text) is not None, "a tool call")
            bad = await raw.post("/not_a_tool", json={})
            print(f"  an unknown tool answers {bad.status_code}: {bad.text[:120]}")
            other = await raw.post("/verify", json=empty | {"task_idx": 8})
            check(other.status_code == 409, f"verify naming another task: {other.status_code}")
            wrong = await raw.post("/verify", json=empty | {"task_idx": 7})
            check(
                wrong.status_code == 200 and wrong.json()["reward"] == 0.0,
                f"verify with another task's answer text: {wrong.json()['reward']}",
            )
            episodes.append(wrong.json()["episode_id"])
            again = await raw.post("/verify", json=empty | {"task_idx": 7})
            check(again.json()["reward"] == 0.0, "a second verify of a session grades nothing new")
            # A rollout that never verifies: its episode ends when the server shuts down.
            raw.cookies.clear()
            left = (await raw.post("/seed_session", json={"task_idx": 9})).json()["episode_id"]
    finally:
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks)

    # The server's results: each episode once, answered once, with its tool call.
    view = await control.episode(left)
    check(
        view["sandbox"] is None and view["result"]["answered_at"] is None,
        "the server's shutdown ends the episode no rollout verified, unanswered",
    )
    results = await control.results(run=RUN)
    counted = Counter(result["episode"] for result in results)
    check(
        sorted(counted) == sorted([*episodes, abandoned, left]) and set(counted.values()) == {1},
        f"results: each of the {len(episodes) + 2} episodes once ({len(results)} rows)",
    )
    by_id = {result["episode"]: result for result in results}
    for idx, episode in zip([*ROLLOUTS, 7], episodes, strict=False):
        result = by_id.get(episode, {})
        tools = [call["tool"] for call in result.get("tool_calls", [])]
        print(
            f"  result {episode}: idx {result.get('idx')} reward {result.get('reward')} "
            f"channel {result.get('channel')} answer {result.get('answer')!r} tools {tools}"
        )
        check(
            result.get("idx") == idx and result.get("answered_at") is not None,
            f"episode {episode}: task {idx}, answered",
        )
        check(tools[:1] == ["soql_query"], f"episode {episode}: its tool call recorded")
        view = await control.episode(episode)
        check(view["sandbox"] is None, f"episode {episode}: its sandbox was ended")
    await control.purge_run(RUN)
    await control.aclose()

    print(f"{(len(failures) == 0 and 'PASSED') or 'FAILED'}: {len(failures)} failed checks")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
