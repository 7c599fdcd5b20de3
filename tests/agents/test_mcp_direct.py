"""The MCP endpoint's direct answers (app/agents/mcp_direct.py) against the MCP SDK's: each
request below is sent once answered directly and once with the direct path off (the SDK's
transport answers everything), and the two answers must agree: status, content type and JSON.
Then what the direct path records of an episode's calls."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.agents.mcp import PATH, McpEndpoint
from tests.conftest import ADMIN_HEADERS
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}
TASK = {
    "idx": 0,
    "task": "top_issue_identification",
    "query": "Which issue comes up most?",
    "reward_metric": "exact_match",
    "metadata": {"required": "", "optional": ""},
    "answer": "none",
}
QUERY = "SELECT Id, Subject FROM Case ORDER BY Id LIMIT 3"
NO_CASE = {"sobject": "Case", "record_id": "500000000000000AAA"}
NEW_ACCOUNT = {"sobject": "Account", "fields": {"Name": "x"}}
PROGRESS = {"name": "describe_global", "_meta": {"progressToken": 1}}
NO_ARGUMENTS = {"name": "describe_global", "arguments": None}


@dataclass(frozen=True)
class Served:
    url: str
    endpoint: McpEndpoint


def mcp_endpoint(app: FastAPI) -> McpEndpoint:
    [route] = [route for route in app.router.routes if getattr(route, "path", None) == PATH]
    endpoint = route.endpoint  # type: ignore[attr-defined]
    assert isinstance(endpoint, McpEndpoint)
    return endpoint


@pytest.fixture(scope="module")
def served(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[Served]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield Served(f"http://127.0.0.1:{port}", mcp_endpoint(app))


def call(name: str, arguments: Any = None, id: Any = 1) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def org_token(url: str) -> str:
    form = {"grant_type": "password", "username": "agent@example.com", "password": "x"}
    response = httpx.post(f"{url}/services/oauth2/token", data=form)
    return str(response.json()["access_token"])


def episode_token(url: str, episode_id: str) -> str:
    made = httpx.post(
        f"{url}/__localforce/episodes",
        headers=ADMIN_HEADERS,
        json={"id": episode_id, "task": TASK},
        timeout=60,
    )
    assert made.status_code == 201, made.text
    return str(made.json()["access_token"])


def both(
    served: Served, message: Any, token: str | None, headers: dict[str, str] | None = None
) -> tuple[httpx.Response, httpx.Response]:
    """The request answered directly, then by the SDK's transport alone."""
    sent = {**MCP_HEADERS, **(headers or {})}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    body = json.dumps(message).encode()
    direct = httpx.post(f"{served.url}{PATH}", content=body, headers=sent, timeout=60)
    kept, served.endpoint.direct = served.endpoint.direct, None
    try:
        by_sdk = httpx.post(f"{served.url}{PATH}", content=body, headers=sent, timeout=60)
    finally:
        served.endpoint.direct = kept
    return direct, by_sdk


def assert_same(direct: httpx.Response, by_sdk: httpx.Response) -> None:
    assert direct.status_code == by_sdk.status_code, (direct.text, by_sdk.text)
    assert direct.headers.get("content-type") == by_sdk.headers.get("content-type")
    if by_sdk.headers.get("content-type") != "application/json":
        assert direct.content == by_sdk.content
    elif by_sdk.content:
        ours, theirs = (
            json.dumps(r.json(), indent=1, sort_keys=True).splitlines() for r in (direct, by_sdk)
        )
        differ = "\n".join(difflib.unified_diff(ours, theirs, lineterm=""))
        assert direct.json() == by_sdk.json(), differ
    else:
        assert not direct.content


# (name, message, whose token: "org", "none" or "episode")
CASES: list[tuple[str, Any, str]] = [
    ("a query", call("soql_query", {"query": QUERY}), "org"),
    ("a query's Salesforce error", call("soql_query", {"query": "SELECT Nope FROM Case"}), "org"),
    ("a missing argument", call("soql_query", {}), "org"),
    ("an argument of the wrong type", call("soql_query", {"query": 7}), "org"),
    ("an unknown tool", call("no_such_tool", {}), "org"),
    ("no arguments at all", call("describe_global"), "org"),
    ("a record that is not there", call("get_record", NO_CASE), "org"),
    ("a string id", call("describe", {"sobject": "Account"}, id="req-7"), "org"),
    ("CRMArena's connector", call("issue_soql_query", {"query": QUERY}), "org"),
    ("no token", call("soql_query", {"query": QUERY}), "none"),
    ("an episode's query", call("soql_query", {"query": QUERY}), "episode"),
    ("a tool the episode's task lacks", call("create_record", NEW_ACCOUNT), "episode"),
    ("an unknown tool in an episode", call("no_such_tool", {}), "episode"),
    # Left to the SDK: the two paths must be one.
    ("tools/list", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "org"),
    ("a batch", [call("soql_query", {"query": QUERY})], "org"),
    ("a notification", {"jsonrpc": "2.0", "method": "notifications/initialized"}, "org"),
    ("a _meta", call("describe_global") | {"params": PROGRESS}, "org"),
    ("null arguments", call("describe_global") | {"params": NO_ARGUMENTS}, "org"),
    ("a boolean id", call("describe_global", id=True), "org"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "message", "whose"), CASES, ids=[case[0] for case in CASES])
def test_a_direct_answer_is_the_sdks(served: Served, name: str, message: Any, whose: str) -> None:
    token = {
        "org": org_token(served.url),
        "none": None,
        "episode": episode_token(served.url, f"direct-{abs(hash(name)) % 10**8}"),
    }[whose]
    assert_same(*both(served, message, token))


@pytest.mark.parametrize(
    "headers",
    [
        {"Accept": "text/html"},
        {"Content-Type": "text/plain"},
        {"MCP-Protocol-Version": "2026-07-28"},
        {"MCP-Protocol-Version": "1999-01-01"},
        {"Accept": "*/*"},
        {},
    ],
    ids=["html-only", "text-body", "modern-era", "unknown-version", "any", "as-is"],
)
def test_headers_the_sdk_refuses_are_refused_alike(served: Served, headers: dict[str, str]) -> None:
    assert_same(*both(served, call("describe_global"), org_token(served.url), headers))


def test_a_body_that_is_not_json_is_the_sdks_to_refuse(served: Served) -> None:
    sent = {**MCP_HEADERS, "Authorization": f"Bearer {org_token(served.url)}"}
    response = httpx.post(f"{served.url}{PATH}", content=b"{not json", headers=sent, timeout=60)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


def test_an_episodes_direct_calls_are_recorded_and_end_with_its_answer(served: Served) -> None:
    token = episode_token(served.url, "direct-recorded")
    sent = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}

    def post(message: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{served.url}{PATH}", json=message, headers=sent, timeout=60)
        assert response.status_code == 200, response.text
        return dict(response.json())

    assert post(call("soql_query", {"query": QUERY}))["result"].get("isError") is not True
    refused = post(call("create_record", {"sobject": "Account", "fields": {"Name": "x"}}))
    assert refused["result"]["isError"] is True
    assert refused["result"]["content"][0]["text"].startswith("TOOL_NOT_ALLOWED: ")
    graded = post(call("submit_answer", {"response": "none"}))["result"]["structuredContent"]
    assert graded == {
        "episode": "direct-recorded",
        "reward": 1.0,
        "metric": "exact_match",
        "done": True,
    }
    # The answer ended the episode's sessions: its token reaches nothing.
    ended = post(call("soql_query", {"query": QUERY}))["result"]
    text = "Error executing tool soql_query: INVALID_SESSION_ID: Session expired or invalid"
    assert ended == {"content": [{"type": "text", "text": text}], "isError": True}
    shown = httpx.get(
        f"{served.url}/__localforce/episodes/direct-recorded", headers=ADMIN_HEADERS
    ).json()
    recorded = [(made["tool"], made["is_error"]) for made in shown["result"]["tool_calls"]]
    assert recorded == [("soql_query", False), ("create_record", True), ("submit_answer", False)]
