"""The client distribution (clients/python, importable as `localforce`) against a real server:
the REST surface with an episode's or a sandbox's token, the control plane with the admin key,
and the gym-like environment, blocking and asyncio, on the server's task file and on a split."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import localforce
import pytest
from localforce import EpisodeOver, SalesforceError

from app.config import REPO_ROOT
from app.tasks import split_files
from app.tasks.generator import generate_tasks
from app.tasks.model import TaskRow
from tests.conftest import TEST_ADMIN_KEY, TEST_SEED
from tests.databases import DatabaseFactory
from tests.servers import serve_in_thread, task_file_app
from tests.stand_in_splits import stand_in_split
from tests.tasks.original_tasks import ORIGINAL_TABLES

CLIENT_DIR = REPO_ROOT / "clients" / "python"
TINY = "tiny@v1:test"  # a split of this module's, one task of each original type
COUNT_ACCOUNTS = "SELECT COUNT() FROM Account"


def single_answer(row: dict[str, Any]) -> str | None:
    """The row's answer as one text, where it is one (an exact-match answer of one value)."""
    answer = row["answer"]
    if isinstance(answer, list):
        answer = answer[0] if len(answer) == 1 else None
    return answer if isinstance(answer, str) and row["reward_metric"] == "exact_match" else None


@pytest.fixture(scope="module")
def tiny_rows(seeded_template: str) -> list[TaskRow]:
    from sqlalchemy import create_engine

    engine = create_engine(seeded_template)
    try:
        return generate_tasks(engine, ORIGINAL_TABLES, org="original", seed=TEST_SEED, per_type=1)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def server(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tiny_rows: list[TaskRow],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, list[int]]]:
    """The server's URL, its task file being the tiny split's rows; and how many times the
    server drew the tiny split (it draws through the real SplitFiles, from a split declared
    here)."""
    directory = tmp_path_factory.mktemp("client")
    tasks = [row.to_json() for row in tiny_rows]
    with pytest.MonkeyPatch.context() as patch:
        draws = stand_in_split(patch, [TINY], tiny_rows)
        app = task_file_app(database_factory, sandbox_ready_template, tasks, directory)
        with serve_in_thread(app) as port:
            yield f"http://127.0.0.1:{port}", draws


@pytest.fixture(scope="module")
def url(server: tuple[str, list[int]]) -> str:
    return server[0]


@pytest.fixture(scope="module")
def rows(tiny_rows: list[TaskRow]) -> list[dict[str, Any]]:
    return [row.to_json() for row in tiny_rows]


def answerable(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next(row for row in rows if single_answer(row) is not None)


def test_the_rest_surface_reads_and_writes_its_own_sandbox(url: str) -> None:
    with localforce.Control(url, TEST_ADMIN_KEY) as control:
        made = control.create_sandbox(id="client-rest")
        try:
            with pytest.raises(SalesforceError) as refused:
                localforce.login(url, made["username"], "not its password")
            assert (refused.value.status, refused.value.error_code) == (400, "invalid_grant")
            org = localforce.login(url, made["username"], made["password"])
            with org:
                page = org.query("SELECT Id, Name FROM Account ORDER BY Name LIMIT 3")
                assert (page["totalSize"], page["done"], len(page["records"])) == (3, True, 3)
                assert page["records"][0]["attributes"]["type"] == "Account"
                first = org.query("SELECT Id FROM OrderItem")  # 7,100: pages of 2,000
                assert (first["totalSize"], first["done"], len(first["records"])) == (
                    7100,
                    False,
                    2000,
                )
                second = org.query_more(first["nextRecordsUrl"])
                assert len(second["records"]) == 2000
                every = org.query_all("SELECT Id FROM OrderItem")
                assert every["done"] and len({r["Id"] for r in every["records"]}) == 7100
                created = org.create("Account", {"Name": "Client Test Account"})
                assert created["success"] and created["id"].startswith("001")
                org.update("Account", created["id"], {"Name": "Client Renamed"})
                assert org.get("Account", created["id"], ["Name"])["Name"] == "Client Renamed"
                found = org.search("FIND {Client Renamed} RETURNING Account(Id)")
                assert [r["Id"] for r in found["searchRecords"]] == [created["id"]]
                assert org.describe("Account")["name"] == "Account"
                assert any(s["name"] == "Case" for s in org.describe_global()["sobjects"])
                org.delete("Account", created["id"])
                with pytest.raises(SalesforceError) as missing:
                    org.get("Account", created["id"])
                assert missing.value.status == 404
                assert missing.value.error_code == "ENTITY_IS_DELETED"
                with pytest.raises(SalesforceError) as bad:
                    org.query("SELECT Nope FROM Account")
                assert (bad.value.status, bad.value.error_code) == (400, "INVALID_FIELD")
                assert "No such column 'Nope' on entity 'Account'" in bad.value.message
            logged = control.calls("client-rest")
            assert [call["method"] for call in logged][:2] == ["GET", "GET"]
        finally:
            control.delete_sandbox("client-rest")
        assert "client-rest" not in {s["id"] for s in control.sandboxes()}


def test_the_control_plane_without_the_admin_key_is_refused(url: str) -> None:
    with localforce.Control(url) as control, pytest.raises(SalesforceError) as closed:
        control.sandboxes()
    assert closed.value.status in (401, 403)


def test_the_environment_runs_an_episode_to_its_graded_answer(
    url: str, rows: list[dict[str, Any]]
) -> None:
    row = answerable(rows)
    with localforce.make(url, admin_key=TEST_ADMIN_KEY, run="client-env", max_steps=5) as env:
        observation, info = env.reset(task=row["idx"], episode_id="client-env-1")
        assert observation == row["query"]
        assert info["episode_id"] == "client-env-1"
        assert info["task"]["task"] == row["task"] and "answer" not in info["task"]
        names = {tool["function"]["name"] for tool in env.tools}
        assert {"soql_query", "submit_answer"} <= names and "delete_record" not in names
        assert env.tools == info["tools"]
        read = env.step({"name": "soql_query", "arguments": {"query": "SELECT Id FROM User"}})
        assert (read.reward, read.terminated, read.truncated) == (0.0, False, False)
        assert '"totalSize"' in read.observation and read.info["is_error"] is False
        # A chat model's call: arguments as JSON text.
        call = {
            "function": {"name": "soql_query", "arguments": '{"query": "SELECT Nope FROM Case"}'}
        }
        bad = env.step(call)
        assert bad.info["is_error"] and "INVALID_FIELD" in bad.observation
        refused = env.step(
            {"name": "delete_record", "arguments": {"sobject": "Case", "record_id": "x"}}
        )
        assert refused.observation.startswith("TOOL_NOT_ALLOWED: delete_record")
        malformed = env.step({"function": {"name": "soql_query", "arguments": "{not json"}})
        assert malformed.observation.startswith("INVALID_TOOL_CALL: the arguments of soql_query")
        done = env.step({"name": "submit_answer", "arguments": {"response": single_answer(row)}})
        assert (done.reward, done.terminated, done.truncated) == (1.0, True, False)
        with pytest.raises(EpisodeOver):
            env.step({"name": "soql_query", "arguments": {"query": "SELECT Id FROM Case"}})
    with localforce.Control(url, TEST_ADMIN_KEY) as control:
        (result,) = control.results(run="client-env")
        assert (result["episode"], result["reward"], result["answer"]) == (
            "client-env-1",
            1.0,
            single_answer(row),
        )
        assert [call["tool"] for call in result["tool_calls"]][-1] == "submit_answer"
        assert control.episode("client-env-1")["sandbox"] is None  # close() ended it


def test_max_steps_truncates_and_reset_ends_the_running_episode(url: str) -> None:
    with localforce.make(url, admin_key=TEST_ADMIN_KEY, max_steps=1, run="client-trunc") as env:
        env.reset(seed=3, episode_id="client-trunc-1")
        step = env.step(
            {"name": "soql_query", "arguments": {"query": "SELECT Id FROM Case LIMIT 1"}}
        )
        assert (step.terminated, step.truncated) == (False, True)
        env.reset(seed=3, episode_id="client-trunc-2")
        with localforce.Control(url, TEST_ADMIN_KEY) as control:
            assert control.episode("client-trunc-1")["sandbox"] is None
            assert control.episode("client-trunc-2")["sandbox"] is not None
            first, second = control.results(run="client-trunc")
        # The same seed draws the same task; an unanswered episode has no reward.
        assert first["task"] == second["task"] and first["reward"] is None


def test_a_split_is_drawn_once_by_the_server_and_named_by_idx(
    server: tuple[str, list[int]], rows: list[dict[str, Any]]
) -> None:
    url, draws = server
    with localforce.Control(url, TEST_ADMIN_KEY) as control:
        listed = {part["name"]: part for part in control.splits()}
        assert set(listed) == {
            f"{name}@v1:{part}"
            for name in ("crmarena-original", "crmarena-pro-b2b", "crmarena-pro-b2c")
            for part in ("test", "train")
        }
        assert listed["crmarena-original@v1:test"]["size"] == 1170
        assert listed["crmarena-pro-b2b@v1:train"]["seeds"] == [43, 44, 45, 46, 47]
        tasks = control.split_tasks(TINY)
        given = ("idx", "task", "query", "metadata")
        assert tasks == [{key: row[key] for key in given} for row in rows]  # never the answer
        assert control.split_tasks(TINY) == tasks
        assert len(draws) == 1  # kept in the data directory, checked, not drawn again
        with pytest.raises(SalesforceError) as unknown:
            control.split_tasks("nope@v1:test")
        assert (unknown.value.status, unknown.value.error_code) == (400, "INVALID_INPUT")
        assert unknown.value.message.startswith("No split is named nope@v1")
        with pytest.raises(SalesforceError) as row_with_split:
            control.start_episode(rows[0], split=TINY)
        assert row_with_split.value.message == f"task: the idx of one of {TINY}'s tasks, with split"
    row = answerable(rows)
    with localforce.make(url, split=TINY, admin_key=TEST_ADMIN_KEY, types=[row["task"]]) as env:
        observation, _ = env.reset(seed=11)  # one task of the type: that one
        assert observation == row["query"]
        done = env.step({"name": "submit_answer", "arguments": {"response": "not it"}})
        assert (done.reward, done.terminated) == (0.0, True)
    assert len(draws) == 1


@pytest.mark.asyncio
async def test_async_environments_run_side_by_side_each_in_its_own_sandbox(
    url: str, rows: list[dict[str, Any]]
) -> None:
    row = answerable(rows)

    async def episode(n: int) -> float:
        async with localforce.make_async(url, admin_key=TEST_ADMIN_KEY, run="client-async") as env:
            await env.reset(task=row["idx"], episode_id=f"client-async-{n}")
            read = await env.step({"name": "soql_query", "arguments": {"query": COUNT_ACCOUNTS}})
            assert not read.info["is_error"], read.observation
            answer = single_answer(row) if n % 2 == 0 else f"not the answer {n}"
            done = await env.step({"name": "submit_answer", "arguments": {"response": answer}})
            return done.reward

    rewards = await asyncio.gather(*(episode(n) for n in range(16)))
    assert rewards == [1.0 if n % 2 == 0 else 0.0 for n in range(16)]
    async with localforce.AsyncControl(url, TEST_ADMIN_KEY) as control:
        results = await control.results(run="client-async")
        assert len(results) == 16 and len({r["episode"] for r in results}) == 16


def test_the_server_draws_a_split_once_for_threads_asking_at_once(
    tmp_path: Path, tiny_rows: list[TaskRow], monkeypatch: pytest.MonkeyPatch
) -> None:
    draws = stand_in_split(monkeypatch, [TINY], tiny_rows)
    files = split_files.SplitFiles(tmp_path, tmp_path)
    paths: list[Path] = []
    threads = [threading.Thread(target=lambda: paths.append(files.path(TINY)[1])) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(draws) == 1 and len(set(paths)) == 1
    # A file changed by hand is not trusted: drawn again.
    paths[0].write_text("[]\n", encoding="utf-8")
    assert files.path(TINY)[1].read_text(encoding="utf-8") != "[]\n"
    assert len(draws) == 2


def test_the_client_errors_carry_salesforces_error_array() -> None:
    response = httpx.Response(
        404,
        json=[{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}],
    )
    error = SalesforceError.of(response)
    assert (error.status, error.error_code, error.message) == (
        404,
        "NOT_FOUND",
        "The requested resource does not exist",
    )
    assert str(error) == "NOT_FOUND: The requested resource does not exist (HTTP 404)"
    plain = SalesforceError.of(httpx.Response(502, text="Bad Gateway"))
    assert (plain.error_code, plain.message) == ("HTTP_502", "Bad Gateway")


# What the wheel's own environment runs: the REST surface with a sandbox's login, and an
# episode to its graded answer, through the gym-like environment.
WHEEL_SCRIPT = """
import json, sys
import localforce

url, key, task, answer = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with localforce.Control(url, key) as control:
    made = control.create_sandbox(id="client-wheel")
    org = localforce.login(url, made["username"], made["password"])
    accounts = org.query("SELECT COUNT() FROM Account")["totalSize"]
    control.delete_sandbox("client-wheel")
with localforce.make(url, admin_key=key, run="client-wheel") as env:
    observation, info = env.reset(task=task)
    step = env.step({"name": "submit_answer", "arguments": {"response": answer}})
print(json.dumps({"accounts": accounts, "reward": step.reward, "done": step.terminated}))
"""


def test_the_wheel_installs_alone_and_runs_an_episode(
    url: str, rows: list[dict[str, Any]], tmp_path: Path, database_factory: DatabaseFactory
) -> None:
    """The distribution built as a wheel, installed into a virtualenv of its own: httpx and
    what it needs come with it, the server does not (`import app` fails there)."""
    if database_factory.backend != "sqlite":
        pytest.skip("the wheel is the same whatever the server's back end")
    # Built from a copy: a build writes into its source tree, which tests share.
    source = shutil.copytree(
        CLIENT_DIR, tmp_path / "source", ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", wheels, source], check=True)
    (wheel,) = wheels.glob("localforce_client-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "--disable-pip-version-check", "-q", "install", wheel], check=True
    )

    def isolated(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-I", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )

    for server_module in ("app", "fastapi", "sqlalchemy"):
        missing = isolated("-c", f"import {server_module}")
        assert f"No module named '{server_module}'" in missing.stderr
    installed = isolated("-m", "pip", "list", "--format=freeze").stdout.lower()
    assert "localforce-client==0.1.0" in installed and "httpx==" in installed
    row = answerable(rows)
    script = tmp_path / "episode.py"
    script.write_text(WHEEL_SCRIPT, encoding="utf-8")
    ran = isolated(str(script), url, TEST_ADMIN_KEY, str(row["idx"]), str(single_answer(row)))
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"accounts": 201, "reward": 1.0, "done": True}
