"""The Pro orgs' lead tasks (crmarena.md 5.2).

- Lead Routing: a new lead goes to the territory whose Description lists its state, and there
  to the user with the most Accepted quotes (through the opportunities they own), then the one
  with the fewest unconverted leads. Computed from the data; the territory is checked against
  the states the generator gave each territory.
- Lead Qualification: the BANT factors (Budget, Authority, Need, Timeline) a lead's call
  transcripts show it fails, or None when it passes all four. Read from the calls and checked
  against the factors the generator planted.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import date, datetime, timedelta
from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    ABSTAIN_SHARE,
    POLICY,
    PRO,
    WORKFLOW,
    Ambiguous,
    Api,
    Draft,
    NoAnswer,
    NotScripted,
    OrgData,
    PlantedTruthDisagrees,
    TaskType,
)
from app.tasks.rulebook import bant_factors, factors_failed
from app.tasks.solving import ids, literal, named_id, org_of, quoted, today_of

ROUTING_QUERIES = (
    "A new lead, {name}, just came in from {state}. Which sales agent should it be routed to?",
    "Who should own the new lead {name}? The prospect is based in {state}.",
    "Route the new lead {name} (located in {state}) to the right sales agent.",
)
ROUTING_POLICY = (
    "Leads are routed by territory: the territory whose Description lists the lead's state. "
    "Among the users assigned to that territory, pick the one whose opportunities have the most "
    "quotes with Status 'Accepted'; on a tie, the one who owns the fewest unconverted leads. "
    "Answer with the User Id."
)


def _territory_of(descriptions: dict[str, str], state: str) -> str:
    found = [t for t, text in descriptions.items() if state in text.replace(" ", "").split(",")]
    if len(found) != 1:
        raise Ambiguous  # no territory, or more than one, lists the state
    return found[0]


def route_lead(data: OrgData, state: str, today: date) -> str:
    """The user the routing policy gives a new lead of `state`."""
    descriptions = org_sql.territory_descriptions(data.conn, data.tables)
    territory = _territory_of(descriptions, state)
    if state not in data.pro_truth().territory_states.get(territory, ()):
        raise PlantedTruthDisagrees(f"territory {territory} lists {state}, the generator did not")
    users = org_sql.territory_users(data.conn, data.tables, territory, today)
    if not users:
        raise NoAnswer
    accepted = org_sql.accepted_quotes_per_owner(data.conn, data.tables, users)
    unconverted = org_sql.unconverted_leads_per_owner(data.conn, data.tables, users)
    ranked = sorted(users, key=lambda user: (-accepted[user], unconverted[user]))
    best = ranked[0]
    if len(ranked) > 1 and (
        (accepted[best], unconverted[best]) == (accepted[ranked[1]], unconverted[ranked[1]])
    ):
        raise Ambiguous
    return best


def draw_lead_routing(rng: Random, data: OrgData) -> Draft:
    """A new lead, not yet in the org: a name drawn from the org's leads' first and last names,
    from the state of one of its leads (so states come as often as the org's leads do)."""
    leads = org_sql.lead_names(data.conn, data.tables)
    state = data.pro_truth().lead_states[rng.choice(leads)[0]]
    name = f"{rng.choice(leads)[1]} {rng.choice(leads)[2]}"
    _, today = org_sql.day_span(data.conn, data.tables, "Lead", "CreatedDate")
    answer = route_lead(data, state, today)
    query = rng.choice(ROUTING_QUERIES).format(name=name, state=state)
    params = {"name": name, "state": state, "org": data.org}
    return Draft(answer, query, today, ROUTING_POLICY, "", params)


QUALIFY_QUERIES = (
    "Which BANT factors does lead {lead} fail, going by our calls with them?",
    "Qualify lead {lead} from its call transcripts: which of Budget, Authority, Need and "
    "Timeline are not met?",
    "Review the calls with lead {lead}. On which BANT factors does it fall short?",
)
QUALIFY_POLICY = (
    "A lead is qualified by BANT: Budget, Authority, Need and Timeline, as the knowledge base "
    "defines them. Read the lead's call transcripts (VoiceCallTranscript__c) and answer with "
    "the factors the lead does not meet, or None if it meets all four."
)


def failing_factors(org: str, transcripts: list[str]) -> list[str]:
    """The factors the calls show the lead fails, in BANT order."""
    failed = factors_failed(org, transcripts)
    if failed is None:
        raise Ambiguous  # the calls leave a factor unsaid, or say it both ways
    return [factor for factor in bant_factors(org) if failed[factor]]


def draw_lead_qualification(rng: Random, data: OrgData) -> Draft:
    planted = data.pro_truth().lead_failing_factors
    leads = org_sql.leads_with_calls(data.conn, data.tables)
    if set(leads) != set(planted):
        different = sorted(set(leads) ^ set(planted))[:3]
        raise PlantedTruthDisagrees(f"the leads with calls are not the planted ones: {different}")
    passing = [lead for lead in leads if not planted[lead]]
    failing = [lead for lead in leads if planted[lead]]
    lead = rng.choice(passing if rng.random() < ABSTAIN_SHARE and passing else failing)
    transcripts, last_call = org_sql.lead_calls(data.conn, data.tables, lead)
    factors = failing_factors(data.org, transcripts)
    if factors != [f for f in bant_factors(data.org) if f in planted[lead]]:
        raise PlantedTruthDisagrees(f"lead {lead}'s calls show {factors}, not {planted[lead]}")
    query = rng.choice(QUALIFY_QUERIES).format(lead=lead)
    params = {"lead": lead, "org": data.org}
    return Draft(factors or None, query, last_call, QUALIFY_POLICY, "", params)


# --- the reference solvers --------------------------------------------------------------------


def solve_lead_routing(api: Api, task: dict[str, Any]) -> str:
    found = re.search(r"\b(?:from|in) ([A-Z]{2})\b", task["query"])
    if found is None:
        raise NotScripted("the query names no state")
    state = found[1]
    territories = [
        row["Id"]
        for row in api.query("SELECT Id, Description FROM Territory2")
        if state in (row["Description"] or "").replace(" ", "").split(",")
    ]
    if len(territories) != 1:
        raise NotScripted(f"{len(territories)} territories list {state}")
    end = literal(datetime.combine(today_of(task) + timedelta(days=1), datetime.min.time()))
    users = sorted(
        {
            row["UserId"]
            for row in api.query(
                "SELECT UserId FROM UserTerritory2Association WHERE IsActive = true AND "
                f"Territory2Id = {quoted(territories[0])} AND CreatedDate < {end}"
            )
        }
    )
    accepted = Counter(
        row["Opportunity"]["OwnerId"]
        for row in api.query(
            "SELECT Opportunity.OwnerId FROM Quote WHERE Status = 'Accepted' AND "
            f"Opportunity.OwnerId IN {ids(users)}"
        )
    )
    unconverted = Counter(
        row["OwnerId"]
        for row in api.query(
            f"SELECT OwnerId FROM Lead WHERE IsConverted = false AND OwnerId IN {ids(users)}"
        )
    )
    ranked = sorted(users, key=lambda user: (-accepted[user], unconverted[user]))
    return str(ranked[0])


def solve_lead_qualification(api: Api, task: dict[str, Any]) -> str:
    lead = quoted(named_id(task, "00Q", "lead"))
    calls = api.query(f"SELECT Body__c FROM VoiceCallTranscript__c WHERE LeadId__c = {lead}")
    org = org_of(api)
    failed = factors_failed(org, [row["Body__c"] or "" for row in calls])
    if failed is None:
        raise NotScripted("the calls do not settle every factor")
    failing = [factor for factor in bant_factors(org) if failed[factor]]
    return ", ".join(failing) if failing else "None"


PERSONA = "Sales Manager"
TASK_TYPES = (
    TaskType(
        name="lead_routing",
        skill=WORKFLOW,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_lead_routing,
        solve=solve_lead_routing,
        orgs=PRO,
    ),
    TaskType(
        name="lead_qualification",
        skill=POLICY,
        persona="Sales Agent",
        reward_metric="exact_match",
        answer_kind="bant",
        draw=draw_lead_qualification,
        solve=solve_lead_qualification,
        orgs=PRO,
    ),
)
