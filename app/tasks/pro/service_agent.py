"""The Pro orgs' Service Agent task (crmarena.md 5.2): Solution Violation Identification
(`policy_violation_identification`). A closed case's resolution, as its chat and e-mails
state it, either follows its issue's resolution policy or breaks it; the answer is the policy
article it breaks, or None. Read from the conversation and checked against the violations the
generator planted."""

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
from app.tasks.pro import ABSTAIN_SHARE
from app.tasks.rulebook import resolution_policy_title, resolutions_stated

PERSONA = "Service Agent"
PVI_QUERIES = (
    "Review case {case}: did the resolution go against our policies?",
    "Was case {case} resolved within policy? If not, which policy was broken?",
    "Check how case {case} was resolved. Does it violate a knowledge article?",
)
PVI_POLICY = (
    "Each kind of issue has a resolution policy in the knowledge base. Read the case's chat "
    "transcripts and e-mails and compare its resolution with the policy. Answer with the Id of "
    "the Knowledge__kav article whose policy the resolution breaks, or None if it follows it."
)


def violated_article(data: OrgData, case: str) -> str | None:
    """The Id of the policy article the case's conversation shows its resolution breaks."""
    texts = org_sql.case_conversation(data.conn, data.tables, case)
    stated = resolutions_stated(data.org, texts)
    if not stated:
        raise NoAnswer  # the conversation never states how the case was resolved
    if len(stated) > 1:
        raise Ambiguous
    ((issue, breaks),) = stated
    if not breaks:
        return None
    titles = org_sql.online_articles(data.conn, data.tables, "Title")
    wanted = resolution_policy_title(data.org, issue)
    found = [article for article, title in titles.items() if title == wanted]
    if len(found) != 1:
        raise PlantedTruthDisagrees(f"{len(found)} published articles are titled {wanted!r}")
    return found[0]


def draw_policy_violation(rng: Random, data: OrgData) -> Draft:
    planted = data.pro_truth().case_violations
    cases = org_sql.closed_cases_with_conversation(data.conn, data.tables)
    violated = [case for case in cases if case in planted]
    if len(violated) != len(planted):
        missing = sorted(set(planted) - set(violated))[:3]
        raise PlantedTruthDisagrees(f"cases with planted violations lack conversations: {missing}")
    compliant = [case for case in cases if case not in planted]
    case = rng.choice(compliant if rng.random() < ABSTAIN_SHARE else violated)
    answer = violated_article(data, case)
    if answer != planted.get(case):
        raise PlantedTruthDisagrees(f"case {case}'s conversation breaks {answer}")
    query = rng.choice(PVI_QUERIES).format(case=case)
    today = org_sql.case_closed_or_created(data.conn, data.tables, case).date()
    return Draft(answer, query, today, PVI_POLICY, "", {"case": case, "org": data.org})


TASK_TYPES = (
    TaskType("policy_violation_identification", PERSONA, "exact_match", draw_policy_violation),
)
