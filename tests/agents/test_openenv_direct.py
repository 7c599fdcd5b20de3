"""OpenEnv's tool calls in process: a step calls the MCP endpoint's direct path
(`DirectCalls.result`, app.agents.app_link.McpSession) when the endpoint has it on, and a
JSON-RPC request to /mcp through the SDK's transport when it is off. The same steps observe the
same in both, and leave the same trajectory."""

from __future__ import annotations

import json
from typing import Any, cast

import orjson
import pytest
from fastapi import FastAPI
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation, ToolErrorType

from app.agents.app_link import AppLink
from app.agents.environment import EpisodeObservation, LocalforceEnvironment
from app.agents.mcp import McpEndpoint
from app.agents.mcp_direct import DirectCall, DirectCalls
from tests.agents.conftest import KEY
from tests.agents.test_openenv_in_process import kept_result

QUERY = "SELECT Id, Subject FROM Case ORDER BY Id LIMIT 3"
REFUSED = (
    "TOOL_NOT_ALLOWED: create_record is not a tool of this episode's task "
    "(top_issue_identification); list_tools names the ones it has"
)


@pytest.fixture(scope="module")
def task(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    return next(task for task in tasks if task["task"] == "top_issue_identification")


def endpoint_of(app: FastAPI) -> McpEndpoint:
    endpoint = app.state.mcp
    assert isinstance(endpoint, McpEndpoint)
    return endpoint


def steps(answer: str) -> list[CallToolAction]:
    return [
        CallToolAction(tool_name="soql_query", arguments={"query": QUERY}),
        # Outside the task's tool set: the endpoint refuses it, and records the attempt.
        CallToolAction(
            tool_name="create_record", arguments={"sobject": "Account", "fields": {"Name": "x"}}
        ),
        CallToolAction(tool_name="soql_query", arguments={"query": 7}),  # bad arguments
        CallToolAction(tool_name="soql_query", arguments={"query": "SELECT Nope FROM Case"}),
        CallToolAction(tool_name="submit_answer", arguments={"response": answer}),
    ]


def run_episode(link: AppLink, task: dict[str, Any], episode_id: str) -> list[CallToolObservation]:
    env = LocalforceEnvironment(link, admin_key=KEY)
    started = env.reset(task=task["idx"], episode_id=episode_id, admin_key=KEY)
    assert isinstance(started, EpisodeObservation)
    observed = [env.step(action) for action in steps(task["answer"])]
    env.close()
    assert all(isinstance(observation, CallToolObservation) for observation in observed)
    return cast(list[CallToolObservation], observed)


def as_json(observed: list[CallToolObservation], episode_id: str) -> Any:
    """The observations as JSON, the episode's id made one word (each run has its own)."""
    dumped = json.dumps([observation.model_dump(mode="json") for observation in observed])
    return json.loads(dumped.replace(episode_id, "<episode>"))


def trajectory(link: AppLink, episode_id: str) -> dict[str, Any]:
    """What the episode's result keeps of its steps, timings left out."""
    kept = kept_result(link, episode_id)
    calls = [
        {key: value for key, value in made.items() if key not in ("latency_ms", "at")}
        for made in kept["tool_calls"]
    ]
    shown = {
        "tool_calls": calls,
        **{key: kept[key] for key in ("channel", "answer", "reward", "metric", "steps")},
    }
    return dict(json.loads(json.dumps(shown).replace(episode_id, "<episode>")))


def test_steps_observe_and_record_the_same_with_the_direct_path_or_without(
    link: AppLink, app: FastAPI, task: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = endpoint_of(app)
    direct = endpoint.direct
    assert isinstance(direct, DirectCalls)
    # The calls answered by the direct path, and those of them that came as JSON-RPC
    # requests to /mcp (the endpoint's own direct answers) rather than from McpSession.
    answered_directly: list[str] = []
    posted: list[str] = []
    result, answer = direct.result, direct.answer

    async def spied_result(call: DirectCall) -> Any:
        answered_directly.append(call.name)
        return await result(call)

    async def spied_answer(call: DirectCall) -> bytes:
        posted.append(call.name)
        return await answer(call)

    monkeypatch.setattr(direct, "result", spied_result)
    monkeypatch.setattr(direct, "answer", spied_answer)
    with_direct = run_episode(link, task, "openenv-direct-on")
    names = [action.tool_name for action in steps(task["answer"])]
    assert (answered_directly, posted) == (names, [])
    monkeypatch.setattr(endpoint, "direct", None)  # /mcp through the SDK's transport
    by_sdk = run_episode(link, task, "openenv-direct-off")
    assert (answered_directly, posted) == (names, [])  # none more

    assert as_json(with_direct, "openenv-direct-on") == as_json(by_sdk, "openenv-direct-off")
    assert trajectory(link, "openenv-direct-on") == trajectory(link, "openenv-direct-off")

    # What the steps observed, exactly.
    queried, refused, bad, unknown, answered = with_direct
    assert queried.error is None
    structured = queried.result["structured_content"]
    assert [record["attributes"]["type"] for record in structured["records"]] == ["Case"] * 3
    assert queried.result == {
        "content": [{"type": "text", "text": orjson.dumps(structured).decode()}],  # compact
        "structured_content": structured,
        "data": structured,
        "is_error": False,
    }
    assert (queried.done, queried.reward) == (False, None)
    for observation in (refused, bad, unknown):
        assert observation.result is None
        assert observation.error is not None and observation.done is False
    assert refused.error is not None and bad.error is not None and unknown.error is not None
    assert (refused.error.error_type, refused.error.message) == (
        ToolErrorType.EXECUTION_ERROR,
        REFUSED,
    )
    assert bad.error.error_type == ToolErrorType.INVALID_ARGS
    assert bad.error.message.startswith("1 validation error for soql_queryArguments\nquery\n")
    assert unknown.error.error_type == ToolErrorType.EXECUTION_ERROR
    assert unknown.error.message.startswith("INVALID_FIELD: ")
    assert answered.error is None
    graded = {"episode": "openenv-direct-on", "reward": 1.0, "metric": "exact_match", "done": True}
    assert (answered.done, answered.reward, answered.result["data"]) == (True, 1.0, graded)

    # What the episode's result keeps of them, exactly.
    kept = trajectory(link, "openenv-direct-on")
    assert kept == {
        "tool_calls": [
            {
                "tool": "soql_query",
                "arguments": {"query": QUERY},
                "result": structured,
                "is_error": False,
            },
            {
                "tool": "create_record",
                "arguments": {"sobject": "Account", "fields": {"Name": "x"}},
                "result": REFUSED,
                "is_error": True,
            },
            {
                "tool": "soql_query",
                "arguments": {"query": 7},
                "result": f"Error executing tool soql_query: {bad.error.message}",
                "is_error": True,
            },
            {
                "tool": "soql_query",
                "arguments": {"query": "SELECT Nope FROM Case"},
                "result": f"Error executing tool soql_query: {unknown.error.message}",
                "is_error": True,
            },
            {
                "tool": "submit_answer",
                "arguments": {"response": task["answer"]},
                "result": {**graded, "episode": "<episode>"},
                "is_error": False,
            },
        ],
        "channel": "openenv",
        "answer": task["answer"],
        "reward": 1.0,
        "metric": "exact_match",
        "steps": 5,
    }
