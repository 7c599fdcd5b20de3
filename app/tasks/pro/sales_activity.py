"""The Pro orgs' activity reasoning (crmarena.md 5.2): Activity Priority. An open opportunity's
'Not Started' tasks that belong to another stage than the one it is in are the ones to set
aside; the answer lists their Ids, or is None when every task fits.

Which stage a task belongs to is read from its subject (the kinds of task each stage calls
for); the answer is computed from the data and checked against the tasks the generator
planted."""

from __future__ import annotations

from random import Random

from app.tasks import org_sql
from app.tasks.model import (
    Ambiguous,
    Draft,
    NoAnswer,
    OrgData,
    PlantedTruthDisagrees,
    TaskType,
)
from app.tasks.rulebook import stages_of_subject

PERSONA = "Sales Manager"
STRAY_SHARE = 0.7  # of the drawn opportunities, those with tasks of another stage

PRIORITY_QUERIES = (
    "Which of opportunity {deal}'s open tasks do not fit the stage it is in?",
    "Review the Not Started tasks of opportunity {deal}: which belong to another stage?",
    "Opportunity {deal} has tasks waiting. Which of them should be set aside as off-stage?",
)
PRIORITY_POLICY = (
    "A task fits an opportunity when it is a task of the opportunity's current stage "
    "(StageName); the knowledge base describes what happens in each stage. Answer with the "
    "Ids of the opportunity's Not Started tasks that belong to another stage, or None if all "
    "of them fit."
)


def off_stage_tasks(org: str, stage: str, tasks: list[tuple[str, str]]) -> list[str]:
    """The Ids of the tasks whose subject is a task of another stage than `stage`."""
    stray = []
    for task_id, subject in tasks:
        stages = stages_of_subject(org, subject)
        if len(stages) != 1:
            raise Ambiguous  # a subject the texts do not place in one stage
        if stages.pop() != stage:
            stray.append(task_id)
    return sorted(stray)


def draw_activity_priority(rng: Random, data: OrgData) -> Draft:
    truth = data.pro_truth()
    planted, wrong = truth.stray_tasks, truth.wrong_stages
    deals = org_sql.open_deals_with_pending_tasks(data.conn, data.tables)
    with_stray = [deal for deal in deals if deal in planted]
    pool = (
        with_stray
        if rng.random() < STRAY_SHARE
        else [deal for deal in deals if deal not in planted and deal not in wrong]
    )
    if not pool:
        raise NoAnswer
    deal = rng.choice(pool)
    stage, tasks = org_sql.deal_stage_and_pending_tasks(data.conn, data.tables, deal)
    stray = off_stage_tasks(data.org, stage, tasks)
    if stray != sorted(planted.get(deal, [])):
        raise PlantedTruthDisagrees(f"opportunity {deal}: the data gives {stray}")
    answer = stray or None
    _, last = org_sql.day_span(data.conn, data.tables, "Task", "CreatedDate")
    query = rng.choice(PRIORITY_QUERIES).format(deal=deal)
    params = {"deal": deal, "org": data.org}
    return Draft(answer, query, last, PRIORITY_POLICY, "", params)


TASK_TYPES = (TaskType("activity_priority", PERSONA, "exact_match", draw_activity_priority),)
