"""Grading a results file against a task file: each response scored by its task's reward metric,
and a table of mean scores per task type."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.errors import SalesforceError
from app.tasks import metrics
from app.tasks.judge import Judge
from app.tasks.registry import answer_kind


class GradingFailed(SalesforceError):
    error_code = "INVALID_INPUT"
    status_code = 400


def score(
    task: Mapping[str, Any],
    response: str,
    diff: Mapping[str, Any] | None = None,
    judge: Judge | None = None,
) -> float:
    """One response's reward under its task's metric; a write task's from its episode's diff;
    a refusal's by the LLM judge when one is given, else by rules."""
    metric, gold = task["reward_metric"], task["answer"]
    if metric == "diff_match":
        if diff is None:
            raise GradingFailed(
                f"Task {task['idx']} is graded by its episode's diff: grade it through its "
                'episode, or give the result a "diff"'
            )
        return metrics.diff_match(diff, gold)
    if metric == "exact_match":
        kind = answer_kind(task["task"])  # as its type declares it (crmarena.md 5.1, 5.2)
        if kind is None:
            raise GradingFailed(f"No answer kind is known for task type {task['task']}")
        return metrics.exact_match(response, gold, kind)
    if metric == "fuzzy_match":
        return metrics.fuzzy_match(response, gold)
    if metric == "privacy_rejection":
        if judge is not None:
            return 1.0 if judge.refused(str(task.get("query", "")), response) else 0.0
        return metrics.privacy_rejection(response)
    raise GradingFailed(f"Unknown reward metric {metric} (task {task['idx']})")


@dataclass(frozen=True)
class TypeScore:
    task: str
    metric: str
    tasks: int
    answered: int
    score: float  # the mean reward over the type's tasks, an unanswered one scoring 0


@dataclass(frozen=True)
class Grades:
    scores: dict[int, float]  # task idx -> reward
    by_type: list[TypeScore]

    @property
    def overall(self) -> float:
        return sum(self.scores.values()) / len(self.scores) if self.scores else 0.0


@dataclass(frozen=True)
class Result:
    response: str
    diff: Mapping[str, Any] | None  # a write task's episode diff, as its answer call returned


def results_by_idx(results: Sequence[Mapping[str, Any]]) -> dict[int, Result]:
    """A results file's entries: a list of {"idx": N, "response": "...", "diff"?: {...}}."""
    found: dict[int, Result] = {}
    for entry in results:
        idx, response, diff = entry.get("idx"), entry.get("response"), entry.get("diff")
        if not isinstance(idx, int) or isinstance(idx, bool) or not isinstance(response, str):
            raise GradingFailed(
                'Each result must be an object {"idx": <task idx>, "response": <text>}'
            )
        if diff is not None and not _is_diff(diff):
            raise GradingFailed(f"Task {idx}: a diff is an episode's {{created, updated, deleted}}")
        if idx in found:
            raise GradingFailed(f"Task {idx} has more than one result")
        found[idx] = Result(response, diff)
    return found


def _is_diff(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(key, []), list) for key in ("created", "updated", "deleted")
    )


TASK_KEYS = ("idx", "task", "answer", "reward_metric")


def grade(
    tasks: Sequence[Mapping[str, Any]],
    results: Sequence[Mapping[str, Any]],
    judge: Judge | None = None,
) -> Grades:
    for task in tasks:
        if any(key not in task for key in TASK_KEYS) or not isinstance(task["idx"], int):
            raise GradingFailed(
                "Each task must be a task file's row: idx, task, answer, reward_metric"
            )
    responses = results_by_idx(results)
    known = {task["idx"] for task in tasks}
    stray = sorted(set(responses) - known)
    if stray:
        raise GradingFailed(f"Results name tasks the task file does not hold: {stray[:5]}")
    scores = {
        task["idx"]: score(task, responses[idx].response, responses[idx].diff, judge)
        if (idx := task["idx"]) in responses
        else 0.0
        for task in tasks
    }
    order: dict[str, list[Mapping[str, Any]]] = {}
    for task in tasks:
        order.setdefault(task["task"], []).append(task)
    by_type = [
        TypeScore(
            task=name,
            metric=group[0]["reward_metric"],
            tasks=len(group),
            answered=sum(1 for task in group if task["idx"] in responses),
            score=sum(scores[task["idx"]] for task in group) / len(group),
        )
        for name, group in order.items()
    ]
    return Grades(scores=scores, by_type=by_type)
