"""An adversary in the tests: a scripted agent holding only what an agent holds (its episode's
Salesforce token, an MCP session with it, an OpenEnv session) tries every known way to change
its reward other than doing the task, on both back ends and 64 at once. Every attempt is
refused, the recorded reward never changes after the first answer, and the gold answer never
reaches the agent's channel."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction

from app.agents.app_link import AppLink
from app.agents.environment import EpisodeError, LocalforceEnvironment
from tests.agents.test_mcp import mcp_client
from tests.conftest import ADMIN_HEADERS, API, TEST_ADMIN_KEY

pytestmark = pytest.mark.asyncio

OPERATOR = ADMIN_HEADERS
CONTROL = "/__localforce"
WRITE_TOOLS = {
    "create_record", "update_record", "delete_record", "create_metadata", "update_metadata"
}  # fmt: skip
PLATFORM_TABLES = ("lf_episode", "lf_tool_call", "lf_auth_session", "lf_sandbox", "alembic_version")
WRONG = "not the answer"
OTHER_EPISODE = "ep-1"  # an episode an operator named: an agent may guess its id


@pytest.fixture(scope="module")
def base_url(base_url: str, tasks: list[dict[str, Any]]) -> str:
    """The served org, with an episode an operator named that an agent may guess the id of."""
    other = httpx.post(
        f"{base_url}{CONTROL}/episodes",
        json={"task": tasks[0]["idx"], "id": OTHER_EPISODE},
        headers=OPERATOR,
        timeout=120,
    )
    assert other.status_code == 201, other.text
    return base_url


def read_tasks(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tasks whose answer is text the agent is asked for (not a write task's changes)."""
    return [task for task in tasks if task["reward_metric"] != "diff_match"]


@dataclass
class Findings:
    """What the adversaries saw: every attempt's outcome by name, answers bigger than a
    refusal, and what reached the agent that should not have."""

    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)

    def saw(self, exploit: str, response: httpx.Response, gold: str | None) -> None:
        if response.status_code >= 500:
            self.server_errors.append(f"{exploit}: {response.status_code} {response.text[:200]}")
        self.outcomes[(exploit, _outcome(response))] += 1
        self.check_leak(exploit, response.text, gold)

    def check_leak(self, exploit: str, text: str, gold: str | None) -> None:
        if '"expected"' in text or (gold and len(gold) >= 5 and gold in text):
            self.leaks.append(f"{exploit}: {text[:200]}")


def _outcome(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code}"
    if isinstance(body, list) and body and isinstance(body[0], dict) and "errorCode" in body[0]:
        return f"{response.status_code} {body[0]['errorCode']}"
    if isinstance(body, dict) and "error" in body:
        return f"{response.status_code} {body['error']}"
    return f"{response.status_code}"


def control_attempts(episode_id: str) -> list[tuple[str, str, Any]]:
    """The control plane's routes an agent would try: (method, path, body)."""
    return [
        ("GET", f"{CONTROL}/episodes/{episode_id}", None),
        ("POST", f"{CONTROL}/episodes/{episode_id}/answer", {"response": WRONG}),
        ("DELETE", f"{CONTROL}/episodes/{episode_id}", None),
        ("POST", f"{CONTROL}/episodes", {"task": 0}),
        ("GET", f"{CONTROL}/tasks", None),
        ("GET", f"{CONTROL}/results", None),
        ("DELETE", f"{CONTROL}/results/{episode_id}", None),
        ("GET", f"{CONTROL}/sandboxes", None),
        ("GET", f"{CONTROL}/sandboxes/{episode_id}/diff", None),
        ("GET", f"{CONTROL}/sandboxes/{episode_id}/log", None),
        ("POST", f"{CONTROL}/sandboxes/{episode_id}/reset", None),
        ("POST", f"{CONTROL}/sandboxes/{episode_id}/snapshots", {"name": "mine"}),
        ("POST", f"{CONTROL}/sandboxes/{episode_id}/snapshots/start/restore", None),
        ("POST", f"{CONTROL}/sandboxes", {"clock": "2030-01-01T00:00:00Z"}),
    ]


async def start_episode(operator: httpx.AsyncClient, task: dict[str, Any], agent: str) -> Any:
    made = await operator.post(
        f"{CONTROL}/episodes", json={"task": task["idx"], "run": "adversary", "agent": agent}
    )
    assert made.status_code == 201, made.text
    episode = made.json()
    taken = await operator.post(
        f"{CONTROL}/sandboxes/{episode['id']}/snapshots", json={"name": "start"}
    )
    assert taken.status_code == 201, taken.text
    return episode


async def recorded(operator: httpx.AsyncClient, episode_id: str) -> dict[str, Any]:
    shown = await operator.get(f"{CONTROL}/episodes/{episode_id}")
    assert shown.status_code == 200, shown.text
    result: dict[str, Any] = shown.json()["result"]
    return result


async def rest_and_mcp_adversary(
    base_url: str, task: dict[str, Any], findings: Findings, name: str
) -> None:
    """One episode's agent over REST and MCP, from its first call to well after its answer."""
    gold = task["answer"] if isinstance(task["answer"], str) else None
    async with httpx.AsyncClient(base_url=base_url, headers=OPERATOR, timeout=120) as operator:
        episode = await start_episode(operator, task, name)
        episode_id, token = episode["id"], episode["access_token"]
        if "answer" in episode["task"] or "expected" in episode:
            findings.leaks.append(f"episode given: {sorted(episode)}")
        bearer = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base_url, timeout=120) as agent:
            # The control plane, with the agent's own token and with nothing.
            for method, path, body in control_attempts(episode_id):
                for label, headers in (("token", bearer), ("none", {})):
                    response = await agent.request(method, path, json=body, headers=headers)
                    findings.saw(f"control {label} {method} {path.split('/')[2]}", response, gold)
            # The platform's tables, through the Salesforce surface.
            for table in PLATFORM_TABLES:
                response = await agent.get(
                    f"{API}/query", params={"q": f"SELECT Id FROM {table}"}, headers=bearer
                )
                findings.saw("soql platform table", response, gold)
                response = await agent.get(f"{API}/sobjects/{table}/describe", headers=bearer)
                findings.saw("describe platform table", response, gold)
            # A sandbox by its username suffix (its own, another episode's), with a guess.
            for guess in (episode_id, OTHER_EPISODE):
                response = await agent.post(
                    "/services/oauth2/token",
                    data={
                        "grant_type": "password",
                        "username": f"agent@example.com.{guess}",
                        "password": "guess",
                    },
                )
                findings.saw("login by suffix", response, gold)
        async with mcp_client(base_url, token) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
            if listed & WRITE_TOOLS:
                findings.outcomes[("mcp lists write tools", ",".join(sorted(listed)))] += 1
            deleted = await client.call_tool(
                "delete_record", {"sobject": "Case", "record_id": "500000000000000AAA"}
            )
            findings.outcomes[("mcp tool out of scope", _tool_outcome(deleted))] += 1
            first = await client.call_tool("submit_answer", {"response": WRONG})
            findings.outcomes[("mcp first answer", _tool_outcome(first))] += 1
            findings.check_leak("mcp first answer", _tool_text(first), gold)
            reward = (await recorded(operator, episode_id))["reward"]
            for attempt in (gold or "x", WRONG, "a third"):
                again = await client.call_tool("submit_answer", {"response": attempt})
                findings.outcomes[("mcp answer again", _tool_outcome(again))] += 1
                findings.check_leak("mcp answer again", _tool_text(again), gold)
            after = await client.call_tool("soql_query", {"query": "SELECT Id FROM Case LIMIT 1"})
            findings.outcomes[("mcp tool after the answer", _tool_outcome(after))] += 1
        for method, path, body in (
            ("POST", f"{CONTROL}/episodes/{episode_id}/answer", {"response": gold or "x"}),
            ("POST", f"{CONTROL}/sandboxes/{episode_id}/reset", None),
            ("POST", f"{CONTROL}/sandboxes/{episode_id}/snapshots/start/restore", None),
        ):
            response = await operator.request(method, path, json=body)
            findings.saw(f"operator after the answer {path.split('/')[-1]}", response, None)
        async with httpx.AsyncClient(base_url=base_url, timeout=120) as agent:
            response = await agent.get(
                f"{API}/query", params={"q": "SELECT Id FROM Case LIMIT 1"}, headers=bearer
            )
            findings.saw("rest after the answer", response, gold)
            # Its own credentials, right ones, after the answer: the sandbox is final.
            response = await agent.post(
                "/services/oauth2/token",
                data={
                    "grant_type": "password",
                    "username": episode["username"],
                    "password": episode["password"],
                },
            )
            findings.saw("login after the answer", response, gold)
        result = await recorded(operator, episode_id)
        if (result["reward"], result["answer"], result["channel"]) != (reward, WRONG, "mcp"):
            findings.outcomes[("reward changed", json.dumps(result)[:200])] += 1


def _tool_text(result: Any) -> str:
    return "\n".join(getattr(item, "text", "") for item in result.content) + json.dumps(
        result.structured_content
    )


def _tool_outcome(result: Any) -> str:
    if not result.is_error:
        return "ok"
    text = _tool_text(result)
    code = text.partition(": ")[2] if text.startswith("Error executing tool ") else text
    return "error " + code.split(":", 1)[0]


# What every attempt must answer: (exploit, outcome) -> how often, for one adversary.
EXPECTED_OUTCOMES = {
    ("soql platform table", "400 INVALID_TYPE"): len(PLATFORM_TABLES),
    ("describe platform table", "404 NOT_FOUND"): len(PLATFORM_TABLES),
    ("login by suffix", "400 invalid_grant"): 2,
    ("mcp tool out of scope", "error TOOL_NOT_ALLOWED"): 1,
    ("mcp first answer", "ok"): 1,
    # The answer ended the episode's sessions: its token reaches nothing any more.
    ("mcp answer again", "error INVALID_SESSION_ID"): 3,
    ("mcp tool after the answer", "error INVALID_SESSION_ID"): 1,
    ("operator after the answer answer", "409 EPISODE_ENDED"): 1,
    ("operator after the answer reset", "409 EPISODE_ENDED"): 1,
    ("operator after the answer restore", "409 EPISODE_ENDED"): 1,
    ("rest after the answer", "401 INVALID_SESSION_ID"): 1,
    ("login after the answer", "400 invalid_grant"): 1,
}


def expected_outcomes(count: int) -> Counter[tuple[str, str]]:
    expected: Counter[tuple[str, str]] = Counter()
    for method, path, _ in control_attempts("x"):
        for label in ("token", "none"):
            exploit = f"control {label} {method} {path.split('/')[2]}"
            expected[(exploit, "401 INVALID_AUTH_HEADER")] += count
    for key, times in EXPECTED_OUTCOMES.items():
        expected[key] += times * count
    return expected


async def test_one_adversary_over_rest_and_mcp_is_refused_everywhere(
    base_url: str, tasks: list[dict[str, Any]]
) -> None:
    findings = Findings()
    await rest_and_mcp_adversary(base_url, read_tasks(tasks)[0], findings, "one")
    assert findings.server_errors == []
    assert findings.leaks == []
    assert findings.outcomes == expected_outcomes(1)


async def test_64_adversaries_at_once(base_url: str, tasks: list[dict[str, Any]]) -> None:
    findings = Findings()
    candidates = read_tasks(tasks)
    await asyncio.gather(
        *(
            rest_and_mcp_adversary(base_url, candidates[n % len(candidates)], findings, f"n{n}")
            for n in range(64)
        )
    )
    assert findings.server_errors == []
    assert findings.leaks == []
    assert findings.outcomes == expected_outcomes(64)


async def test_the_results_store_keeps_the_trajectory_after_the_sandbox_goes(
    base_url: str, tasks: list[dict[str, Any]]
) -> None:
    task = read_tasks(tasks)[1]
    async with httpx.AsyncClient(base_url=base_url, headers=OPERATOR, timeout=120) as operator:
        episode = await start_episode(operator, task, "kept")
        async with mcp_client(base_url, episode["access_token"]) as client:
            await client.call_tool("soql_query", {"query": "SELECT COUNT() FROM Case"})
            await client.call_tool("delete_record", {"sobject": "Case", "record_id": "x"})
            await client.call_tool("submit_answer", {"response": WRONG})
        assert (await operator.delete(f"{CONTROL}/episodes/{episode['id']}")).status_code == 204
        listed = await operator.get(f"{CONTROL}/results", params={"agent": "kept"})
    (row,) = listed.json()["results"]
    assert row["episode"] == episode["id"]
    assert (row["run"], row["agent"], row["channel"]) == ("adversary", "kept", "mcp")
    assert (row["idx"], row["task"], row["org"]) == (task["idx"], task["task"], "original")
    assert (row["answer"], row["expected"], row["reward"]) == (WRONG, task["answer"], 0.0)
    assert [call["tool"] for call in row["tool_calls"]] == [
        "soql_query",
        "delete_record",
        "submit_answer",
    ]
    assert [call["is_error"] for call in row["tool_calls"]] == [False, True, False]
    assert row["tool_calls"][0]["arguments"] == {"query": "SELECT COUNT() FROM Case"}
    assert row["tool_calls"][0]["result"]["totalSize"] > 0
    assert row["tool_calls"][1]["result"].startswith("TOOL_NOT_ALLOWED: delete_record")
    assert all(call["latency_ms"] >= 0 for call in row["tool_calls"])
    assert row["steps"] == 3
    assert [call["method"] for call in row["calls"]] == ["GET"]


@pytest.fixture(scope="module")
def link(app: FastAPI, base_url: str) -> AppLink:
    """The served app in process, on the loop its server runs its lifespan in (an app serves
    one lifespan at a time)."""
    return app.state.openenv.link  # type: ignore[no-any-return]


async def test_an_openenv_session_keeps_the_rights_it_was_opened_with(
    link: AppLink, tasks: list[dict[str, Any]]
) -> None:
    task = read_tasks(tasks)[2]
    env = LocalforceEnvironment(link)
    with pytest.raises(EpisodeError) as keyless:
        await env.reset_async(task=task["idx"])
    assert keyless.value.error_code == "INVALID_AUTH_HEADER"
    opened = await env.reset_async(task=task["idx"], admin_key=TEST_ADMIN_KEY)
    assert not set(opened.tools) & WRITE_TOOLS
    listed = await env.step_async(ListToolsAction())
    assert {tool.name for tool in listed.tools} == set(opened.tools)  # type: ignore[attr-defined]
    forged = {**task, "answer": WRONG}
    for attempt in ({"task": forged}, {"episode_id": "someone-elses"}, {"org": "b2b"}):
        with pytest.raises(EpisodeError) as refused:
            await env.reset_async(**attempt)
        assert refused.value.error_code == "INVALID_AUTH_HEADER"
    vandal = await env.step_async(
        CallToolAction(tool_name="delete_record", arguments={"sobject": "Case", "record_id": "x"})
    )
    assert vandal.error is not None  # type: ignore[attr-defined]
    assert vandal.error.message.startswith("TOOL_NOT_ALLOWED: ")  # type: ignore[attr-defined]
    answered = await env.step_async(
        CallToolAction(tool_name="submit_answer", arguments={"response": WRONG})
    )
    assert (answered.done, answered.reward) == (True, 0.0)
    assert "expected" not in json.dumps(answered.model_dump(mode="json"))
    again = await env.step_async(
        CallToolAction(tool_name="submit_answer", arguments={"response": task["answer"]})
    )
    assert again.error is not None  # type: ignore[attr-defined]
    episode_id = opened.episode_id
    # A keyless reset of the session starts another task of the server's file; the first
    # episode's result stands.
    second = await env.reset_async(task=task["idx"])
    assert second.episode_id != episode_id
    async with link.http(OPERATOR) as http:
        kept = (await http.get(f"{CONTROL}/episodes/{episode_id}")).json()["result"]
    assert (kept["reward"], kept["answer"], kept["channel"]) == (0.0, WRONG, "openenv")
    env.close()


async def test_hostile_tool_calls_are_refused_and_recorded_whole(
    base_url: str, tasks: list[dict[str, Any]]
) -> None:
    """A tool name of any length, arguments of any shape and size: each is a tool error,
    never a server error, and the trajectory keeps what it can hold."""
    async with httpx.AsyncClient(base_url=base_url, headers=OPERATOR, timeout=120) as operator:
        episode = await start_episode(operator, read_tasks(tasks)[3], "hostile")
        async with mcp_client(base_url, episode["access_token"]) as client:
            long_name = await client.call_tool("x" * 500, {})
            huge = await client.call_tool("soql_query", {"query": "SELECT Id FROM Case " * 20_000})
            odd = await client.call_tool("delete_record", {"sobject": ["\x00"], "id": {"a": 1}})
        outcomes = [_tool_outcome(result) for result in (long_name, huge, odd)]
        assert outcomes == ["error TOOL_NOT_ALLOWED", "error HTTP 414", "error TOOL_NOT_ALLOWED"]
        calls = (await recorded(operator, episode["id"]))["tool_calls"]
    assert [call["tool"] for call in calls] == ["x" * 80, "soql_query", "delete_record"]
    assert all(call["is_error"] for call in calls)
    assert len(json.dumps(calls[1]["arguments"])) <= 100_000 + 40
