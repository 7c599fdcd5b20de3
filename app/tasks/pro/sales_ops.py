"""The Pro orgs' policy compliance over quotes (crmarena.md 5.2): Quote Approval. An approved
quote breaks the discount approval policy when a line's discount is above the most the policy
allows; the answer is the policy's article, or None.

The answer is computed from the data (the quote's line discounts against the figure the
policy's article states) and checked against the violations the generator injected."""

from __future__ import annotations

import re
from datetime import timedelta
from random import Random

from app.tasks import org_sql
from app.tasks.model import Draft, NoAnswer, OrgData, PlantedTruthDisagrees, TaskType

PERSONA = "Sales Manager"
# The discount approval article's rule: "Discounts above 25% are not allowed" (b2b), "... are
# never allowed" (b2c).
MAX_DISCOUNT_RULE = re.compile(r"Discounts above (\d+(?:\.\d+)?)% are (?:not|never) allowed")
VIOLATED_SHARE = 0.5  # of the drawn quotes, those approved against the policy

QUOTE_QUERIES = (
    "Quote {quote} was approved. Does it comply with our discount approval policy?",
    "Check whether the approval of quote {quote} followed our policies.",
    "Was quote {quote} approved in line with company policy?",
)
QUOTE_POLICY = (
    "Compare the quote's line discounts with the discount approval policy in the knowledge "
    "base. Answer with the Id of the Knowledge__kav article whose policy the approval broke, "
    "or None if it complies."
)


def discount_policy(data: OrgData) -> tuple[str, float]:
    """The discount approval article's Id and the largest discount it allows."""
    for article, text in org_sql.online_answers(data.conn, data.tables).items():
        found = MAX_DISCOUNT_RULE.search(text)
        if found is not None:
            return article, float(found[1])
    raise PlantedTruthDisagrees("no published article states the largest discount allowed")


def draw_quote_approval(rng: Random, data: OrgData) -> Draft:
    planted = data.pro_truth().approval_violations
    approved = org_sql.approved_quotes(data.conn, data.tables)
    violated = [quote for quote in approved if quote in planted]
    pool = violated if rng.random() < VIOLATED_SHARE else [q for q in approved if q not in planted]
    if not pool:
        raise NoAnswer
    quote = rng.choice(pool)
    article, most = discount_policy(data)
    breaks = org_sql.largest_discount(data.conn, data.tables, quote) > most
    answer = article if breaks else None
    if answer != planted.get(quote):
        raise PlantedTruthDisagrees(
            f"quote {quote}: the data gives {answer}, not {planted.get(quote)}"
        )
    today = org_sql.quote_day(data.conn, data.tables, quote) + timedelta(days=rng.randint(1, 30))
    query = rng.choice(QUOTE_QUERIES).format(quote=quote)
    return Draft(answer, query, today, QUOTE_POLICY, "", {"quote": quote, "org": data.org})


TASK_TYPES = (TaskType("quote_approval", PERSONA, "exact_match", draw_quote_approval),)
