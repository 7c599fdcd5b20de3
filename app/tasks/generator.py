"""The task generator: K tasks of each type an org has, drawn from the org's data, each with the
answer its ground truth computes, numbered and written as CRMArena's task file.

Each type draws from its own random stream (seeded by org, seed and type), so adding a type
or drawing more of one leaves the others' tasks as they were. A draw that the data leaves
ambiguous, or without an answer, is not emitted; a type that cannot find K tasks it can emit
fails the generation instead of writing fewer."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from random import Random

from sqlalchemy import Engine

from app.storage.tables import TableSet
from app.tasks.model import (
    Draft,
    DrawRejected,
    NotPlanted,
    OrgData,
    TaskGenerationFailed,
    TaskRow,
    TaskType,
    pro_answer,
    required_text,
)
from app.tasks.registry import TASK_TYPES


def task_types(org: str) -> Sequence[TaskType]:
    """The types drawn in `org`, in the order its task file numbers them (app.tasks.registry)."""
    kinds = TASK_TYPES.of_org(org)
    if not kinds:
        known = ", ".join(sorted(TASK_TYPES.orgs()))
        raise TaskGenerationFailed(f"No task types are defined for org {org} (known: {known})")
    return kinds


def draw_drafts(
    data: OrgData, task_type: TaskType, seed: int, count: int, *, exact: bool = True
) -> list[Draft]:
    """`count` drafts of one type, each with a single answer, no two drawn from the same
    parameters (worded differently, they would still be one task); with `exact` False, as
    many as the org offers up to `count`."""
    rng = Random(f"localforce-tasks/{data.org}/{seed}/{task_type.name}")
    drafts: list[Draft] = []
    seen: set[str] = set()
    for _ in range(count * task_type.draws_per_task):
        if len(drafts) == count:
            break
        try:
            draft = task_type.draw(rng, data)
        except DrawRejected:
            continue
        key = repr(sorted(draft.params.items()))
        if key not in seen:
            seen.add(key)
            drafts.append(draft)
    if len(drafts) < count and exact:
        raise TaskGenerationFailed(
            f"Only {len(drafts)} of {count} {task_type.name} tasks, each distinct and with a "
            f"single answer, could be drawn from org {data.org} (seed {seed}): ask for fewer"
        )
    return drafts


def task_row(
    idx: int, task_type: TaskType, draft: Draft, org: str, seed: int | None = None
) -> TaskRow:
    """The row of a draft: the original org's answer as CRMArena's rows hold it (a string or
    None), a Pro org's as CRMArena-Pro's (a list); `seed` names the org's seed in the row,
    where a task file holds tasks of several."""
    return TaskRow(
        idx=idx,
        task=task_type.name,
        persona=task_type.persona,
        answer=draft.answer if org == "original" else pro_answer(draft.answer),
        required=required_text(draft.today, draft.policy),
        optional=draft.optional,
        reward_metric=task_type.reward_metric,
        query=draft.query,
        seed=seed,
    )


def generate_tasks(
    engine: Engine,
    tables: TableSet,
    *,
    org: str,
    seed: int,
    per_type: int,
    planted: bool = True,
    exact: bool = True,
) -> list[TaskRow]:
    """`per_type` tasks of every type of `org` (with `exact` False, up to `per_type`),
    numbered from 0 in type order. For an imported org (`planted` False), the types whose
    answers the generator planted are left out."""
    drawn: list[tuple[TaskType, Draft]] = []
    with engine.connect() as conn:
        data = OrgData(conn=conn, tables=tables, org=org, seed=seed, planted=planted)
        for kind in task_types(org):
            try:
                drawn += [
                    (kind, draft) for draft in draw_drafts(data, kind, seed, per_type, exact=exact)
                ]
            except NotPlanted:
                continue
    return [task_row(idx, kind, draft, org) for idx, (kind, draft) in enumerate(drawn)]


def task_file_text(rows: Sequence[TaskRow]) -> str:
    """The task file: a JSON array of rows, as CRMArena's `crmarena_w_metadata.json`."""
    return json.dumps([row.to_json() for row in rows], indent=2, ensure_ascii=False) + "\n"


def write_task_file(rows: Sequence[TaskRow], path: Path) -> None:
    path.write_text(task_file_text(rows), encoding="utf-8")
