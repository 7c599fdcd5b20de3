"""Episodes over a real server on both back ends: made from a task row or a task file's idx,
with the clock at the task's today; answers graded with the sandbox's diff and call log;
deleted with their sandbox; bad bodies refused in Salesforce's error format; many at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.tasks.episodes import TOOLS, InvalidTask, task_from_file
from tests.conftest import ADMIN_HEADERS, API
from tests.tasks.original_tasks import original_tasks

EPISODES = "/__localforce/episodes"


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    return original_tasks(seeded_template, per_type=1)


def of_type(tasks: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(task for task in tasks if task["task"] == name)


@pytest.fixture
def control(task_base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=task_base_url, headers=ADMIN_HEADERS, timeout=60) as client:
        yield client


def start(control: httpx.Client, **body: Any) -> dict[str, Any]:
    response = control.post(EPISODES, json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_an_episode_gives_the_task_without_its_answer_and_a_clock_at_its_today(
    control: httpx.Client, task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    task = of_type(tasks, "top_issue_identification")
    made = start(control, task=task, id="ep-shape")
    assert list(made) == [
        "id",
        "prompt",
        "metadata",
        "task",
        "tools",
        "instance_url",
        "access_token",
        "username",
        "password",
        "sandbox",
    ]
    assert made["id"] == "ep-shape"
    assert made["prompt"] == task["query"]
    assert made["metadata"] == task["metadata"]
    assert made["task"] == {key: value for key, value in task.items() if key != "answer"}
    # A read task's tools: the queries and the answer, no write.
    read_tools = ["soql_query", "sosl_search", "respond"]
    assert [tool["name"] for tool in made["tools"]] == read_tools
    assert made["tools"] == [tool for tool in TOOLS if tool["name"] in read_tools]
    assert made["instance_url"] == task_base_url
    assert made["username"].endswith(".ep-shape")
    # The episode's user logs in with the password given here, and only here.
    form = {"grant_type": "password", "username": made["username"], "password": made["password"]}
    assert control.post("/services/oauth2/token", data=form).status_code == 200
    assert made["password"] not in control.get(f"{EPISODES}/ep-shape").text
    today = task["metadata"]["required"].split("\n")[0].removeprefix("Today's date: ")
    assert made["sandbox"]["clock"]["mode"] == "pinned"
    assert made["sandbox"]["clock"]["start"] == made["sandbox"]["clock"]["now"]
    assert made["sandbox"]["clock"]["start"] == f"{today}T12:00:00Z"
    headers = {"Authorization": f"Bearer {made['access_token']}"}
    sf = httpx.Client(base_url=task_base_url, headers=headers)
    answer = sf.get(
        f"{API}/query", params={"q": "SELECT COUNT() FROM Case WHERE CreatedDate < TODAY"}
    )
    assert answer.status_code == 200
    shown = control.get(f"{EPISODES}/ep-shape").json()
    result = shown.pop("result")
    assert shown == {
        "id": "ep-shape",
        "prompt": task["query"],
        "metadata": task["metadata"],
        "task": made["task"],
        "tools": made["tools"],
        "sandbox": made["sandbox"],
    }
    # The operator's view holds the expected answer; unanswered, no reward yet.
    assert result["expected"] == task["answer"]
    assert (result["answer"], result["reward"], result["answered_at"]) == (None, None, None)


def test_the_answer_is_graded_with_the_sandboxs_diff_and_call_log(
    control: httpx.Client, task_base_url: str, tasks: list[dict[str, Any]]
) -> None:
    task = of_type(tasks, "case_routing")
    made = start(control, task=task, id="ep-graded")
    headers = {"Authorization": f"Bearer {made['access_token']}"}
    sf = httpx.Client(base_url=task_base_url, headers=headers)
    issues = sf.get(f"{API}/query", params={"q": "SELECT Id FROM Issue__c LIMIT 1"}).json()
    issue = issues["records"][0]["Id"]
    assert sf.patch(f"{API}/sobjects/Issue__c/{issue}", json={"Name": "Renamed"}).status_code == 204
    right = control.post(f"{EPISODES}/ep-graded/answer", json={"response": task["answer"]})
    assert right.status_code == 200, right.text
    graded = right.json()
    assert list(graded) == ["id", "reward", "metric", "response", "done", "diff", "calls"]
    assert graded["reward"] == 1.0
    assert graded["metric"] == "exact_match"
    assert graded["done"] is True
    assert [change["id"] for change in graded["diff"]["updated"]] == [issue]
    assert graded["diff"]["created"] == graded["diff"]["deleted"] == []
    assert [call["method"] for call in graded["calls"]] == ["GET", "PATCH"]
    # The first answer is final: another is refused and changes nothing.
    wrong = control.post(f"{EPISODES}/ep-graded/answer", json={"response": "005000000000000AAA"})
    assert wrong.status_code == 409
    assert wrong.json() == [
        {
            "message": "Episode ep-graded has ended: it was answered, and its first answer is "
            "final. It takes no other answer, reset, restore or tool call; start another "
            "episode.",
            "errorCode": "EPISODE_ENDED",
        }
    ]
    kept = control.get(f"{EPISODES}/ep-graded").json()["result"]
    assert (kept["reward"], kept["answer"], kept["channel"]) == (1.0, task["answer"], "rest")
    # The episode's token ended with it.
    assert sf.get(f"{API}/limits").status_code == 401


def test_a_task_is_named_by_its_idx_in_the_servers_task_file(
    control: httpx.Client, tasks: list[dict[str, Any]]
) -> None:
    task = tasks[3]
    made = start(control, task=task["idx"], id="ep-by-idx")
    assert made["prompt"] == task["query"]
    graded = control.post(f"{EPISODES}/ep-by-idx/answer", json={"response": str(task["answer"])})
    assert graded.json()["reward"] == 1.0
    assert control.get(f"{EPISODES}/ep-by-idx").json()["result"]["expected"] == task["answer"]
    missing = control.post(EPISODES, json={"task": 999})
    assert missing.status_code == 400
    assert missing.json()[0]["errorCode"] == "INVALID_INPUT"
    assert missing.json()[0]["message"].startswith("task: no task has idx 999 in ")


def test_deleting_an_episode_deletes_its_sandbox_and_keeps_its_result(
    control: httpx.Client, tasks: list[dict[str, Any]]
) -> None:
    start(control, task=tasks[0], id="ep-gone", run="deleting")
    answered = control.post(f"{EPISODES}/ep-gone/answer", json={"response": "x"})
    assert answered.status_code == 200
    assert control.delete(f"{EPISODES}/ep-gone").status_code == 204
    assert control.get("/__localforce/sandboxes/ep-gone").status_code == 404
    shown = control.get(f"{EPISODES}/ep-gone").json()
    assert shown["sandbox"] is None
    assert shown["result"]["answer"] == "x"
    assert shown["result"]["reward"] == answered.json()["reward"]
    assert control.delete(f"{EPISODES}/ep-gone").status_code == 204  # its sandbox is gone
    ended = control.post(f"{EPISODES}/ep-gone/answer", json={"response": "y"})
    assert ended.status_code == 409
    assert ended.json()[0]["errorCode"] == "EPISODE_ENDED"
    # Only an explicit purge removes a result.
    assert control.delete("/__localforce/results/ep-gone").status_code == 204
    for response in (
        control.get(f"{EPISODES}/ep-gone"),
        control.delete(f"{EPISODES}/ep-gone"),
        control.post(f"{EPISODES}/ep-gone/answer", json={"response": "x"}),
        control.delete("/__localforce/results/ep-gone"),
    ):
        assert response.status_code == 404
        assert response.json() == [
            {"message": "No episode has the id ep-gone", "errorCode": "NOT_FOUND"}
        ]


def test_an_id_in_use_or_with_a_kept_result_is_refused(
    control: httpx.Client, tasks: list[dict[str, Any]]
) -> None:
    start(control, task=tasks[0], id="ep-twice")
    taken = control.post(EPISODES, json={"task": tasks[0], "id": "ep-twice"})
    assert taken.status_code == 409
    assert taken.json()[0]["errorCode"] == "DUPLICATE_VALUE"
    # The sandbox deleted on its own leaves the episode's result: the id stays taken...
    assert control.delete("/__localforce/sandboxes/ep-twice").status_code == 204
    kept = control.post(EPISODES, json={"task": tasks[1], "id": "ep-twice"})
    assert kept.status_code == 409
    assert kept.json() == [
        {
            "message": "An episode with id ep-twice has a result kept: choose another id, or "
            "purge it first (DELETE /__localforce/results/ep-twice)",
            "errorCode": "DUPLICATE_VALUE",
        }
    ]
    assert control.get("/__localforce/sandboxes/ep-twice").status_code == 404
    # ... until it is purged.
    assert control.delete("/__localforce/results/ep-twice").status_code == 204
    again = start(control, task=tasks[1], id="ep-twice")
    assert again["prompt"] == tasks[1]["query"]


BAD_TASKS = [
    (
        {
            "idx": 1,
            "task": "case_routing_write",
            "query": "q",
            "reward_metric": "diff_match",
            "metadata": {},
            "answer": "005Lf0000000019IAA",
        },
        'task.answer: a write task\'s answer lists its changes, [{"type", "id", "fields"}]',
    ),
    ({"idx": 1}, "task.task: missing, or not a JSON str"),
    ({"idx": "1", "task": "x"}, "task.idx: missing, or not a JSON int"),
    ({"idx": True, "task": "x"}, "task.idx: missing, or not a JSON int"),
    (
        {
            "idx": 1,
            "task": "handle_time",
            "query": "q",
            "reward_metric": "exact_match",
            "metadata": {},
        },
        "task.answer: missing (null if the task has none)",
    ),
    (
        {
            "idx": 1,
            "task": "handle_time",
            "query": "q",
            "reward_metric": "bleu",
            "metadata": {},
            "answer": None,
        },
        "task.reward_metric: one of exact_match, fuzzy_match, privacy_rejection, diff_match",
    ),
    (
        {
            "idx": 1,
            "task": "poetry",
            "query": "q",
            "reward_metric": "exact_match",
            "metadata": {},
            "answer": None,
        },
        "task.task: no exact-match answer kind for poetry",
    ),
    (
        {
            "idx": 1,
            "task": "knowledge_qa",
            "query": "q",
            "reward_metric": "fuzzy_match",
            "metadata": {"required": 5},
            "answer": "x",
        },
        "task.metadata: required and optional are text",
    ),
    (
        {
            "idx": 1,
            "task": "knowledge_qa",
            "query": "q",
            "reward_metric": "fuzzy_match",
            "metadata": {"required": "Today's date: 2024-02-30"},
            "answer": "x",
        },
        "task.metadata.required: day is out of range for month",
    ),
    *(
        (
            {
                "idx": 1,
                "task": "knowledge_qa",
                "query": "q",
                "reward_metric": "fuzzy_match",
                "metadata": {},
                "answer": "x",
                "seed": seed,
            },
            "task.seed: the org's seed, a whole number within +/-9007199254740991",
        )
        for seed in ("43", 4.5, True, 2**53)
    ),
]


@pytest.mark.parametrize(("task", "message"), BAD_TASKS)
def test_a_task_that_is_not_a_task_row_is_refused(
    control: httpx.Client, task: dict[str, Any], message: str
) -> None:
    response = control.post(EPISODES, json={"task": task})
    assert response.status_code == 400
    assert response.json() == [{"message": message, "errorCode": "INVALID_INPUT"}]


NOT_A_TASK = (
    "Bad request: body.task.dict[str,any]: Input should be a valid dictionary; "
    "body.task.int: Input should be a valid integer"
)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "Bad request: body.task: Field required"),
        ({"task": "5"}, NOT_A_TASK),
        ({"task": True}, NOT_A_TASK),
        ({"task": [1]}, NOT_A_TASK),
        ({"task": 1, "x": 2}, "Bad request: body.x: Extra inputs are not permitted"),
    ],
)
def test_a_body_without_a_task_is_refused(
    control: httpx.Client, body: dict[str, Any], message: str
) -> None:
    response = control.post(EPISODES, json=body)
    assert response.status_code == 400
    assert response.json() == [{"message": message, "errorCode": "INVALID_INPUT"}]


def test_an_answer_must_be_text(control: httpx.Client, tasks: list[dict[str, Any]]) -> None:
    start(control, task=tasks[0], id="ep-text")
    response = control.post(f"{EPISODES}/ep-text/answer", json={"response": 5})
    assert response.status_code == 400
    message = "Bad request: body.response: Input should be a valid string"
    assert response.json() == [{"message": message, "errorCode": "INVALID_INPUT"}]


@pytest.mark.asyncio
async def test_many_episodes_at_once(task_base_url: str, tasks: list[dict[str, Any]]) -> None:
    async with httpx.AsyncClient(
        base_url=task_base_url, headers=ADMIN_HEADERS, timeout=120
    ) as control:

        async def one(index: int) -> float:
            task = tasks[index % len(tasks)]
            made = await control.post(EPISODES, json={"task": task, "id": f"ep-many-{index}"})
            assert made.status_code == 201, made.text
            graded = await control.post(
                f"{EPISODES}/ep-many-{index}/answer", json={"response": str(task["answer"])}
            )
            assert graded.status_code == 200, graded.text
            gone = await control.delete(f"{EPISODES}/ep-many-{index}")
            assert gone.status_code == 204
            return float(graded.json()["reward"])

        rewards = await asyncio.gather(*(one(index) for index in range(16)))
    exact = [tasks[i % len(tasks)]["reward_metric"] == "exact_match" for i in range(16)]
    assert all(reward == 1.0 for reward, is_exact in zip(rewards, exact, strict=True) if is_exact)


def test_a_task_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(InvalidTask) as raised:
        task_from_file(None, 1)
    assert str(raised.value) == (
        "task: an idx needs the server's task file (LOCALFORCE_TASK_FILE); send the task row "
        "itself instead"
    )
    broken = tmp_path / "tasks.json"
    broken.write_text("[", encoding="utf-8")
    with pytest.raises(InvalidTask) as raised:
        task_from_file(broken, 1)
    assert str(raised.value).startswith(f"The task file {broken} cannot be read: ")
