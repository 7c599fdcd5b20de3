"""The task types of the report: every type declared in app.tasks (its registry collects them
from their families' modules), with the orgs that draw it, how it is graded, what its agent may
call, and the tests that name it."""

from __future__ import annotations

from typing import Any

from app.console.coverage.sources import TestIndex
from app.tasks.registry import TASK_TYPES


def task_types(tests: TestIndex) -> list[dict[str, Any]]:
    """A row per type name, in the order the task files number them."""
    rows = []
    for name in TASK_TYPES.names():
        kinds = TASK_TYPES.named(name)
        first = kinds[0]  # what a name's declarations share (registry.SHARED)
        rows.append(
            {
                "task": name,
                "personas": list(dict.fromkeys(kind.persona for kind in kinds)),
                "orgs": [org for org in TASK_TYPES.orgs() if any(org in k.orgs for k in kinds)],
                "metric": first.reward_metric,
                "answer_kind": first.answer_kind,
                "writes": first.writes,
                "tools": sorted(first.tools),
                "tests": sorted(case.test_id for case in tests.cases if name in case.strings),
            }
        )
    return rows
