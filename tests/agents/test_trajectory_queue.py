"""An episode's trajectory on its way to the results store: its tool calls are queued as they
end (app.storage.pending's WriteQueue, app.tasks.results' ToolCallQueue) and written in
batches; a read of results, or a purge, flushes this process's queue first; the trajectory
reads back in `at` order, queue order within one `at`.

The module's app runs with its flusher held off (FLUSH_SECONDS of an hour), so that a row
reaches lf_tool_call only by an explicit flush or a read that flushes: what the tests see in
the table is theirs to explain."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, insert, select

from app import main
from app.tasks.episodes import EPISODES
from app.tasks.results import RESULT_CHARS, TOOL_CALLS, ToolCall, ToolCallQueue, tool_calls
from tests.agents.test_mcp_direct import MCP_HEADERS, TASK, call, mcp_endpoint
from tests.conftest import ADMIN_HEADERS, open_client
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import state_of

CONTROL = "/__localforce"
AT = datetime(2026, 1, 1, 12, 0, 0)
QUERY = "SELECT Id, Subject FROM Case ORDER BY Id LIMIT 3"
REFUSED = (
    "TOOL_NOT_ALLOWED: create_record is not a tool of this episode's task "
    "(top_issue_identification); list_tools names the ones it has"
)


@pytest.fixture(scope="module")
def client(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[TestClient]:
    """The module's app (the operator's client), its flusher held off."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(main, "FLUSH_SECONDS", 3600.0)  # read by flush_forever at each sleep
        yield from open_client(database_factory, sandbox_ready_template)


# The episodes the queue's own tests write for: a row is written only for an episode whose
# result is kept (a purged one's rows are dropped).
UNIT_EPISODES = (
    "unflushed", *(f"thread-{n}" for n in range(8)), "dropped", "kept", "capped", "fallback",
    "same-at", "refused-twice", "nul-name", "same-second",
)  # fmt: skip


@pytest.fixture(scope="module")
def platform(client: TestClient) -> Engine:
    engine = state_of(client).platform
    with engine.begin() as conn:
        task = json.dumps(TASK)
        rows = [{"id": id_, "task": task, "created_at": AT} for id_ in UNIT_EPISODES]
        conn.execute(insert(EPISODES), rows)
    return engine


def stored(platform: Engine, episode_id: str) -> list[Any]:
    """The episode's rows in lf_tool_call, in the order they were written."""
    with platform.connect() as conn:
        query = select(TOOL_CALLS).where(TOOL_CALLS.c.episode_id == episode_id)
        return list(conn.execute(query.order_by(TOOL_CALLS.c.seq)))


def read_back(platform: Engine, episode_id: str) -> list[dict[str, Any]]:
    """The episode's trajectory as the results store reads it."""
    with platform.connect() as conn:
        return tool_calls(conn, [episode_id])[episode_id]


def a_call(n: int, at: datetime = AT, tool: str = "soql_query") -> ToolCall:
    return ToolCall(at, tool, {"n": n}, {"n": n}, False, 1.0)


# The queue itself, on the module's platform database.


def test_nothing_is_written_before_a_flush(platform: Engine) -> None:
    queue = ToolCallQueue(platform)
    assert not queue.pending()
    found = {"totalSize": 1, "done": True, "records": [{"Id": "500000000000001AAA"}]}
    queue.add(
        "unflushed", ToolCall(AT, "soql_query", {"query": "SELECT Id FROM Case"}, found, False, 1.5)
    )
    queue.add(
        "unflushed", ToolCall(AT, "describe", {"sobject": "Nope"}, "NOT_FOUND: gone", True, 2.0)
    )
    assert queue.pending()
    assert stored(platform, "unflushed") == []
    queue.flush()
    assert not queue.pending()
    rows = [
        (row.episode_id, row.at, row.tool, row.arguments, row.result, row.is_error, row.latency_ms)
        for row in stored(platform, "unflushed")
    ]
    assert rows == [
        (
            "unflushed",
            AT,
            "soql_query",
            '{"query":"SELECT Id FROM Case"}',  # compact JSON (orjson)
            '{"totalSize":1,"done":true,"records":[{"Id":"500000000000001AAA"}]}',
            False,
            1.5,
        ),
        ("unflushed", AT, "describe", '{"sobject":"Nope"}', "NOT_FOUND: gone", True, 2.0),
    ]
    queue.flush()  # nothing pending: nothing more written
    assert len(stored(platform, "unflushed")) == 2
    assert read_back(platform, "unflushed") == [
        {
            "tool": "soql_query",
            "arguments": {"query": "SELECT Id FROM Case"},
            "result": found,
            "is_error": False,
            "latency_ms": 1.5,
            "at": "2026-01-01T12:00:00.000Z",
        },
        {
            "tool": "describe",
            "arguments": {"sobject": "Nope"},
            "result": "NOT_FOUND: gone",
            "is_error": True,
            "latency_ms": 2.0,
            "at": "2026-01-01T12:00:00.000Z",
        },
    ]


THREADS, PER_THREAD, BATCH = 8, 200, 25


def test_rows_queued_from_many_threads_are_each_written_once_in_their_order(
    platform: Engine,
) -> None:
    """Eight threads add at once while a ninth flushes over and over; every BATCH adds a
    thread waits for another flush, so that adds and flushes overlap many times."""
    queue = ToolCallQueue(platform)
    start = threading.Barrier(THREADS + 1)
    added = threading.Event()
    flushed = threading.Condition()
    flushes = 0

    def another_flush() -> None:
        with flushed:
            seen = flushes
            assert flushed.wait_for(lambda: flushes > seen, timeout=30)

    def agent(thread: int) -> None:
        start.wait()
        for n in range(PER_THREAD):
            if n and n % BATCH == 0:
                another_flush()
            arguments = {"t": thread, "n": n}
            queue.add(f"thread-{thread}", ToolCall(AT, "soql_query", arguments, {}, False, 1.0))

    def flusher() -> None:
        nonlocal flushes
        start.wait()
        while not added.is_set():
            queue.flush()
            with flushed:
                flushes += 1
                flushed.notify_all()

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads interleave as finely as they can
    try:
        with ThreadPoolExecutor(THREADS + 1) as pool:
            flushing = pool.submit(flusher)
            agents = [pool.submit(agent, thread) for thread in range(THREADS)]
            for each in agents:
                each.result()
            added.set()
            flushing.result()
    finally:
        sys.setswitchinterval(switching)
    queue.flush()
    assert not queue.pending()
    assert flushes >= PER_THREAD // BATCH - 1
    for thread in range(THREADS):
        written = [json.loads(row.arguments) for row in stored(platform, f"thread-{thread}")]
        assert written == [{"t": thread, "n": n} for n in range(PER_THREAD)]


def test_drop_leaves_out_that_sandboxs_pending_rows_only(platform: Engine) -> None:
    queue = ToolCallQueue(platform)
    queue.add("dropped", a_call(0))
    queue.flush()  # written already: a drop does not reach it
    for n, sandbox in enumerate(["dropped", "kept", "dropped", "kept", "dropped"], start=1):
        queue.add(sandbox, a_call(n))
    queue.drop("dropped")
    assert queue.pending()
    queue.flush()
    assert [each["arguments"]["n"] for each in read_back(platform, "dropped")] == [0]
    assert [each["arguments"]["n"] for each in read_back(platform, "kept")] == [2, 4]
    queue.drop("kept")  # nothing of it pending: nothing changes
    assert not queue.pending()
    assert len(stored(platform, "kept")) == 2


def test_arguments_results_and_names_too_long_are_capped(platform: Engine) -> None:
    queue = ToolCallQueue(platform)
    text = "x" * (RESULT_CHARS + 7)
    arguments = {"q": "y" * RESULT_CHARS}  # '{"q":"yyy…"}': RESULT_CHARS + 8 characters
    records = {"records": ["r" * RESULT_CHARS]}  # '{"records":["rrr…"]}': RESULT_CHARS + 16
    queue.add("capped", ToolCall(AT, "t" * 100, arguments, text, True, 1.0))
    queue.add("capped", ToolCall(AT, "soql_query", {}, records, False, 1.0))
    queue.add("capped", ToolCall(AT, "soql_query", {}, "z" * RESULT_CHARS, True, 1.0))
    queue.flush()
    first, second, third = stored(platform, "capped")
    assert first.tool == "t" * 80
    assert first.result == "x" * RESULT_CHARS + "... [7 more characters]"
    assert first.arguments == '{"q":"' + "y" * (RESULT_CHARS - 6) + "... [8 more characters]"
    assert second.result == '{"records":["' + "r" * (RESULT_CHARS - 13) + "... [16 more characters]"
    assert third.result == "z" * RESULT_CHARS  # at the bound: whole
    # A capped result is no JSON any more: it reads back as its text.
    assert [each["result"] for each in read_back(platform, "capped")] == [
        first.result,
        second.result,
        third.result,
    ]


def test_values_orjson_refuses_are_written_by_the_standard_library(platform: Engine) -> None:
    queue = ToolCallQueue(platform)
    queue.add("fallback", ToolCall(AT, "get_record", {"n": 2**70}, {"id": 1}, False, 1.0))
    queue.add("fallback", ToolCall(AT, "describe", {"n": 1}, {1: "one", "two": 2}, False, 1.0))
    queue.add("fallback", a_call(3))  # the batch's other rows are written with them
    queue.flush()
    rows = [(row.arguments, row.result) for row in stored(platform, "fallback")]
    assert rows == [
        ('{"n": 1180591620717411303424}', '{"id":1}'),  # json.dumps' spacing: the fallback's
        ('{"n":1}', '{"1": "one", "two": 2}'),
        ('{"n":3}', '{"n":3}'),
    ]
    assert [(each["arguments"], each["result"]) for each in read_back(platform, "fallback")] == [
        ({"n": 2**70}, {"id": 1}),
        ({"n": 1}, {"1": "one", "two": 2}),
        ({"n": 3}, {"n": 3}),
    ]


def test_rows_of_one_at_read_back_in_queue_order(platform: Engine) -> None:
    queue = ToolCallQueue(platform)
    # Neither alphabetical nor by latency: only the queue's order is this one.
    tools = ["update_record", "soql_query", "describe", "create_record", "get_record"]
    for n, tool in enumerate(tools):
        queue.add("same-at", ToolCall(AT, tool, {"n": n}, {}, False, 10.0 - n))
    queue.flush()
    assert [each["tool"] for each in read_back(platform, "same-at")] == tools


def test_a_batch_that_fails_is_tried_once_more_then_dropped(
    platform: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = ToolCallQueue(platform)
    failing = {"on": True}
    write = ToolCallQueue.write

    def refused(self: ToolCallQueue, conn: Any, rows: list[Any]) -> None:
        if failing["on"]:
            raise OSError("the database went away")
        write(self, conn, rows)

    monkeypatch.setattr(ToolCallQueue, "write", refused)
    queue.add("refused-twice", a_call(0))
    with pytest.raises(OSError):
        queue.flush()  # the batch waits for the next flush
    assert queue.pending()
    queue.add("refused-twice", a_call(1))
    with pytest.raises(OSError):
        queue.flush()  # call 0 failed twice: dropped; call 1 once: it waits
    queue.add("refused-twice", a_call(2))
    failing["on"] = False
    queue.flush()
    assert not queue.pending()
    assert [each["arguments"]["n"] for each in read_back(platform, "refused-twice")] == [1, 2]


def test_a_name_postgresql_cannot_store_is_stored_mended(platform: Engine) -> None:
    # An agent's tool name may hold a NUL or a lone surrogate; so may a refusal's text.
    queue = ToolCallQueue(platform)
    name = "soql\x00query\ud800"
    queue.add("nul-name", ToolCall(AT, name, {"q": "\x00\ud800"}, f"refused: {name}", True, 1.0))
    queue.add("nul-name", a_call(1))  # and the rest of its batch is written with it
    queue.flush()
    first, second = read_back(platform, "nul-name")
    assert (first["tool"], first["result"]) == ("soql\ufffdquery?", "refused: soql\ufffdquery?")
    assert first["arguments"] == {"q": "\x00\ud800"}  # JSON escapes them: kept whole
    assert second["arguments"] == {"n": 1}


def test_calls_ending_in_one_second_read_back_in_the_order_they_ended(
    platform: Engine,
) -> None:
    """Two workers' calls of one episode within a second, the later one's batch written
    first: `at` holds microseconds, so the trajectory reads in the calls' order."""
    ended = [AT + timedelta(microseconds=n * 1500) for n in range(4)]
    first, second = ToolCallQueue(platform), ToolCallQueue(platform)
    for n, at in enumerate(ended):
        (first if n % 2 == 0 else second).add("same-second", a_call(n, at))
    second.flush()
    first.flush()
    assert [each["arguments"]["n"] for each in read_back(platform, "same-second")] == [0, 1, 2, 3]


def test_a_call_of_a_purged_episode_leaves_no_row(client: TestClient, platform: Engine) -> None:
    # A call still under way when its episode's result is purged (its row queued after the
    # purge's flush), or one queued by another worker: written by no flush.
    start_episode(client, "purged-mid-call")
    queue = ToolCallQueue(platform)
    queue.add("purged-mid-call", a_call(0))
    assert client.delete(f"{CONTROL}/results/purged-mid-call").status_code == 204
    queue.add("purged-mid-call", a_call(1))
    queue.add("kept", a_call(9))  # another episode's row in the batch is written
    queue.flush()
    assert stored(platform, "purged-mid-call") == []
    assert read_back(platform, "kept")[-1]["arguments"] == {"n": 9}


# Through the app: an episode's MCP tool calls.


def start_episode(client: TestClient, episode_id: str) -> str:
    made = client.post(f"{CONTROL}/episodes", json={"id": episode_id, "task": TASK})
    assert made.status_code == 201, made.text
    return str(made.json()["access_token"])


def mcp_result(client: TestClient, token: str, message: dict[str, Any]) -> dict[str, Any]:
    """A tools/call's JSON-RPC result."""
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    response = client.post("/mcp", json=message, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json()["result"])


def without_timing(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for made in calls:
        assert made["latency_ms"] >= 0
        assert made["at"].endswith("Z") and datetime.fromisoformat(made["at"][:-1])
    return [{k: v for k, v in made.items() if k not in ("latency_ms", "at")} for made in calls]


def result_row(client: TestClient, episode_id: str) -> dict[str, Any]:
    listed = client.get(f"{CONTROL}/results")
    assert listed.status_code == 200, listed.text
    (row,) = [row for row in listed.json()["results"] if row["episode"] == episode_id]
    return dict(row)


@pytest.mark.parametrize("path", ["direct", "sdk"])
def test_an_episodes_calls_are_in_its_result_at_once_in_call_order(
    client: TestClient, platform: Engine, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    if path == "sdk":  # the SDK's transport and its middleware chain answer every call
        monkeypatch.setattr(mcp_endpoint(cast(FastAPI, client.app)), "direct", None)
    episode_id = f"queued-{path}"
    token = start_episode(client, episode_id)
    queried = mcp_result(client, token, call("soql_query", {"query": QUERY}))
    refused = mcp_result(client, token, call("create_record", {"sobject": "Account", "fields": {}}))
    unknown = mcp_result(client, token, call("soql_query", {"query": "SELECT Nope FROM Case"}))
    bad = mcp_result(client, token, call("soql_query", {"query": 7}))
    assert stored(platform, episode_id) == []  # queued, not written
    assert len(queried["structuredContent"]["records"]) == 3
    assert refused == {"content": [{"type": "text", "text": REFUSED}], "isError": True}
    assert unknown["isError"] is True and bad["isError"] is True
    unknown_text = unknown["content"][0]["text"]
    assert unknown_text.startswith("Error executing tool soql_query: INVALID_FIELD: ")
    bad_text = bad["content"][0]["text"]
    assert "validation error for soql_queryArguments" in bad_text
    expected = [
        {
            "tool": "soql_query",
            "arguments": {"query": QUERY},
            "result": queried["structuredContent"],
            "is_error": False,
        },
        {
            "tool": "create_record",
            "arguments": {"sobject": "Account", "fields": {}},
            "result": REFUSED,
            "is_error": True,
        },
        {
            "tool": "soql_query",
            "arguments": {"query": "SELECT Nope FROM Case"},
            "result": unknown_text,
            "is_error": True,
        },
        {"tool": "soql_query", "arguments": {"query": 7}, "result": bad_text, "is_error": True},
    ]
    row = result_row(client, episode_id)  # GET /results flushes the queue
    assert (row["steps"], without_timing(row["tool_calls"])) == (4, expected)
    graded = mcp_result(client, token, call("submit_answer", {"response": "none"}))
    answer = {"episode": episode_id, "reward": 1.0, "metric": "exact_match", "done": True}
    assert graded["structuredContent"] == answer
    assert len(stored(platform, episode_id)) == 4  # the answer's call is queued
    shown = client.get(f"{CONTROL}/episodes/{episode_id}")  # GET /episodes/{id} flushes too
    assert shown.status_code == 200, shown.text
    result = shown.json()["result"]
    answered = {"tool": "submit_answer", "arguments": {"response": "none"}, "result": answer}
    assert without_timing(result["tool_calls"]) == [*expected, {**answered, "is_error": False}]
    assert (result["reward"], result["channel"], result["steps"]) == (1.0, "mcp", 5)
    assert len(stored(platform, episode_id)) == 5  # each call once


def test_a_purge_right_after_calls_leaves_no_row_to_come_back(
    client: TestClient, platform: Engine
) -> None:
    token = start_episode(client, "purged-at-once")
    for query in (QUERY, "SELECT Nope FROM Case"):
        mcp_result(client, token, call("soql_query", {"query": query}))
    mcp_result(client, token, call("create_record", {"sobject": "Account", "fields": {}}))
    assert stored(platform, "purged-at-once") == []  # all three queued
    assert client.delete(f"{CONTROL}/results/purged-at-once").status_code == 204
    state_of(client).tool_calls.flush()  # what the flusher would write next
    assert stored(platform, "purged-at-once") == []
    assert client.get(f"{CONTROL}/episodes/purged-at-once").status_code == 404
    assert [row["episode"] for row in client.get(f"{CONTROL}/results").json()["results"]].count(
        "purged-at-once"
    ) == 0


def test_one_episodes_rows_from_two_workers_read_back_in_at_order(
    client: TestClient, platform: Engine
) -> None:
    """Two workers' queues, each with every other call of one episode, the later calls'
    worker flushing first: the trajectory reads in the calls' order all the same."""
    start_episode(client, "two-workers")
    first, second = ToolCallQueue(platform), ToolCallQueue(platform)
    for n in range(6):
        (first if n % 2 == 0 else second).add("two-workers", a_call(n, AT + timedelta(seconds=n)))
    second.flush()
    first.flush()
    assert [json.loads(row.arguments)["n"] for row in stored(platform, "two-workers")] == [
        1, 3, 5, 0, 2, 4
    ]  # fmt: skip
    ats = [f"2026-01-01T12:00:0{n}.000Z" for n in range(6)]
    shown = client.get(f"{CONTROL}/episodes/two-workers").json()["result"]["tool_calls"]
    assert [(made["arguments"]["n"], made["at"]) for made in shown] == list(enumerate(ats))
    listed = result_row(client, "two-workers")["tool_calls"]
    assert [made["arguments"]["n"] for made in listed] == list(range(6))


AGENTS, CALLS = 6, 8


@pytest.mark.asyncio
async def test_episodes_calling_at_once_each_read_back_their_own_calls_in_order(
    client: TestClient, platform: Engine
) -> None:
    """Agents of several episodes, each calling one tool after another, all at once on this
    test's event loop (the direct path, in process): every episode's trajectory holds its
    own calls, each once, in the order made."""
    tokens = [start_episode(client, f"at-once-{index}") for index in range(AGENTS)]
    transport = httpx.ASGITransport(app=client.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:

        async def agent(token: str) -> None:
            headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
            for n in range(CALLS):
                message = call("soql_query", {"query": f"SELECT Id FROM Case LIMIT {n + 1}"})
                response = await http.post("/mcp", json=message, headers=headers)
                result = response.json()["result"]
                assert result["structuredContent"]["totalSize"] == n + 1, result

        await asyncio.gather(*(agent(token) for token in tokens))
        assert all(stored(platform, f"at-once-{index}") == [] for index in range(AGENTS))
        listed = await http.get(f"{CONTROL}/results", headers=ADMIN_HEADERS)
    rows = {row["episode"]: row for row in listed.json()["results"]}
    for index in range(AGENTS):
        made = rows[f"at-once-{index}"]["tool_calls"]
        assert [each["arguments"]["query"] for each in made] == [
            f"SELECT Id FROM Case LIMIT {n + 1}" for n in range(CALLS)
        ]
        assert [each["result"]["totalSize"] for each in made] == list(range(1, CALLS + 1))
        assert len(stored(platform, f"at-once-{index}")) == CALLS


@pytest.mark.parametrize("path", ["direct", "sdk"])
def test_arguments_json_alone_holds_are_kept_and_read_back(
    client: TestClient, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An agent's arguments may hold an integer past 64 bits (orjson writes none): the call
    # is recorded, and the result reads back (a 200, not a 500 from the JSON encoder).
    if path == "sdk":
        monkeypatch.setattr(mcp_endpoint(cast(FastAPI, client.app)), "direct", None)
    episode_id = f"odd-arguments-{path}"
    token = start_episode(client, episode_id)
    body = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"soql_query",'
        '"arguments":{"query":"SELECT Id FROM Case LIMIT 1","n":1180591620717411303424}}}'
    )
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    assert client.post("/mcp", content=body, headers=headers).status_code == 200
    shown = client.get(f"{CONTROL}/episodes/{episode_id}")
    assert shown.status_code == 200, shown.text
    (made,) = shown.json()["result"]["tool_calls"]
    assert made["tool"] == "soql_query" and made["is_error"] is False  # "n" is ignored
    assert made["arguments"]["query"] == "SELECT Id FROM Case LIMIT 1"
    # Read as JSON reads it: the SDK keeps the integer whole, orjson (the direct path) a float.
    assert made["arguments"]["n"] == (2**70 if path == "sdk" else float(2**70))
    assert client.get(f"{CONTROL}/results").status_code == 200
