"""The Pro orgs' Sales Insight Mining (`sales_insight_mining`, crmarena.md 5.2): the concern
an opportunity's customer raised on its calls, in the customer's words, graded by token F1
against the insight the generator planted in one of the calls and repeated in a later e-mail
where there is one (app.seeding.pro.insights). The answer is read back from the transcripts
and e-mails and checked against what was planted."""

from __future__ import annotations

from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    PRO,
    TEXT,
    Api,
    Draft,
    NotScripted,
    OrgData,
    PlantedTruthDisagrees,
    TaskType,
)
from app.tasks.rulebook import insights_stated
from app.tasks.solving import named_id, org_of, quoted

PERSONA = "Sales Manager"
INSIGHT_QUERIES = (
    "What is the main concern the customer raised on the calls about opportunity {deal}?",
    "Read the call transcripts of opportunity {deal}: what worries the customer most?",
    "Which concern did the customer bring up on the calls for opportunity {deal}?",
)
INSIGHT_POLICY = (
    "Read the opportunity's voice call transcripts (VoiceCallTranscript__c) and e-mails "
    "(EmailMessage). Answer with the concern the customer raised, in the customer's own words."
)


def draw_insight(rng: Random, data: OrgData) -> Draft:
    planted = data.pro_truth().deal_insights
    deal = rng.choice(sorted(planted))
    stated = insights_stated(data.org, *org_sql.deal_conversation(data.conn, data.tables, deal))
    if stated != {planted[deal]}:
        raise PlantedTruthDisagrees(f"opportunity {deal}'s calls state {stated}")
    today = org_sql.deal_last_activity_day(data.conn, data.tables, deal)
    query = rng.choice(INSIGHT_QUERIES).format(deal=deal)
    return Draft(planted[deal], query, today, INSIGHT_POLICY, "", {"deal": deal, "org": data.org})


def solve_insight(api: Api, task: dict[str, Any]) -> str:
    deal = quoted(named_id(task, "006", "opportunity"))
    calls = api.query(f"SELECT Body__c FROM VoiceCallTranscript__c WHERE OpportunityId__c = {deal}")
    emails = api.query(f"SELECT TextBody FROM EmailMessage WHERE RelatedToId = {deal}")
    stated = insights_stated(
        org_of(api),
        [row["Body__c"] or "" for row in calls],
        [row["TextBody"] or "" for row in emails],
    )
    if len(stated) != 1:
        raise NotScripted(f"the opportunity's calls and e-mails state {len(stated)} concerns")
    return stated.pop()


TASK_TYPES = (
    TaskType(
        name="sales_insight_mining",
        skill=TEXT,
        persona=PERSONA,
        reward_metric="fuzzy_match",
        draw=draw_insight,
        solve=solve_insight,
        orgs=PRO,
    ),
)
