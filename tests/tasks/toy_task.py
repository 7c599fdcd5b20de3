"""A task type declared in one file, as a newcomer adds one: its draw (the ground truth, read
from the org's database with its own SQL), its reference solver (through the REST API) and its
declaration. Test-only: tests/tasks/test_registry.py registers it for the time of a test."""

from __future__ import annotations

from random import Random
from typing import Any

from sqlalchemy import select

from app.tasks.model import ORIGINAL, WORKFLOW, Api, Draft, OrgData, TaskType
from app.tasks.solving import named_id, quoted

QUERIES = ("Who owns case {case}?", "Which agent is case {case} assigned to?")
POLICY = "Answer with the User Id of the case's owner (OwnerId)."


def draw_case_owner(rng: Random, data: OrgData) -> Draft:
    case = data.tables["Case"]
    rows = data.conn.execute(
        select(case.c.Id, case.c.OwnerId, case.c.CreatedDate).order_by(case.c.Id)
    ).all()
    case_id, owner, created = rng.choice(rows)
    query = rng.choice(QUERIES).format(case=case_id)
    return Draft(owner, query, created.date(), POLICY, "", {"case": case_id})


def solve_case_owner(api: Api, task: dict[str, Any]) -> str:
    case = named_id(task, "500", "case")
    (row,) = api.query(f"SELECT OwnerId FROM Case WHERE Id = {quoted(case)}")
    return str(row["OwnerId"])


TASK_TYPES = (
    TaskType(
        name="case_owner",
        skill=WORKFLOW,
        persona="Service Agent",
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_case_owner,
        solve=solve_case_owner,
        orgs=ORIGINAL,
        external_facing=True,
    ),
)
