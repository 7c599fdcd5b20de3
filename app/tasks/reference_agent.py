"""A scripted reference agent: it solves a task as an agent must, from the task's words and
metadata alone, through the org's REST API (SOQL), never reading the database or the answer.
It proves a task is solvable and that the query engine agrees with the SQL ground truth.

Each task type declares its script (its `solve`, beside its draw in its family's module;
app.tasks.solving holds what the scripts share). Where a task needs reading, the script
carries a rulebook instead of judgment (app.tasks.rulebook): for policy violations, the lines
the knowledge base's policies (and the issues' stories) count as violations
(`seed/orgs/original/text`); for knowledge QA, which words of an article state the figure each
question asks for. The figures and conversations themselves come from the API."""

from __future__ import annotations

from typing import Any

from app.tasks.model import Api, ForAnotherFamily, NotScripted
from app.tasks.registry import TASK_TYPES


def solve(api: Api, task: dict[str, Any]) -> str:
    """The reference agent's answer to a task it is given (a task row without its answer): by
    its type's script; for a name two families declare, by the first script that takes the
    task as its own orgs'."""
    solvers = list(dict.fromkeys(kind.solve for kind in TASK_TYPES.named(task["task"])))
    if not solvers:
        raise NotScripted(f"{task['task']} is not scripted")
    for solver in solvers[:-1]:
        try:
            return solver(api, task)
        except ForAnotherFamily:
            continue
    return solvers[-1](api, task)
