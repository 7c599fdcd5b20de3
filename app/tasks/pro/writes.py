"""Beyond CRMArena: the Pro orgs' write tasks, done by changing the org and graded by the
episode's diff (`diff_match`): the expected changes made, and no other record touched.

- stage_rectification_write: set an opportunity's StageName to the stage its activity shows,
  or change nothing when it is right;
- lead_routing_write: make the agent the routing policy picks a lead's owner;
- case_closing_write: close an open case once its conversation has told the customer the
  resolution, or leave it open when it has not.

Each answer is the list of changes `[{"type", "id", "fields"}]`, computed as the matching
question type computes its answer; each solver makes the change the matching question type's
solver names."""

from __future__ import annotations

from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import ABSTAIN_SHARE, PRO, WORKFLOW, Api, Draft, NoAnswer, OrgData, TaskType
from app.tasks.pro.sales_activity import deal_to_rectify, stages_read
from app.tasks.pro.sales_leads import ROUTING_POLICY, route_lead, solve_lead_routing
from app.tasks.rulebook import resolutions_stated
from app.tasks.solving import case_conversation, named_id, org_of
from app.tasks.tools import UPDATES

NO_COLLATERAL = "Change nothing else in the org."


def _change(sobject: str, record: str, **fields: Any) -> list[dict[str, Any]]:
    return [{"type": sobject, "id": record, "fields": fields}]


STAGE_QUERIES = (
    "Make sure opportunity {deal} is in the right stage, and fix it if it is not.",
    "Opportunity {deal}'s stage may be stale. Update it if its activity shows another stage.",
)
STAGE_POLICY = (
    "An opportunity is in the latest stage its activity shows: its tasks (those not started "
    "aside), events, e-mails and calls, each of a kind the knowledge base places in a stage; an "
    "opportunity with a quote is at least in the Quote stage. Set its StageName to that stage "
    f"if it differs; leave it as it is if it is right. {NO_COLLATERAL}"
)


def draw_stage_write(rng: Random, data: OrgData) -> Draft:
    deal, recorded, shown, today = deal_to_rectify(rng, data)
    answer = [] if shown == recorded else _change("Opportunity", deal, StageName=shown)
    query = rng.choice(STAGE_QUERIES).format(deal=deal)
    return Draft(answer, query, today, STAGE_POLICY, "", {"deal": deal, "org": data.org})


LEAD_QUERIES = (
    "Lead {lead} is based in {state}. Assign it to the sales agent our routing policy picks.",
    "Route lead {lead} (located in {state}) by making the right sales agent its owner.",
)
LEAD_POLICY = (
    f"{ROUTING_POLICY} Route the lead by making that user its owner (OwnerId). {NO_COLLATERAL}"
)


def draw_lead_write(rng: Random, data: OrgData) -> Draft:
    lead, owner = rng.choice(org_sql.unconverted_leads(data.conn, data.tables))
    state = data.pro_truth().lead_states[lead]
    _, today = org_sql.day_span(data.conn, data.tables, "Lead", "CreatedDate")
    agent = route_lead(data, state, today)
    if agent == owner:
        raise NoAnswer  # already routed there: nothing to do
    query = rng.choice(LEAD_QUERIES).format(lead=lead, state=state)
    params = {"lead": lead, "state": state, "org": data.org}
    return Draft(_change("Lead", lead, OwnerId=agent), query, today, LEAD_POLICY, "", params)


CLOSE_QUERIES = (
    "Case {case}: if the customer has been given the resolution, close the case.",
    "Close case {case} if it is resolved; leave it open if it is not.",
)
CLOSE_POLICY = (
    "A case is resolved once the agent has told the customer its resolution (in the case's chat "
    "or e-mails), as its issue's resolution policy in the knowledge base says. Close a resolved "
    f"case by setting its Status to 'Closed'; leave an unresolved one as it is. {NO_COLLATERAL}"
)


def draw_case_close(rng: Random, data: OrgData) -> Draft:
    conversations = org_sql.open_case_conversations(data.conn, data.tables)
    cases = sorted(conversations)
    stated = {case: resolutions_stated(data.org, conversations[case]) for case in cases}
    resolved = [case for case in cases if stated[case]]
    unresolved = [case for case in cases if not stated[case]]
    pool = unresolved if unresolved and rng.random() < ABSTAIN_SHARE else resolved
    if not pool:
        raise NoAnswer
    case = rng.choice(pool)
    answer = _change("Case", case, Status="Closed") if stated[case] else []
    _, today = org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")
    query = rng.choice(CLOSE_QUERIES).format(case=case)
    return Draft(answer, query, today, CLOSE_POLICY, "", {"case": case, "org": data.org})


# --- the reference solvers --------------------------------------------------------------------


def solve_stage_write(api: Api, task: dict[str, Any]) -> str:
    deal = named_id(task, "006", "opportunity")
    recorded, shown = stages_read(api, deal)
    if shown == recorded:
        return f"Opportunity {deal} is in the right stage, {recorded}."
    api.update("Opportunity", deal, {"StageName": shown})
    return f"Opportunity {deal} moved from {recorded} to {shown}."


def solve_lead_write(api: Api, task: dict[str, Any]) -> str:
    lead = named_id(task, "00Q", "lead")
    agent = solve_lead_routing(api, task)
    api.update("Lead", lead, {"OwnerId": agent})
    return f"Lead {lead} is now owned by {agent}."


def solve_case_close(api: Api, task: dict[str, Any]) -> str:
    case = named_id(task, "500", "case")
    if not resolutions_stated(org_of(api), case_conversation(api, case)):
        return f"Case {case} has no resolution yet: it stays open."
    api.update("Case", case, {"Status": "Closed"})
    return f"Case {case} is closed."


PERSONA = "Sales Manager"
TASK_TYPES = (
    TaskType(
        name="stage_rectification_write",
        skill=WORKFLOW,
        persona=PERSONA,
        reward_metric="diff_match",
        draw=draw_stage_write,
        solve=solve_stage_write,
        orgs=PRO,
        tools=UPDATES,
    ),
    TaskType(
        name="lead_routing_write",
        skill=WORKFLOW,
        persona=PERSONA,
        reward_metric="diff_match",
        draw=draw_lead_write,
        solve=solve_lead_write,
        orgs=PRO,
        tools=UPDATES,
    ),
    TaskType(
        name="case_closing_write",
        skill=WORKFLOW,
        persona="Service Agent",
        reward_metric="diff_match",
        draw=draw_case_close,
        solve=solve_case_close,
        orgs=PRO,
        tools=UPDATES,
    ),
)
