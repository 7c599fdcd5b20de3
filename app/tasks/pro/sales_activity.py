"""The Pro orgs' activity reasoning (crmarena.md 5.2).

- Activity Priority: an open opportunity's 'Not Started' tasks that belong to another stage
  than the one it is in are the ones to set aside; the answer lists their Ids, or is None when
  every task fits.
- Wrong Stage Rectification: the stage an open opportunity's activity shows, when its
  StageName lags behind it, or None when StageName is right.

Which stage an activity belongs to is read from its words (the kinds of task, meeting, e-mail
and call each stage calls for); answers are computed from the data and checked against what
the generator planted."""

from __future__ import annotations

from datetime import date
from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    ABSTAIN_SHARE,
    PRO,
    TEXT,
    Ambiguous,
    Api,
    Draft,
    NoAnswer,
    NotScripted,
    OrgData,
    PlantedTruthDisagrees,
    TaskType,
)
from app.tasks.rulebook import DealActivity, stage_order, stage_shown, stages_of_subject
from app.tasks.solving import named_id, org_of, quoted

PERSONA = "Sales Manager"

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
        if rng.random() >= ABSTAIN_SHARE
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


RECTIFY_QUERIES = (
    "Is opportunity {deal} in the right stage? If not, which stage should it be in?",
    "Check the stage of opportunity {deal} against its activity. What should it be?",
    "The stage of opportunity {deal} may be out of date. Which stage is it really in?",
)
RECTIFY_POLICY = (
    "An opportunity is in the latest stage its activity shows: its tasks (those not started "
    "aside), events, e-mails and calls, each of a kind the knowledge base places in a stage; an "
    "opportunity with a quote is at least in the Quote stage. Answer with the stage the "
    "opportunity should be in, or None if its StageName is right."
)


def deal_to_rectify(rng: Random, data: OrgData) -> tuple[str, str, str, date]:
    """An open opportunity, one whose StageName lags behind its activity but for ABSTAIN_SHARE
    of the draws: (its Id, its StageName, the stage its activity shows, the day of its latest
    activity)."""
    wrong = data.pro_truth().wrong_stages
    # The stages a deal can be recorded in while its activity shows a later, open one.
    stages = stage_order(data.org)[:-2]
    deals = org_sql.open_deals_in_stages(data.conn, data.tables, stages)
    lagging = [deal for deal in deals if deal in wrong]
    if len(lagging) != len(wrong):
        missing = sorted(set(wrong) - set(lagging))[:3]
        raise PlantedTruthDisagrees(
            f"opportunities planted in a wrong stage are not open: {missing}"
        )
    right = [deal for deal in deals if deal not in wrong]
    deal = rng.choice(right if rng.random() < ABSTAIN_SHARE else lagging)
    recorded, activity = org_sql.deal_activity(data.conn, data.tables, deal)
    shown = stage_shown(data.org, activity)
    if shown is None:
        raise Ambiguous  # nothing in its activity tells a stage
    if deal in wrong and shown == recorded:
        raise Ambiguous  # its activity does not (yet) show the stage it moved on to
    if deal in wrong and shown != wrong[deal]:
        raise PlantedTruthDisagrees(
            f"opportunity {deal}'s activity shows {shown}, not {wrong[deal]}"
        )
    if deal not in wrong and shown != recorded:
        raise Ambiguous  # its activity does not (yet) show the stage it is in
    return deal, recorded, shown, org_sql.deal_last_activity_day(data.conn, data.tables, deal)


def draw_wrong_stage(rng: Random, data: OrgData) -> Draft:
    deal, recorded, shown, today = deal_to_rectify(rng, data)
    answer = None if shown == recorded else shown
    query = rng.choice(RECTIFY_QUERIES).format(deal=deal)
    params = {"deal": deal, "org": data.org}
    return Draft(answer, query, today, RECTIFY_POLICY, "", params)


# --- the reference solvers --------------------------------------------------------------------


def solve_activity_priority(api: Api, task: dict[str, Any]) -> str:
    deal = quoted(named_id(task, "006", "opportunity"))
    (opportunity,) = api.query(f"SELECT StageName FROM Opportunity WHERE Id = {deal}")
    tasks = [
        (row["Id"], row["Subject"] or "")
        for row in api.query(
            f"SELECT Id, Subject FROM Task WHERE WhatId = {deal} AND Status = 'Not Started'"
        )
    ]
    stray = off_stage_tasks(org_of(api), opportunity["StageName"], tasks)
    return ", ".join(stray) if stray else "None"


def stages_read(api: Api, deal_id: str) -> tuple[str, str]:
    """The opportunity's StageName, and the stage its activity shows, read through the API."""
    deal = quoted(deal_id)
    (opportunity,) = api.query(f"SELECT StageName FROM Opportunity WHERE Id = {deal}")

    def texts(field: str, sobject: str, where: str) -> list[str]:
        rows = api.query(f"SELECT {field} FROM {sobject} WHERE {where}")
        return [row[field] or "" for row in rows]

    activity = DealActivity(
        task_subjects=texts("Subject", "Task", f"WhatId = {deal} AND Status != 'Not Started'"),
        event_subjects=texts("Subject", "Event", f"WhatId = {deal}"),
        email_subjects=texts("Subject", "EmailMessage", f"RelatedToId = {deal}"),
        call_transcripts=texts("Body__c", "VoiceCallTranscript__c", f"OpportunityId__c = {deal}"),
        has_quote=bool(api.query(f"SELECT Id FROM Quote WHERE OpportunityId = {deal}")),
    )
    shown = stage_shown(org_of(api), activity)
    if shown is None:
        raise NotScripted("the opportunity's activity shows no stage")
    return opportunity["StageName"], shown


def solve_wrong_stage(api: Api, task: dict[str, Any]) -> str:
    recorded, shown = stages_read(api, named_id(task, "006", "opportunity"))
    return "None" if shown == recorded else shown


TASK_TYPES = (
    TaskType(
        name="activity_priority",
        skill=TEXT,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_activity_priority,
        solve=solve_activity_priority,
        orgs=PRO,
    ),
    TaskType(
        name="wrong_stage_rectification",
        skill=TEXT,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="stages",
        draw=draw_wrong_stage,
        solve=solve_wrong_stage,
        orgs=PRO,
    ),
)
