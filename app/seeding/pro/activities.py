"""What happened along each deal and lead: Task, Event, VoiceCallTranscript__c and the
deals' EmailMessage threads.

Every activity belongs to a stage the deal actually went through, and its words are that
stage's (qualifying questions, discovery, quotes, negotiation, signature). Tasks of stages
already behind the deal are done; the current stage's are open. So the activity tells the true
stage even where the deal's StageName is wrong (wrong_stage_rectification), and a 'Not
Started' task of another stage stands out (activity_priority: a few are injected).

A lead's calls cover the four BANT factors (budget, authority, need, timeline): each factor
is stated as met or not met, as the lead's latent qualification says (lead_qualification).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, time, timedelta
from random import Random
from typing import Any

from app.seeding.generate.conversations import email_record
from app.seeding.generate.records import Record
from app.seeding.generate.sampling import between, spaced_times, spread
from app.seeding.generate.text import fill, load_text
from app.seeding.pro.catalog import Catalog
from app.seeding.pro.people import People
from app.seeding.pro.profile import LAST_DAY, NOW, STAGES, OrgProfile
from app.seeding.pro.sales import BANT, CLOSED, DealPlan, LeadPlan, Sales

MAX_TASKS, MAX_EVENTS, MAX_CALLS, MAX_EMAILS, MAX_LEAD_CALLS = 12, 3, 8, 12, 4
OPEN_STATUSES, OPEN_WEIGHTS = ("Not Started", "In Progress", "Waiting"), (0.6, 0.3, 0.1)


@dataclass
class Activities:
    tasks: list[Record] = field(default_factory=list)
    events: list[Record] = field(default_factory=list)
    calls: list[Record] = field(default_factory=list)
    emails: list[Record] = field(default_factory=list)  # without Ids: numbered with the cases'
    stray_tasks: dict[str, list[str]] = field(default_factory=dict)  # Opportunity Id -> Task Ids
    lead_factors: dict[str, tuple[str, ...]] = field(default_factory=dict)  # Lead Id -> failing


def _stage_window(deal: DealPlan, stage: int) -> tuple[datetime, datetime]:
    start = deal.stage_times[stage]
    if stage + 1 < len(deal.stage_times):
        end = deal.stage_times[stage + 1]
    elif stage == CLOSED:
        end = start + timedelta(days=5)
    else:
        end = NOW
    return start, max(start, end)


def _stages_of(deal: DealPlan) -> list[int]:
    """The stages the deal went through (the closing stage only for a won deal)."""
    stages = list(range(deal.worked + 1))
    if deal.outcome == "Won":
        stages.append(CLOSED)
    return stages


def _context(people: People, catalog: Catalog, deal: DealPlan) -> dict[str, Any]:
    contact = people.contacts[deal.contact]
    product = deal.lines[0].product
    return {
        "account": people.customers[deal.customer].name,
        "contact": contact.name,
        "first": contact.first,
        "agent": deal.owner.name,
        "agent_first": deal.owner.first,
        "product": product.name,
        "category": catalog.categories[product.category]["name"],
        "quantity": deal.lines[0].quantity,
        "deal": deal.name,
    }


def build_activities(
    rng: Random, profile: OrgProfile, people: People, catalog: Catalog, sales: Sales
) -> Activities:
    text = load_text("sales", profile.org)
    result = Activities()
    deals = sales.deals
    depth = [1.0 + len(_stages_of(d)) for d in deals]
    tasks = spread(rng, profile.counts["Task"], [1] * len(deals), depth, MAX_TASKS)
    events = spread(rng, profile.counts["Event"], [0] * len(deals), depth, MAX_EVENTS)
    call_total = profile.counts["VoiceCallTranscript__c"] - profile.lead_calls
    calls = spread(rng, call_total, [1] * len(deals), depth, MAX_CALLS)
    emails = spread(
        rng,
        profile.counts["EmailMessage"] - profile.case_emails,
        [1] * len(deals),
        depth,
        MAX_EMAILS,
    )
    call_drafts: list[tuple[datetime, int, Record]] = []
    contexts: dict[str, dict[str, Any]] = {}
    for n, deal in enumerate(deals):
        context = contexts[deal.id] = _context(people, catalog, deal)
        wrong = deal.id in sales.wrong_stages
        work = _DealWork(context, wrong, tasks[n], events[n], calls[n], emails[n])
        calls_made = _add_deal_activities(rng, people, deal, work, text, result)
        call_drafts.extend((record["CreatedDate"], 0, record) for record in calls_made)
    for n, event in enumerate(result.events, start=1):
        event["Id"] = profile.id("Event", n)
    _inject_stray_tasks(rng, profile, sales, result, text, contexts)
    lead_calls = spread(
        rng,
        profile.lead_calls,
        [0] * len(sales.leads),
        [2.0 if lead.status != "New" else 0.5 for lead in sales.leads],
        MAX_LEAD_CALLS,
    )
    for lead, count in zip(sales.leads, lead_calls, strict=True):
        failing = tuple(f for f in BANT if not lead.bant[f])
        if count:
            result.lead_factors[lead.id] = failing
        for k in range(count):
            record = _lead_call(rng, lead, k, count, text)
            call_drafts.append((record["CreatedDate"], 1, record))
    call_drafts.sort(key=lambda draft: (draft[0], draft[1]))
    for n, (_, _, record) in enumerate(call_drafts, start=1):
        result.calls.append({"Id": profile.id("VoiceCallTranscript__c", n), **record})
    return result


@dataclass(frozen=True)
class _DealWork:
    """What a deal's activities are to be: the facts they quote, whether the deal's StageName
    is wrong, and how many of each kind it has."""

    context: dict[str, Any]
    wrong: bool
    tasks: int
    events: int
    calls: int
    emails: int


def _add_deal_activities(
    rng: Random,
    people: People,
    deal: DealPlan,
    work: _DealWork,
    text: dict[str, Any],
    result: Activities,
) -> list[Record]:
    """A deal's tasks, events and e-mails, added to `result`; its calls, returned to be
    numbered in time order with the leads'."""
    stages, context = _stages_of(deal), work.context
    for stage in _stage_draws(rng, stages, work.tasks):
        result.tasks.append(_task(rng, deal, stage, text, context, work.wrong))
    for stage in _stage_draws(rng, stages, work.events):
        result.events.append(_event(rng, deal, stage, text, context))
    calls = [
        _deal_call(rng, deal, stage, text, context)
        for stage in _stage_draws(rng, stages, work.calls)
    ]
    for k, stage in enumerate(_stage_draws(rng, stages, work.emails)):
        result.emails.append(_deal_email(rng, people, deal, stage, k, text, context))
    return calls


def _stage_draws(rng: Random, stages: list[int], count: int) -> list[int]:
    """`count` stages, each stage at least once while the count lasts, in stage order."""
    picks = stages[:count] + rng.choices(stages, k=max(0, count - len(stages)))
    return sorted(picks)


def _task(
    rng: Random,
    deal: DealPlan,
    stage: int,
    text: dict[str, Any],
    context: dict[str, Any],
    wrong: bool,
) -> Record:
    spec = rng.choice(text["tasks"][STAGES[stage]])
    start, end = _stage_window(deal, stage)
    current = stage == deal.stage and deal.outcome == "Open"
    if current:
        status = "In Progress" if wrong else rng.choices(OPEN_STATUSES, weights=OPEN_WEIGHTS)[0]
        due = (start + timedelta(days=rng.randint(3, 21))).date()
    else:
        status = "Completed" if rng.random() < 0.95 else "Deferred"
        due = between(rng, start, end).date()
    created = min(start + timedelta(hours=rng.randint(1, 30)), NOW)
    return {
        "Id": "",  # numbered once all tasks exist
        "Subject": fill(spec["subject"], context),
        "Description": fill(spec["description"], context),
        "Priority": rng.choices(("Normal", "High", "Low"), weights=(0.6, 0.25, 0.15))[0],
        "Status": status,
        "ActivityDate": due,
        "WhatId": deal.id,
        "WhoId": None,
        "OwnerId": deal.owner.id,
        "CreatedDate": created,
    }


def _inject_stray_tasks(
    rng: Random,
    profile: OrgProfile,
    sales: Sales,
    result: Activities,
    text: dict[str, Any],
    contexts: dict[str, dict[str, Any]],
) -> None:
    """Number the tasks, then turn a few open deals' tasks into 'Not Started' tasks of a stage
    the deal is not in."""
    for n, task in enumerate(result.tasks, start=1):
        task["Id"] = profile.id("Task", n)
    deals = {d.id: d for d in sales.deals}
    candidates = [
        task
        for task in result.tasks
        if deals[task["WhatId"]].outcome == "Open"
        and task["WhatId"] not in sales.wrong_stages
        and task["Status"] == "Completed"
    ]
    for task in rng.sample(candidates, profile.stray_tasks):
        deal = deals[task["WhatId"]]
        other = rng.choice([s for s in range(CLOSED + 1) if s != deal.stage])
        spec = rng.choice(text["tasks"][STAGES[other]])
        task["Subject"] = fill(spec["subject"], contexts[deal.id])
        task["Description"] = fill(spec["description"], contexts[deal.id])
        task["Status"] = "Not Started"
        task["ActivityDate"] = min(
            NOW.date() + timedelta(days=rng.randint(1, 20)), LAST_DAY + timedelta(days=30)
        )
        result.stray_tasks.setdefault(deal.id, []).append(task["Id"])


def _event(
    rng: Random, deal: DealPlan, stage: int, text: dict[str, Any], context: dict[str, Any]
) -> Record:
    spec = rng.choice(text["events"][STAGES[stage]])
    start, end = _stage_window(deal, stage)
    at = between(rng, start, end)
    at = datetime.combine(at.date(), time(rng.randint(15, 22), rng.choice((0, 30))))
    all_day = bool(spec.get("all_day"))
    return {
        "Id": "",
        "Subject": fill(spec["subject"], context),
        "Description": fill(spec["description"], context),
        "Location": fill(rng.choice(text["event_locations"]), context),
        "StartDateTime": datetime.combine(at.date(), time(0)) if all_day else at,
        "DurationInMinutes": 1440 if all_day else rng.choice((30, 45, 60, 90)),
        "IsAllDayEvent": all_day,
        "WhatId": deal.id,
        "WhoId": None,
        "OwnerId": deal.owner.id,
        "CreatedDate": min(start + timedelta(hours=rng.randint(1, 48)), at),
    }


def _transcript(times: list[datetime], turns: list[tuple[str, str, str]]) -> str:
    return "\n".join(
        f"[{at:%Y-%m-%dT%H:%M:%S}] {name} ({role}): {said}"
        for at, (name, role, said) in zip(times, turns, strict=True)
    )


Speaker = tuple[str, str]  # (name, role)
Line = tuple[Speaker, str]  # who says what (a template)


def _openers(rng: Random, calls: dict[str, Any], agent: Speaker, customer: Speaker) -> list[Line]:
    return [
        (agent, rng.choice(calls["agent_openers"])),
        (customer, rng.choice(calls["customer_openers"])),
    ]


def _call_record(
    rng: Random,
    began: datetime,
    seconds: int,
    lines: list[Line],
    context: dict[str, Any],
    owner_id: str,
    *,
    lead: str | None = None,
    opportunity: str | None = None,
) -> Record:
    """A VoiceCallTranscript__c about a lead or a deal: `lines` spread over `seconds`."""
    times = spaced_times(rng, began, began + timedelta(seconds=seconds), len(lines))
    body = _transcript(times, [(who[0], who[1], fill(said, context)) for who, said in lines])
    return {
        "Body__c": body,
        "CreatedDate": began,
        "EndTime__c": times[-1],
        "LeadId__c": lead,
        "OpportunityId__c": opportunity,
        "OwnerId": owner_id,
    }


def _deal_call(
    rng: Random, deal: DealPlan, stage: int, text: dict[str, Any], context: dict[str, Any]
) -> Record:
    calls = text["calls"]
    agent, customer = (deal.owner.name, "Agent"), (context["contact"], "Customer")
    exchanges = rng.sample(calls[STAGES[stage]], min(3, len(calls[STAGES[stage]])))
    lines = _openers(rng, calls, agent, customer)
    for exchange in exchanges:
        lines.append((agent, exchange["agent"]))
        lines.append((customer, exchange["customer"]))
    lines.append((agent, rng.choice(calls["agent_closers"])))
    start, end = _stage_window(deal, stage)
    began = between(rng, start, end)
    began = datetime.combine(began.date(), time(rng.randint(15, 22), rng.randrange(60)))
    began = max(min(max(began, start), NOW - timedelta(hours=1)), deal.created)
    seconds = rng.randint(240, 1500)
    return _call_record(rng, began, seconds, lines, context, deal.owner.id, opportunity=deal.id)


def _lead_call(rng: Random, lead: LeadPlan, k: int, count: int, text: dict[str, Any]) -> Record:
    calls = text["lead_calls"]
    context = {
        "lead": f"{lead.first} {lead.last}", "first": lead.first, "agent": lead.owner.name,
        "agent_first": lead.owner.first, "company": lead.company or "your household",
        "title": lead.title or "customer",
    }  # fmt: skip
    agent, customer = (lead.owner.name, "Agent"), (context["lead"], "Customer")
    # Each call covers some factors; together the calls cover all four.
    factors = [f for n, f in enumerate(BANT) if n % count == k]
    lines = _openers(rng, calls, agent, customer)
    for factor in factors:
        spec = calls["factors"][factor]
        lines.append((agent, rng.choice(spec["question"])))
        lines.append((customer, rng.choice(spec["met" if lead.bant[factor] else "not_met"])))
    lines.append((agent, rng.choice(calls["agent_closers"])))
    limit = lead.converted or NOW
    window_end = min(lead.created + timedelta(days=10 * (k + 1)), limit)
    began = between(
        rng,
        lead.created + timedelta(hours=2 + 24 * k),
        max(lead.created + timedelta(hours=2 + 24 * k), window_end),
    )
    began = min(began, NOW - timedelta(hours=1))
    seconds = rng.randint(180, 900)
    return _call_record(rng, began, seconds, lines, context, lead.owner.id, lead=lead.id)


def _deal_email(
    rng: Random,
    people: People,
    deal: DealPlan,
    stage: int,
    k: int,
    text: dict[str, Any],
    context: dict[str, Any],
) -> Record:
    contact = people.contacts[deal.contact]
    start, end = _stage_window(deal, stage)
    at = min(between(rng, start, end), NOW)
    by_agent = k % 3 != 2  # mostly the agent writes; every third message is the reply
    mail = text["emails"]
    if by_agent:
        spec = rng.choice(mail[STAGES[stage]])
        subject = fill(spec["subject"], context)
        body = (
            f"Hi {contact.first},\n\n{fill(spec['body'], context)}\n\n"
            f"{rng.choice(mail['agent_signoffs'])}\n{deal.owner.name}"
        )
    else:
        subject = f"RE: {fill(rng.choice(mail[STAGES[stage]])['subject'], context)}"
        body = (
            f"Hi {deal.owner.first},\n\n{fill(rng.choice(mail['customer_replies']), context)}\n\n"
            f"{rng.choice(mail['customer_signoffs'])}\n{contact.name}"
        )
    return email_record(
        subject, body, at, by_agent, deal.owner, contact, ParentId=None, RelatedToId=deal.id
    )
