"""Baseline agents, for the chance level a grader must put real agents above: one that answers
nothing, and one that answers at random with an answer some task of the same type has."""

from __future__ import annotations

from collections.abc import Sequence
from random import Random
from typing import Any


def do_nothing(task: dict[str, Any]) -> str:
    return ""


class RandomAnswers:
    """Answers drawn from the answers of a task set, type by type (the answer key's own
    distribution: what guessing without reading the org scores)."""

    def __init__(self, tasks: Sequence[dict[str, Any]], seed: int) -> None:
        self.rng = Random(f"localforce-random-agent/{seed}")
        self.answers: dict[str, list[str]] = {}
        for task in tasks:
            self.answers.setdefault(task["task"], []).append(str(task["answer"]))

    def __call__(self, task: dict[str, Any]) -> str:
        return self.rng.choice(self.answers.get(task["task"], [""]))
