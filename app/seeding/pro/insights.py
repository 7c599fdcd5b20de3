"""ConversationInsights: the concern a deal's customer raises on one of its calls, the answer
of sales_insight_mining.

Planted after the calls and e-mails are written, from a random stream of its own, so that
every other record stays as it was: one exchange (the agent's question, the customer's answer
around the insight) slipped into one of the deal's calls before its closing line, at times
between that line and the one before it; and, where the customer wrote about the deal after
that call, a paragraph saying it again in one of those e-mails. The texts are the org's
`insights` in sales.yaml.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from random import Random
from typing import Any

from app.seeding.generate.records import Record
from app.seeding.generate.text import fill, load_text
from app.seeding.pro.catalog import Catalog
from app.seeding.pro.profile import OrgProfile
from app.seeding.pro.sales import DealPlan

# A transcript line: "[2024-03-01T15:04:05] Name (Role): words".
TRANSCRIPT_LINE = re.compile(r"\[(?P<at>[^\]]+)\] (?P<speaker>.+? \((?:Agent|Customer)\)): ")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


def plant_insights(
    rng: Random,
    profile: OrgProfile,
    catalog: Catalog,
    deals: list[DealPlan],
    calls: list[Record],
    emails: list[Record],
) -> dict[str, str]:
    """Opportunity Id -> the insight its customer states, for every deal with a call; the
    exchange that states it is written into one of the deal's `calls`, and the paragraph that
    repeats it into one of its customer's later `emails` (both changed in place)."""
    spec = load_text("sales", profile.org)["insights"]
    calls_of: dict[str, list[Record]] = {}
    for call in calls:
        if call["OpportunityId__c"] is not None:
            calls_of.setdefault(call["OpportunityId__c"], []).append(call)
    replies_of: dict[str, list[Record]] = {}
    for email in emails:
        if email["Incoming"] and email["RelatedToId"] is not None:
            replies_of.setdefault(email["RelatedToId"], []).append(email)
    planted: dict[str, str] = {}
    for deal in deals:
        own = calls_of.get(deal.id)
        if not own:
            continue
        insight = _insight(rng, spec, deal, catalog)
        call = rng.choice(own)
        asked = rng.choice(spec["questions"])
        said = fill(rng.choice(spec["lead_ins"]), {"insight": insight})
        call["Body__c"] = _with_exchange(call["Body__c"], asked, said)
        later = [e for e in replies_of.get(deal.id, []) if e["MessageDate"] > call["EndTime__c"]]
        if later:
            email = rng.choice(later)
            again = fill(rng.choice(spec["email_lead_ins"]), {"insight": insight})
            greeting, *paragraphs, signature = email["TextBody"].split("\n\n")
            email["TextBody"] = "\n\n".join([greeting, *paragraphs, again, signature])
        planted[deal.id] = insight
    return planted


def _insight(rng: Random, spec: dict[str, Any], deal: DealPlan, catalog: Catalog) -> str:
    topic = rng.choice(sorted(spec["topics"]))
    product = deal.lines[0].product
    context: dict[str, object] = {
        "product": product.name,
        "category": catalog.categories[product.category]["name"],
    }
    context |= {slot: rng.choice(words) for slot, words in spec["words"].items()}
    context |= {slot: rng.randint(low, high) for slot, (low, high) in spec["numbers"].items()}
    return fill(rng.choice(spec["topics"][topic]), context)


def _with_exchange(body: str, asked: str, said: str) -> str:
    """The transcript with the agent asking and the customer answering before its closing
    line (the agent's), at a third and two thirds of the way from the line before it."""
    lines = body.splitlines()
    agent = TRANSCRIPT_LINE.match(lines[0])
    customer = TRANSCRIPT_LINE.match(lines[1])
    before, closing = TRANSCRIPT_LINE.match(lines[-2]), TRANSCRIPT_LINE.match(lines[-1])
    if not (agent and customer and before and closing):
        raise ValueError("a call transcript is not in its '[time] Name (Role): words' form")
    start = datetime.strptime(before["at"], TIME_FORMAT)
    gap = (datetime.strptime(closing["at"], TIME_FORMAT) - start) / 3
    at = [start + timedelta(seconds=int((gap * k).total_seconds())) for k in (1, 2)]
    exchange = [
        f"[{at[0]:{TIME_FORMAT}}] {agent['speaker']}: {asked}",
        f"[{at[1]:{TIME_FORMAT}}] {customer['speaker']}: {said}",
    ]
    return "\n".join([*lines[:-1], *exchange, lines[-1]])
