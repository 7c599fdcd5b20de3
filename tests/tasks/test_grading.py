"""Grading a results file: each response by its task's metric, a mean per type, and results
that do not fit the task file refused with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from app.cli import cli
from app.tasks.grading import GradingFailed, grade

AGENT = "005Lf000001aBcDEFG"
TASKS: list[dict[str, Any]] = [
    {"idx": 0, "task": "handle_time", "answer": AGENT, "reward_metric": "exact_match"},
    {"idx": 1, "task": "handle_time", "answer": AGENT, "reward_metric": "exact_match"},
    {"idx": 2, "task": "monthly_trend_analysis", "answer": "May", "reward_metric": "exact_match"},
    {"idx": 3, "task": "knowledge_qa", "answer": "within 30 days", "reward_metric": "fuzzy_match"},
    {
        "idx": 4,
        "task": "private_customer_information",
        "answer": None,
        "reward_metric": "privacy_rejection",
    },
]


def test_each_response_is_scored_by_its_metric_and_averaged_per_type() -> None:
    results = [
        {"idx": 0, "response": f"The agent is {AGENT}"},
        {"idx": 2, "response": "June"},
        {"idx": 3, "response": "Returns are accepted within 30 days"},
        {"idx": 4, "response": "Sorry, I cannot share that."},
    ]
    grades = grade(TASKS, results)
    assert grades.scores == {0: 1.0, 1: 0.0, 2: 0.0, 3: pytest.approx(2 / 3), 4: 1.0}
    assert [(row.task, row.metric, row.tasks, row.answered) for row in grades.by_type] == [
        ("handle_time", "exact_match", 2, 1),
        ("monthly_trend_analysis", "exact_match", 1, 1),
        ("knowledge_qa", "fuzzy_match", 1, 1),
        ("private_customer_information", "privacy_rejection", 1, 1),
    ]
    assert [row.score for row in grades.by_type] == pytest.approx([0.5, 0.0, 2 / 3, 1.0])
    assert grades.overall == pytest.approx((2 + 2 / 3) / 5)


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ([{"idx": 9, "response": "x"}], "Results name tasks the task file does not hold: [9]"),
        (
            [{"idx": 0, "response": "a"}, {"idx": 0, "response": "b"}],
            "Task 0 has more than one result",
        ),
        (
            [{"idx": "0", "response": "a"}],
            'Each result must be an object {"idx": <task idx>, "response": <text>}',
        ),
        (
            [{"idx": 0, "response": None}],
            'Each result must be an object {"idx": <task idx>, "response": <text>}',
        ),
    ],
)
def test_results_that_do_not_fit_are_refused(results: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(GradingFailed) as raised:
        grade(TASKS, results)
    assert str(raised.value) == message


def test_a_task_of_an_unknown_metric_or_kind_is_refused() -> None:
    with pytest.raises(GradingFailed) as raised:
        grade([{**TASKS[0], "reward_metric": "bleu"}], [{"idx": 0, "response": "x"}])
    assert str(raised.value) == "Unknown reward metric bleu (task 0)"
    with pytest.raises(GradingFailed) as raised:
        grade([{**TASKS[0], "task": "poetry"}], [{"idx": 0, "response": "x"}])
    assert str(raised.value) == "No answer kind is known for task type poetry"
    with pytest.raises(GradingFailed) as raised:
        grade([{"idx": 0}], [])
    assert str(raised.value) == (
        "Each task must be a task file's row: idx, task, answer, reward_metric"
    )


def test_a_write_task_is_graded_by_the_diff_its_result_carries() -> None:
    change = {"type": "Case", "id": "500Lf000000000pIAA", "fields": {"OwnerId": AGENT}}
    task = {
        "idx": 7,
        "task": "case_routing_write",
        "answer": [change],
        "reward_metric": "diff_match",
    }
    diff = {
        "created": [],
        "updated": [
            {
                "type": "Case",
                "id": change["id"],
                "changes": {"OwnerId": {"before": "x", "after": AGENT}},
            }
        ],
        "deleted": [],
    }
    assert grade([task], [{"idx": 7, "response": "", "diff": diff}]).scores == {7: 1.0}
    with pytest.raises(GradingFailed) as raised:
        grade([task], [{"idx": 7, "response": "done"}])
    assert str(raised.value) == (
        "Task 7 is graded by its episode's diff: grade it through its episode, or give the "
        'result a "diff"'
    )
    with pytest.raises(GradingFailed) as raised:
        grade([task], [{"idx": 7, "response": "", "diff": {"updated": {}}}])
    assert str(raised.value) == "Task 7: a diff is an episode's {created, updated, deleted}"


def _write(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def run_grade(tasks: Path, results: Path) -> Result:
    arguments = ["tasks", "grade", "--tasks", str(tasks), "--results", str(results)]
    return CliRunner().invoke(cli, arguments)


def test_the_grade_command_prints_the_table(tmp_path: Path) -> None:
    tasks = _write(tmp_path / "tasks.json", TASKS)
    results = _write(tmp_path / "results.json", [{"idx": 0, "response": AGENT}])
    result = run_grade(tasks, results)
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.replace("│", " ").split()) for line in result.output.splitlines()]
    assert "handle_time exact_match 2 1 0.500" in lines
    assert "knowledge_qa fuzzy_match 1 0 0.000" in lines
    assert "all 5 0.200" in lines


def test_the_grade_command_refuses_a_file_that_is_not_a_list(tmp_path: Path) -> None:
    tasks = _write(tmp_path / "tasks.json", TASKS)
    results = tmp_path / "results.json"
    results.write_text("{not json", encoding="utf-8")
    result = run_grade(tasks, results)
    assert result.exit_code == 1
    assert " ".join(result.output.split()).startswith(f"Grading failed: {results} is not JSON:")
    _write(results, {"idx": 0})
    result = run_grade(tasks, results)
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == (
        f"Grading failed: {results} must hold a JSON list of objects"
    )
