"""The OpenEnv environment at /openenv through OpenEnv's own client (its MCPToolClient, one
WebSocket session each) against a served org: reset, step and state, tool errors, the answer's
reward, and 64 episodes at once, each in its own sandbox."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import httpx
import pytest
from openenv.core.env_server.mcp_types import (
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    ToolErrorType,
)
from websockets.asyncio.client import connect

from app.agents.environment import EpisodeObservation
from app.agents.openenv_client import LocalforceEnvClient
from tests.agents.test_mcp import CRMARENA_TOOLS, TOOLS
from tests.conftest import ADMIN_HEADERS, TEST_ADMIN_KEY

pytestmark = pytest.mark.asyncio

FIRST_CASE = "SELECT Id, Subject FROM Case ORDER BY Id LIMIT 1"
WRITES = {"create_record", "update_record", "delete_record", "create_metadata", "update_metadata"}
# A read task's episode lists every tool but the writes; a write task's, the update too.
READ_TASK_TOOLS = (TOOLS | CRMARENA_TOOLS) - WRITES
WRITE_TASK = "case_routing_write"


def client(base_url: str) -> LocalforceEnvClient:
    return LocalforceEnvClient(base_url=f"{base_url}/openenv", admin_key=TEST_ADMIN_KEY)


def of_type(tasks: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(task for task in tasks if task["task"] == name)


async def call(env: LocalforceEnvClient, tool: str, **arguments: Any) -> CallToolObservation:
    result = await env.step(CallToolAction(tool_name=tool, arguments=arguments))
    assert isinstance(result.observation, CallToolObservation)
    return result.observation


async def data(env: LocalforceEnvClient, tool: str, **arguments: Any) -> Any:
    observation = await call(env, tool, **arguments)
    assert observation.error is None, observation.error
    return observation.result["data"]


async def test_reset_observes_the_task_without_its_answer(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    task = of_type(tasks, "top_issue_identification")
    async with client(task_base_url) as env:
        started = await env.reset(task=task["idx"], episode_id="oe-reset")
        state = await env.state()
    observation = started.observation
    assert isinstance(observation, EpisodeObservation)
    assert (started.done, started.reward) == (False, None)
    assert observation.episode_id == "oe-reset"
    assert observation.prompt == task["query"]
    assert observation.task == {key: value for key, value in task.items() if key != "answer"}
    assert set(observation.tools) == READ_TASK_TOOLS
    assert state.model_dump() == {
        "episode_id": "oe-reset",
        "step_count": 0,
        "task": "top_issue_identification",
        "done": False,
        "reward": None,
        "diff": {"created": [], "updated": [], "deleted": []},
    }


async def test_a_step_acts_in_the_episodes_own_sandbox(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    async with client(task_base_url) as env, client(task_base_url) as other:
        writer = await env.reset(task=of_type(tasks, WRITE_TASK)["idx"], episode_id="oe-writer")
        await other.reset(task=0, episode_id="oe-reader")
        (case,) = (await data(env, "soql_query", query=FIRST_CASE))["records"]
        updated = await data(
            env, "update_record", sobject="Case", record_id=case["Id"], fields={"Subject": "Mine"}
        )
        (seen,) = (await data(env, "soql_query", query=FIRST_CASE))["records"]
        (unseen,) = (await data(other, "soql_query", query=FIRST_CASE))["records"]
        state, other_state = await env.state(), await other.state()
    assert isinstance(writer.observation, EpisodeObservation)
    assert set(writer.observation.tools) == READ_TASK_TOOLS | {"update_record"}
    assert updated == {"id": case["Id"], "success": True}
    assert seen["Subject"] == "Mine"
    assert unseen["Subject"] == case["Subject"] != "Mine"
    assert state.step_count == 3
    assert [change["id"] for change in state.diff["updated"]] == [case["Id"]]
    assert other_state.step_count == 1
    assert other_state.diff == {"created": [], "updated": [], "deleted": []}


async def test_tool_errors_are_observed_and_end_nothing(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    async with client(task_base_url) as env:
        await env.reset(task=0)
        bad_query = await call(env, "soql_query", query="SELECT Nope FROM Case")
        unknown = await call(env, "no_such_tool")
        bad_arguments = await call(env, "soql_query")
        not_its_tool = await call(env, "delete_record", sobject="Case", record_id="x")
        still = await data(env, "soql_query", query="SELECT COUNT() FROM Case")
        state = await env.state()
    assert bad_query.error is not None and bad_query.result is None
    assert bad_query.error.error_type == ToolErrorType.EXECUTION_ERROR
    assert bad_query.error.message.startswith("INVALID_FIELD: \nSELECT Nope FROM Case\n")
    assert unknown.error is not None
    assert unknown.error.model_dump() == {
        "error_type": ToolErrorType.TOOL_NOT_FOUND,
        "message": "Unknown tool: no_such_tool",
    }
    assert bad_arguments.error is not None
    assert bad_arguments.error.error_type == ToolErrorType.INVALID_ARGS
    assert bad_arguments.error.message.startswith("1 validation error for soql_queryArguments")
    # Task 0 is a read task's: the endpoint refuses its episode a write tool.
    assert tasks[0]["task"] != WRITE_TASK
    assert not_its_tool.error is not None
    assert not_its_tool.error.model_dump() == {
        "error_type": ToolErrorType.EXECUTION_ERROR,
        "message": f"TOOL_NOT_ALLOWED: delete_record is not a tool of this episode's task "
        f"({tasks[0]['task']}); list_tools names the ones it has",
    }
    assert still["totalSize"] > 0
    assert (state.step_count, state.done) == (5, False)
    assert state.diff == {"created": [], "updated": [], "deleted": []}
    # Every call that reached the endpoint is in the episode's trajectory, refused or not.
    assert state.episode_id is not None and gone_soon(task_base_url, state.episode_id)
    recorded = result_kept(task_base_url, state.episode_id)["tool_calls"]
    assert [(call["tool"], call["is_error"]) for call in recorded] == [
        ("soql_query", True),
        ("soql_query", True),
        ("delete_record", True),
        ("soql_query", False),
    ]


async def test_the_answer_is_rewarded_and_ends_the_episode(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    task = of_type(tasks, "top_issue_identification")
    async with client(task_base_url) as env:
        await env.reset(task=task["idx"], episode_id="oe-right")
        right = await env.step(
            CallToolAction(tool_name="submit_answer", arguments={"response": task["answer"]})
        )
        after = await call(env, "soql_query", query="SELECT Id FROM Case LIMIT 1")
        state = await env.state()
        await env.reset(task=task["idx"], episode_id="oe-wrong")
        wrong = await env.call_tool("submit_answer", response="a0X000000000000AAA")
    assert (right.done, right.reward) == (True, 1.0)
    assert isinstance(right.observation, CallToolObservation)
    assert right.observation.result["data"] == {
        "episode": "oe-right",
        "reward": 1.0,
        "metric": "exact_match",
        "done": True,
    }
    assert after.done is True and after.error is not None
    assert after.error.message == (
        "The episode has ended (its answer was given): reset() starts another"
    )
    assert (state.done, state.reward, state.step_count) == (True, 1.0, 2)
    assert wrong["reward"] == 0.0
    # The answer is kept beyond the episode's sandbox, filed as OpenEnv's, with its call.
    assert not sandbox_exists(task_base_url, "oe-right")
    kept = result_kept(task_base_url, "oe-right")
    assert (kept["reward"], kept["answer"], kept["expected"]) == (
        1.0,
        task["answer"],
        task["answer"],
    )
    assert kept["channel"] == "openenv"
    assert [call["tool"] for call in kept["tool_calls"]] == ["submit_answer"]


async def test_tools_are_listed_and_a_call_before_reset_is_refused(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    async with client(task_base_url) as env:
        listed = await env.step(ListToolsAction())
        early = await call(env, "soql_query", query="SELECT Id FROM Case")
        await env.reset(task=of_type(tasks, "top_issue_identification")["idx"])
        of_a_read_task = await env.step(ListToolsAction())
        await env.reset(task=of_type(tasks, WRITE_TASK)["idx"])
        of_a_write_task = await env.step(ListToolsAction())
    assert isinstance(listed.observation, ListToolsObservation)
    tools = {tool.name: tool for tool in listed.observation.tools}
    assert set(tools) == TOOLS | CRMARENA_TOOLS  # before any reset: the endpoint's
    assert tools["soql_query"].input_schema["required"] == ["query"]
    assert early.error is not None
    assert early.error.message == "No episode is running: reset() starts one"
    # An episode's: its task's.
    assert isinstance(of_a_read_task.observation, ListToolsObservation)
    assert {tool.name for tool in of_a_read_task.observation.tools} == READ_TASK_TOOLS
    assert isinstance(of_a_write_task.observation, ListToolsObservation)
    assert {tool.name for tool in of_a_write_task.observation.tools} == READ_TASK_TOOLS | {
        "update_record"
    }


async def test_reset_draws_a_task_of_the_file_with_its_seed(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    kind = "monthly_trend_analysis"
    idxs = sorted(task["idx"] for task in tasks if task["task"] == kind)
    expected = next(t for t in tasks if t["idx"] == random.Random(7).choice(idxs))
    async with client(task_base_url) as env:
        first = (await env.reset(seed=7, task_type=kind)).observation
        again = (await env.reset(seed=7, task_type=kind)).observation
        anything = (await env.reset(seed=3)).observation
    assert isinstance(first, EpisodeObservation) and isinstance(again, EpisodeObservation)
    assert first.prompt == again.prompt == expected["query"]
    assert first.episode_id != again.episode_id
    assert isinstance(anything, EpisodeObservation)
    all_idxs = sorted(task["idx"] for task in tasks)
    drawn = next(t for t in tasks if t["idx"] == random.Random(3).choice(all_idxs))
    assert anything.prompt == drawn["query"]


async def test_a_reset_the_org_refuses_names_the_error(task_base_url: str) -> None:
    async with client(task_base_url) as env:
        with pytest.raises(RuntimeError) as missing:
            await env.reset(task=999)
        with pytest.raises(RuntimeError) as typo:
            await env.reset(taks=1)
        with pytest.raises(RuntimeError) as no_type:
            await env.reset(task_type="poetry")
        started = await env.reset(task=0)  # the session goes on
    assert "(code: EXECUTION_ERROR)" in str(missing.value)
    assert "INVALID_INPUT: task: no task has idx 999 in " in str(missing.value)
    assert (
        "INVALID_INPUT: reset: unknown argument taks; reset takes seed, episode_id, task, "
        "task_type, org, admin_key, run and agent" in str(typo.value)
    )
    assert "INVALID_INPUT: task_type: the task file has no task of type poetry" in str(
        no_type.value
    )
    assert isinstance(started.observation, EpisodeObservation)


def sandbox_exists(base_url: str, episode_id: str) -> bool:
    """Whether the episode's sandbox lives (its result outlives it)."""
    response = httpx.get(f"{base_url}/__localforce/sandboxes/{episode_id}", headers=ADMIN_HEADERS)
    assert response.status_code in (200, 404), response.text
    return response.status_code == 200


def result_kept(base_url: str, episode_id: str) -> dict[str, Any]:
    """The episode as the operator sees it once its sandbox is gone: its result kept."""
    response = httpx.get(f"{base_url}/__localforce/episodes/{episode_id}", headers=ADMIN_HEADERS)
    assert response.status_code == 200, response.text
    shown = response.json()
    assert shown["sandbox"] is None
    assert shown["result"] is not None
    return dict(shown["result"])


def gone_soon(base_url: str, episode_id: str) -> bool:
    """Whether the episode's sandbox is deleted within seconds, its result kept."""
    deadline = time.monotonic() + 10
    while sandbox_exists(base_url, episode_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    result_kept(base_url, episode_id)
    return True


async def test_a_reset_or_the_end_of_the_session_deletes_the_episodes_sandbox(
    task_base_url: str,
) -> None:
    async with client(task_base_url) as env:
        await env.reset(task=0, episode_id="oe-first")
        await env.reset(task=0, episode_id="oe-second")
        assert not sandbox_exists(task_base_url, "oe-first")
        assert sandbox_exists(task_base_url, "oe-second")
    assert gone_soon(task_base_url, "oe-second")
    # Unanswered, each result is kept as it stood.
    for episode_id in ("oe-first", "oe-second"):
        kept = result_kept(task_base_url, episode_id)
        assert (kept["answer"], kept["reward"], kept["answered_at"]) == (None, None, None)


async def sandbox_ids(http: httpx.AsyncClient) -> set[str]:
    listed = (await http.get("/__localforce/sandboxes")).json()["sandboxes"]
    return {sandbox["id"] for sandbox in listed}


async def test_the_http_reset_leaves_no_episode_behind(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    async with httpx.AsyncClient(base_url=task_base_url, headers=ADMIN_HEADERS, timeout=60) as http:
        before = await sandbox_ids(http)
        response = await http.post(
            "/openenv/reset",
            json={"task": tasks[1]["idx"], "episode_id": "oe-http", "admin_key": TEST_ADMIN_KEY},
        )
        assert response.status_code == 200, response.text
        assert response.json()["observation"]["prompt"] == tasks[1]["query"]
        assert gone_soon(task_base_url, "oe-http")
        after = await sandbox_ids(http)
        refused = await http.post("/openenv/reset", json={"task": 999, "admin_key": TEST_ADMIN_KEY})
    assert after == before  # the ids: a running clock's "now" moves on
    assert refused.status_code == 400
    assert refused.json() == [
        {"message": refused.json()[0]["message"], "errorCode": "INVALID_INPUT"}
    ]
    assert refused.json()[0]["message"].startswith("task: no task has idx 999 in ")


async def test_64_episodes_at_once_each_in_its_own_sandbox(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    # The even ones write (a write task's episodes); the odd ones, of every task in turn, may
    # not, and see the org as it was.
    writes = [task for task in tasks if task["task"] == WRITE_TASK]
    assert len(writes) == 2

    async def episode(n: int) -> tuple[str, str, Any, float, str]:
        task = writes[n // 2 % 2] if n % 2 == 0 else tasks[n // 2 % len(tasks)]
        async with client(task_base_url) as env:
            await env.reset(task=task["idx"], episode_id=f"oe-many-{n}")
            (case,) = (await data(env, "soql_query", query=FIRST_CASE))["records"]
            fields = {"Subject": f"episode {n}"}
            written = await call(
                env, "update_record", sobject="Case", record_id=case["Id"], fields=fields
            )
            (seen,) = (await data(env, "soql_query", query=FIRST_CASE))["records"]
            state = await env.state()
            graded = await env.call_tool("submit_answer", response=str(task["answer"]))
            error = "" if written.error is None else written.error.message
            return (
                seen["Subject"],
                error,
                state.diff["updated"],
                float(graded["reward"]),
                task["task"],
            )

    results = await asyncio.gather(*(episode(n) for n in range(64)))
    for n, (seen, error, updated, reward, kind) in enumerate(results):
        if n % 2 == 0:
            assert (kind, error) == (WRITE_TASK, "")
            assert seen == f"episode {n}"
            assert len(updated) == 1, updated
            assert updated[0]["changes"]["Subject"]["after"] == f"episode {n}"
        elif kind == WRITE_TASK:
            assert error == "" and seen == f"episode {n}" and len(updated) == 1
        else:
            assert error.startswith("TOOL_NOT_ALLOWED: update_record is not a tool of ")
            assert not seen.startswith("episode ")
            assert updated == []
        exact = next(t for t in tasks if t["task"] == kind)["reward_metric"] == "exact_match"
        assert reward == 1.0 or not exact
    for n in range(64):
        assert gone_soon(task_base_url, f"oe-many-{n}")


async def test_reset_takes_a_task_row_given_whole(
    task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    task = {**of_type(tasks, "monthly_trend_analysis"), "idx": 9001}  # in no task file
    async with client(task_base_url) as env:
        started = (await env.reset(task=task)).observation
        graded = await env.call_tool("submit_answer", response=task["answer"])
    assert isinstance(started, EpisodeObservation)
    assert started.task["idx"] == 9001 and started.prompt == task["query"]
    assert graded["reward"] == 1.0


@pytest.mark.parametrize(
    ("body", "status", "code", "message"),
    [
        ({"task": "three"}, 400, "INVALID_INPUT", "Bad request: "),
        ({"task": {"idx": 1}}, 400, "INVALID_INPUT", "task.task: missing, or not a JSON str"),
        (
            {"task": 0, "episode_id": "no spaces"},
            400,
            "INVALID_INPUT",
            "Invalid sandbox id: no spaces. ",
        ),
        ({"task": 0, "org": "nowhere"}, 400, "INVALID_INPUT", "Unknown org: nowhere"),
        ({"task_type": 7}, 400, "INVALID_INPUT", "task_type: the task file has no task"),
        ({"task": 0, "admin_key": "x", "extra": 1}, 400, "INVALID_INPUT", "reset: unknown"),
    ],
)
async def test_a_bad_reset_over_http_is_a_salesforce_error(
    task_base_url: str, body: dict[str, Any], status: int, code: str | None, message: str | None
) -> None:
    async with httpx.AsyncClient(base_url=task_base_url, headers=ADMIN_HEADERS, timeout=60) as http:
        response = await http.post("/openenv/reset", json={"admin_key": TEST_ADMIN_KEY, **body})
    assert response.status_code == status, response.text
    (error,) = response.json()
    assert set(error) == {"message", "errorCode"}
    if code is not None and message is not None:
        assert error["errorCode"] == code
        assert error["message"].startswith(message), error["message"]


async def test_hostile_messages_are_answered_and_the_session_goes_on(
    task_base_url: str,
) -> None:
    url = task_base_url.replace("http://", "ws://") + "/openenv/ws"

    def step(**action: Any) -> str:
        return json.dumps({"type": "step", "data": {"type": "call_tool", **action}})

    query = {"query": "SELECT Id FROM Case LIMIT 1"}
    hostile = [
        "not json",
        json.dumps({"type": "dance"}),
        step(tool_name=5),
        step(tool_name="soql_query", arguments=[]),
        json.dumps(
            {"type": "reset", "data": {"task": {"idx": "zero"}, "admin_key": TEST_ADMIN_KEY}}
        ),
        step(tool_name="soql_query", arguments=query),
    ]
    answers = []
    async with connect(url) as socket:
        for message in hostile:
            await socket.send(message)
            answers.append(json.loads(await socket.recv()))
        await socket.send(
            json.dumps({"type": "reset", "data": {"task": 0, "admin_key": TEST_ADMIN_KEY}})
        )
        started = json.loads(await socket.recv())
    codes = [answer["data"].get("code") for answer in answers]
    assert codes == [
        "INVALID_JSON",
        "UNKNOWN_TYPE",
        "VALIDATION_ERROR",
        "VALIDATION_ERROR",
        "EXECUTION_ERROR",
        None,  # an observation: no episode runs yet
    ]
    assert answers[4]["data"]["message"].startswith("INVALID_INPUT: task.")
    assert answers[5]["data"]["observation"]["error"]["message"] == (
        "No episode is running: reset() starts one"
    )
    assert started["type"] == "observation"
    assert started["data"]["observation"]["episode_id"]


async def test_a_client_gone_without_a_word_leaves_no_episode(task_base_url: str) -> None:
    url = task_base_url.replace("http://", "ws://") + "/openenv/ws"
    async with connect(url) as socket:  # leaves without OpenEnv's "close" message
        reset = {"episode_id": "oe-gone", "admin_key": TEST_ADMIN_KEY}
        await socket.send(json.dumps({"type": "reset", "data": reset}))
        assert json.loads(await socket.recv())["type"] == "observation"
        assert sandbox_exists(task_base_url, "oe-gone")
    assert gone_soon(task_base_url, "oe-gone")
