"""`localforce eval` against a fake OpenAI-compatible server: a model that replays the
reference agent scores 1 on every type, guessing scores the baseline, a faulty endpoint's
episodes are retried or recorded as failed with their reason, and a run killed midway and
resumed records every episode exactly once, in its file and in the results store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request, Response
from typer.testing import CliRunner

from app.cli import cli
from app.config import REPO_ROOT
from app.evaluation.control import ADMIN_HEADER, ControlError
from app.evaluation.evaluate import EvalRefused, ModelEndpoint, evaluate, select_tasks
from app.evaluation.run_file import RunFile
from app.evaluation.runner import Plan, episode_id
from app.tasks.grading import score
from app.tasks.metrics import is_single_answer
from app.tasks.split_files import draw_part
from tests.conftest import ADMIN_HEADERS, TEST_ADMIN_KEY
from tests.databases import DatabaseFactory
from tests.evaluation.fake_model import FAULTS, HUGE_CHARS, FakeModels, nonsense_answer
from tests.servers import serve_in_thread

EMPTY_DIFF: dict[str, list[Any]] = {"created": [], "updated": [], "deleted": []}


def run(
    tasks: list[dict[str, Any]],
    localforce_url: str,
    models_url: str,
    model: str,
    directory: Path,
    *,
    name: str,
    concurrency: int = 4,
    resume: bool = False,
    agent: str = "function-calling",
    timeout: float = 60.0,
    judge: str | None = None,
    user: str | None = None,
) -> list[dict[str, Any]]:
    endpoint = ModelEndpoint(
        name=model, base_url=models_url, api_key="none", timeout=timeout, max_retries=2
    )
    plan = Plan(run=name, tasks=tasks, concurrency=concurrency, agent=agent)
    return evaluate(
        plan,
        endpoint,
        localforce_url,
        TEST_ADMIN_KEY,
        RunFile.of_run(directory, name),
        resume=resume,
        judge=None if judge is None else fake(judge, models_url),
        user=None if user is None else fake(user, models_url),
    )


def fake(model: str, models_url: str) -> ModelEndpoint:
    return ModelEndpoint(name=model, base_url=models_url, api_key="none", max_retries=0)


def stored_results(localforce_url: str, name: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{localforce_url}/__localforce/results",
        params={"run": name},
        headers=ADMIN_HEADERS,
        timeout=60,
    )
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def by_idx(records: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {record["idx"]: record for record in records}


def test_the_reference_model_scores_one_on_every_type(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    records = run(tasks, localforce_url, models_url, "reference", tmp_path, name="reference")
    assert len(records) == len(tasks)
    assert {record["task"] for record in records} == {task["task"] for task in tasks}
    for record in records:
        assert (record["status"], record["reward"], record["failure"]) == ("answered", 1.0, None)
        assert record["turns"] >= 2 and record["tool_calls"] == record["turns"]
        assert record["tokens_in"] >= 100 * record["turns"] and record["tokens_out"] > 0
        assert record["model"] == "reference"
    stored = stored_results(localforce_url, "reference")
    assert sorted(result["idx"] for result in stored) == sorted(task["idx"] for task in tasks)
    assert all(result["reward"] == 1.0 and result["agent"] == "reference" for result in stored)
    # The episode's tool calls are its trajectory in the results store (the answer is not one).
    first = by_idx(stored)[tasks[0]["idx"]]
    assert len(first["tool_calls"]) == by_idx(records)[tasks[0]["idx"]]["tool_calls"] - 1


def test_the_reference_model_scores_one_through_react(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    reads = [task for task in tasks if task["reward_metric"] != "diff_match"]
    records = run(
        reads, localforce_url, models_url, "reference-react", tmp_path, name="react", agent="react"
    )
    assert {record["task"] for record in records} == {task["task"] for task in reads}
    for record in records:
        assert (record["status"], record["reward"], record["agent"]) == ("answered", 1.0, "react")
        assert record["tool_calls"] == record["turns"] - 1 and record["tool_errors"] == 0
    # What the agent executed went through CRMArena's connector tool.
    stored = stored_results(localforce_url, "react")
    assert {call["tool"] for result in stored for call in result["tool_calls"]} == {
        "issue_soql_query"
    }


def test_guessing_from_the_answer_key_scores_the_baseline(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    records = run(tasks, localforce_url, models_url, "nonsense", tmp_path, name="nonsense")
    for task in tasks:
        record = by_idx(records)[task["idx"]]
        guess = nonsense_answer(tasks, task)
        assert record["answer"] == guess
        assert record["reward"] == score(task, guess, EMPTY_DIFF), task["task"]
    rewards = [record["reward"] for record in records]
    assert 0 < sum(rewards) < len(rewards)  # some guesses are right, most are not


def test_a_faulty_endpoint_is_retried_or_its_episodes_fail_with_a_reason(
    tasks: list[dict[str, Any]],
    localforce_url: str,
    models_url: str,
    models: FakeModels,
    tmp_path: Path,
) -> None:
    chosen = [task for task in tasks if task["reward_metric"] != "diff_match"][:16]
    assert {models.fault_of(task) for task in chosen} == set(FAULTS)
    records = run(
        chosen,
        localforce_url,
        models_url,
        "faulty",
        tmp_path,
        name="faulty",
        concurrency=16,
        timeout=1.5,
    )
    assert len(records) == len(chosen)
    for task in chosen:
        record, fault = by_idx(records)[task["idx"]], models.fault_of(task)
        if fault in ("429_once", "500_once", "slow_once"):  # retried with backoff
            assert (record["status"], record["reward"]) == ("answered", 1.0), fault
        elif fault in ("malformed_arguments", "unknown_tool"):  # a tool error, then on
            assert (record["status"], record["reward"], record["tool_errors"]) == (
                "answered",
                1.0,
                1,
            ), fault
        elif fault == "always_500":
            assert record["status"] == "failed" and record["reward"] == 0.0
            assert record["failure"].startswith("model: InternalServerError"), record["failure"]
        elif fault == "huge_output":
            assert record["status"] == "answered" and len(record["answer"]) == HUGE_CHARS
            assert record["reward"] == score(task, record["answer"], EMPTY_DIFF)
        else:
            assert (record["status"], record["failure"], record["turns"]) == (
                "failed",
                "no answer in 20 turns",
                20,
            )
    stored = stored_results(localforce_url, "faulty")
    assert len(stored) == len(chosen) and all(result["answered_at"] for result in stored)


def test_a_run_with_recorded_episodes_is_not_run_again_without_resume(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    run(tasks[:1], localforce_url, models_url, "nonsense", tmp_path, name="once")
    with pytest.raises(EvalRefused, match="pass --resume"):
        run(tasks[:1], localforce_url, models_url, "nonsense", tmp_path, name="once")


def test_a_resumed_run_recovers_an_unrecorded_answer_and_reruns_an_unanswered_episode(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    chosen = tasks[:3]
    records = run(chosen, localforce_url, models_url, "reference", tmp_path, name="recover")
    run_file = RunFile.of_run(tmp_path, "recover")
    # Killed after its first episode was answered, before the line was written whole...
    kept = [
        line
        for line in run_file.path.read_text().splitlines()
        if f'"idx": {chosen[0]["idx"]},' not in line
    ]
    run_file.path.write_text("\n".join(kept) + '\n{"key": "cut sh')
    # ... and while a fourth episode was under way.
    started = httpx.post(
        f"{localforce_url}/__localforce/episodes",
        headers=ADMIN_HEADERS,
        json={"id": episode_id("recover", tasks[3], 0), "task": tasks[3], "run": "recover"},
        timeout=60,
    )
    assert started.status_code == 201, started.text
    # ... and after a fifth was answered, before its sandbox was deleted or its line written.
    fifth = episode_id("recover", tasks[4], 0)
    control = httpx.Client(base_url=localforce_url, headers=ADMIN_HEADERS, timeout=60)
    body = {"id": fifth, "task": tasks[4], "run": "recover"}
    assert control.post("/__localforce/episodes", json=body).status_code == 201
    answer = {"response": "a guess"}
    assert control.post(f"/__localforce/episodes/{fifth}/answer", json=answer).status_code == 200
    resumed = run(
        tasks[:5], localforce_url, models_url, "reference", tmp_path, name="recover", resume=True
    )
    assert sorted(record["key"] for record in resumed) == sorted(
        f"{task['idx']}:0" for task in tasks[:5]
    )
    assert by_idx(resumed)[tasks[4]["idx"]]["answer"] == "a guess"  # recovered as it was
    assert control.get(f"/__localforce/episodes/{fifth}").json()["sandbox"] is None
    recovered = by_idx(resumed)[chosen[0]["idx"]]
    assert recovered["status"] == "recovered" and recovered["reward"] == 1.0
    assert recovered["tokens_in"] is None
    assert by_idx(resumed)[tasks[3]["idx"]]["status"] == "answered"
    assert by_idx(records)[chosen[1]["idx"]] == by_idx(resumed)[chosen[1]["idx"]]
    stored = stored_results(localforce_url, "recover")
    assert sorted(result["idx"] for result in stored) == sorted(task["idx"] for task in tasks[:5])
    control.close()


def test_a_run_killed_midway_and_resumed_records_each_episode_once(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    task_file = tmp_path / "tasks.json"
    task_file.write_text(json.dumps(tasks))
    command = [
        str(Path(sys.executable).with_name("localforce")), "eval", "--model", "reference",
        "--base-url", models_url, "--tasks", str(task_file), "--run", "killed",
        "--localforce-url", localforce_url, "--runs-dir", str(tmp_path), "--concurrency", "4",
    ]  # fmt: skip
    env = {**os.environ, "LOCALFORCE_ADMIN_KEY": TEST_ADMIN_KEY}
    run_file = RunFile.of_run(tmp_path, "killed")
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while len(run_file.records()) < 3:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert len(run_file.records()) < len(tasks)
    resumed = subprocess.run(
        [*command, "--resume"], env=env, capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr
    keys = [record["key"] for record in run_file.records()]
    assert sorted(keys) == sorted(f"{task['idx']}:0" for task in tasks)
    stored = stored_results(localforce_url, "killed")
    assert sorted(result["idx"] for result in stored) == sorted(task["idx"] for task in tasks)
    assert all(result["reward"] == 1.0 for result in stored)


@pytest.mark.parametrize(("judge", "disagrees"), [("judge-rules", False), ("judge-contrary", True)])
def test_a_judge_grades_beside_the_rules(
    tasks: list[dict[str, Any]],
    localforce_url: str,
    models_url: str,
    tmp_path: Path,
    judge: str,
    disagrees: bool,
) -> None:
    chosen = [task for task in tasks if task["reward_metric"] != "diff_match"]
    name = f"judged-{judge}"
    records = run(chosen, localforce_url, models_url, "verbose", tmp_path, name=name, judge=judge)
    for record in records:
        task = by_idx(chosen)[record["idx"]]
        if task["reward_metric"] == "fuzzy_match":  # token F1: no judge
            assert (record["judge_reward"], record["judge_failure"]) == (None, None)
            continue
        assert record["judge_failure"] is None and record["reward"] == 1.0, record
        # The contrary judge extracts nothing: right only where the answer is None.
        agrees = not disagrees or task["answer"] is None
        assert record["judge_reward"] == (1.0 if agrees else 0.0), record
    judged = [record for record in records if record["judge_reward"] is not None]
    differ = [record for record in judged if record["judge_reward"] != record["reward"]]
    assert judged and bool(differ) == disagrees


def test_a_judge_without_a_verdict_is_recorded_as_its_failure(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    chosen = [task for task in tasks if task["reward_metric"] == "exact_match"][:2]
    records = run(
        chosen,
        localforce_url,
        models_url,
        "nonsense",
        tmp_path,
        name="garbage",
        judge="judge-garbage",
    )
    for record in records:
        if is_single_answer(record["answer"], by_idx(chosen)[record["idx"]]["answer"]):
            continue  # the answer itself: no extraction asked for
        assert record["judge_reward"] is None
        assert record["judge_failure"].startswith("judge: its extraction is not JSON: 'Perhaps.'")


def test_an_interactive_episode_answers_a_simulated_user(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    chosen = [task for task in tasks if task["reward_metric"] != "diff_match"][::2]
    records = run(
        chosen, localforce_url, models_url, "reference", tmp_path, name="talk", user="user-sim"
    )
    assert len(records) == len(chosen)
    for record in records:
        # The agent asked what was needed, the user said it, the agent answered, the user
        # stopped: two replies of the user, and the answer graded is the last one.
        assert (record["status"], record["reward"], record["user_turns"]) == ("answered", 1.0, 2)
        assert record["user_tokens_in"] > 0 and record["user_tokens_out"] > 0


@pytest.mark.parametrize(
    ("content", "arguments", "message"),
    [
        ("{}", [], "is not a task file: a JSON list of task rows (idx, task, ...)"),
        ("[{", [], "is not a task file: Expecting property name"),
        ('[{"idx": 1, "task": "a"}, {"idx": 1, "task": "b"}]', [], "numbers two tasks alike"),
        ('[{"idx": 1, "task": "a"}]', ["--types", "b"], "has no task of type b"),
    ],
)
def test_eval_refuses_what_it_cannot_run(
    tmp_path: Path, content: str, arguments: list[str], message: str
) -> None:
    task_file = tmp_path / "tasks.json"
    task_file.write_text(content)
    command = [
        "eval", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--tasks", str(task_file),
        "--run", "r", "--runs-dir", str(tmp_path), *arguments,
    ]  # fmt: skip
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 1
    assert "Evaluation stopped:" in result.output and message in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        ([], 2, "Evaluation stopped: name the tasks: --split or --tasks"),
        (
            ["--split", "nope@v1:test"],
            1,
            "Evaluation stopped: No split is named nope@v1 (known: crmarena-original@v1, "
            "crmarena-pro-b2b@v1, crmarena-pro-b2c@v1)",
        ),
    ],
)
def test_eval_refuses_a_run_without_its_tasks(
    tmp_path: Path, arguments: list[str], code: int, message: str
) -> None:
    command = [
        "eval", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--run", "r",
        "--runs-dir", str(tmp_path), *arguments,
    ]  # fmt: skip
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == code
    assert message in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("part", "types"), [("crmarena-original@v1:test", 9), ("crmarena-pro-b2b@v1:test", 22)]
)
def test_eval_runs_a_split_part_and_the_reference_model_scores_one_on_each_type(
    localforce_url: str, database_factory: DatabaseFactory, tmp_path: Path, part: str, types: int
) -> None:
    """Each episode on the split's org (the server's is the original org)."""
    if database_factory.backend != "sqlite":
        pytest.skip("the split is drawn by the command, whatever the server's back end")
    rows = [row.to_json() for row in draw_part(part, REPO_ROOT / "seed")]
    chosen = select_tasks(rows, part, per_type=1)
    models = FakeModels(chosen)
    with serve_in_thread(models.app) as port:
        command = [
            "eval", "--model", "reference", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--split", part, "--per-type", "1", "--concurrency", "4", "--run", "split",
            "--runs-dir", str(tmp_path), "--localforce-url", localforce_url,
        ]  # fmt: skip
        result = CliRunner().invoke(cli, command, env={"LOCALFORCE_ADMIN_KEY": TEST_ADMIN_KEY})
    assert result.exit_code == 0, result.output
    records = RunFile.of_run(tmp_path, "split").records()
    assert sorted((r["idx"], r["task"]) for r in records) == [(t["idx"], t["task"]) for t in chosen]
    assert len(records) == types and all(record["reward"] == 1.0 for record in records)


def test_eval_stops_when_localforce_does_not_answer(
    tasks: list[dict[str, Any]], models_url: str, tmp_path: Path
) -> None:
    task_file = tmp_path / "tasks.json"
    task_file.write_text(json.dumps(tasks[:2]))
    command = [
        "eval", "--model", "reference", "--base-url", models_url, "--tasks", str(task_file),
        "--run", "r", "--runs-dir", str(tmp_path), "--localforce-url", "http://127.0.0.1:9",
    ]  # fmt: skip
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 1
    assert "Evaluation stopped: localforce at http://127.0.0.1:9 did not answer" in " ".join(
        result.output.split()
    )
    assert RunFile.of_run(tmp_path, "r").records() == []


def broken_mcp_proxy(target: str) -> FastAPI:
    """localforce as seen through a proxy whose MCP endpoint is down (502)."""
    proxy = FastAPI()
    passed = ("content-type", ADMIN_HEADER.lower(), "authorization")

    @proxy.api_route("/{path:path}", methods=["GET", "POST", "DELETE"])
    async def forward(path: str, request: Request) -> Response:
        if path.startswith("mcp"):
            return Response("upstream down", status_code=502)
        headers = {k: v for k, v in request.headers.items() if k.lower() in passed}
        async with httpx.AsyncClient(timeout=120) as client:
            answer = await client.request(
                request.method,
                f"{target}/{path}",
                params=request.query_params,
                content=await request.body(),
                headers=headers,
            )
        return Response(answer.content, answer.status_code, headers=dict(answer.headers))

    return proxy


def test_a_failing_mcp_endpoint_stops_the_run_scoring_nothing_and_a_resume_runs_it(
    tasks: list[dict[str, Any]], localforce_url: str, models_url: str, tmp_path: Path
) -> None:
    with (
        serve_in_thread(broken_mcp_proxy(localforce_url)) as port,
        pytest.raises(ControlError, match="localforce's MCP endpoint failed"),
    ):
        run(tasks[:3], f"http://127.0.0.1:{port}", models_url, "reference", tmp_path, name="down")
    assert RunFile.of_run(tmp_path, "down").records() == []
    assert all(result["answered_at"] is None for result in stored_results(localforce_url, "down"))
    # Resumed once the endpoint is back: each episode run again, and recorded once.
    resumed = run(
        tasks[:3], localforce_url, models_url, "reference", tmp_path, name="down", resume=True
    )
    assert [record["status"] for record in resumed] == ["answered"] * 3
    stored = stored_results(localforce_url, "down")
    assert sorted(result["idx"] for result in stored) == sorted(task["idx"] for task in tasks[:3])
    assert all(result["answered_at"] for result in stored)
