"""The Pro orgs' policy compliance over quotes (crmarena.md 5.2):

- Quote Approval: an approved quote breaks the discount approval policy when a line's discount
  is above the most the policy allows; the answer is the policy's article, or None.
- Invalid Configuration Identification: a quote breaks a product's configuration rule (more
  units than one quote may hold, or a product that cannot be on one quote with it); the
  answer is that product's configuration article, or None.

Each answer is computed from the data (the quote's lines against the rules its articles state)
and checked against the violations the generator injected."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    ABSTAIN_SHARE,
    POLICY,
    PRO,
    Ambiguous,
    Api,
    Draft,
    NoAnswer,
    NotScripted,
    OrgData,
    PlantedTruthDisagrees,
    TaskType,
)
from app.tasks.solving import named_id, quoted

PERSONA = "Sales Manager"
# The discount approval article's rule: "Discounts above 25% are not allowed" (b2b), "... are
# never allowed" (b2c).
MAX_DISCOUNT_RULE = re.compile(r"Discounts above (\d+(?:\.\d+)?)% are (?:not|never) allowed")

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
    for article, text in org_sql.online_articles(data.conn, data.tables, "FAQ_Answer__c").items():
        found = MAX_DISCOUNT_RULE.search(text)
        if found is not None:
            return article, float(found[1])
    raise PlantedTruthDisagrees("no published article states the largest discount allowed")


def _approved_quote(rng: Random, data: OrgData, planted: dict[str, str]) -> str:
    """An approved quote: one that broke the rule (planted), but for ABSTAIN_SHARE of the
    draws, one that did not."""
    approved = org_sql.approved_quotes(data.conn, data.tables)
    violated = [quote for quote in approved if quote in planted]
    pool = violated if rng.random() >= ABSTAIN_SHARE else [q for q in approved if q not in planted]
    if not pool:
        raise NoAnswer
    return rng.choice(pool)


def _quote_draft(
    rng: Random,
    data: OrgData,
    quote: str,
    answer: str | None,
    planted: str | None,
    queries: tuple[str, ...],
    policy: str,
) -> Draft:
    """A quote task whose answer the data gave, checked against what was planted in the
    quote, asked some days after the quote was made."""
    if answer != planted:
        raise PlantedTruthDisagrees(f"quote {quote}: the data gives {answer}, not {planted}")
    today = org_sql.quote_day(data.conn, data.tables, quote) + timedelta(days=rng.randint(1, 30))
    query = rng.choice(queries).format(quote=quote)
    return Draft(answer, query, today, policy, "", {"quote": quote, "org": data.org})


def draw_quote_approval(rng: Random, data: OrgData) -> Draft:
    planted = data.pro_truth().approval_violations
    quote = _approved_quote(rng, data, planted)
    article, most = discount_policy(data)
    breaks = org_sql.largest_discount(data.conn, data.tables, quote) > most
    answer = article if breaks else None
    return _quote_draft(rng, data, quote, answer, planted.get(quote), QUOTE_QUERIES, QUOTE_POLICY)


# A product's configuration article: "... at most 80 units of SiteWatch 4K Camera.</p>" (b2c
# adds "(Category, $price each)"), and "<p>Other Product cannot be quoted (bought) together
# with this product ...".
QUANTITY_RULE = re.compile(r"at most (\d+) units of (.+?)(?: \([^()]*\))?\.</p>")
EXCLUSION_RULE = re.compile(r"<p>([^<]+?) cannot be (?:quoted|bought) together with this product")


@dataclass(frozen=True)
class ConfigRule:
    article: str
    max_quantity: int
    excludes: str | None  # a product Id


def config_rules(answers: dict[str, str], products: dict[str, str]) -> dict[str, ConfigRule]:
    """Product Id -> its configuration rule, read from the articles' text (article Id ->
    FAQ_Answer__c), products named as `products` (Name -> Id) knows them."""
    rules: dict[str, ConfigRule] = {}
    for article, text in answers.items():
        quantity = QUANTITY_RULE.search(text)
        if quantity is None or quantity[2] not in products:
            continue
        excluded = EXCLUSION_RULE.search(text)
        other = products.get(excluded[1]) if excluded else None
        rules[products[quantity[2]]] = ConfigRule(article, int(quantity[1]), other)
    return rules


def broken_rules(rules: dict[str, ConfigRule], lines: list[tuple[str, float]]) -> set[str]:
    """The articles whose rule the quote's lines (Product2Id, Quantity) break."""
    on_quote = {product for product, _ in lines}
    broken = set()
    for product, quantity in lines:
        rule = rules.get(product)
        if rule is None:
            continue
        if quantity > rule.max_quantity or (
            rule.excludes is not None and rule.excludes in on_quote
        ):
            broken.add(rule.article)
    return broken


CONFIG_QUERIES = (
    "Is quote {quote} configured correctly?",
    "Check quote {quote} against our product configuration rules.",
    "Does quote {quote} break any product configuration rule?",
)
CONFIG_POLICY = (
    "Check the quote's lines against each product's configuration rules in the knowledge base "
    "(the most units one quote may hold, and products that cannot be on one quote together). "
    "Answer with the Id of the Knowledge__kav article whose rule the quote breaks, or None if "
    "it breaks none."
)


def draw_invalid_config(rng: Random, data: OrgData) -> Draft:
    planted = data.pro_truth().config_violations
    quote = _approved_quote(rng, data, planted)
    rules = config_rules(
        org_sql.online_articles(data.conn, data.tables, "FAQ_Answer__c"),
        org_sql.product_names(data.conn, data.tables),
    )
    broken = broken_rules(rules, org_sql.quote_lines(data.conn, data.tables, quote))
    if len(broken) > 1:
        raise Ambiguous
    answer = broken.pop() if broken else None
    return _quote_draft(rng, data, quote, answer, planted.get(quote), CONFIG_QUERIES, CONFIG_POLICY)


# --- the reference solvers --------------------------------------------------------------------


def solve_quote_approval(api: Api, task: dict[str, Any]) -> str:
    quote = named_id(task, "0Q0", "quote")
    rules = [
        (row["Id"], float(rule[1]))
        for row in api.query(
            "SELECT Id, FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
        )
        if (rule := MAX_DISCOUNT_RULE.search(row["FAQ_Answer__c"] or ""))
    ]
    if len(rules) != 1:
        raise NotScripted(f"{len(rules)} articles state the largest discount")
    article, most = rules[0]
    lines = api.query(f"SELECT Discount FROM QuoteLineItem WHERE QuoteId = {quoted(quote)}")
    largest = max((line["Discount"] or 0.0 for line in lines), default=0.0)
    return article if largest > most else "None"


def solve_invalid_config(api: Api, task: dict[str, Any]) -> str:
    quote = named_id(task, "0Q0", "quote")
    answers = {
        row["Id"]: row["FAQ_Answer__c"] or ""
        for row in api.query(
            "SELECT Id, FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
        )
    }
    products = {row["Name"]: row["Id"] for row in api.query("SELECT Id, Name FROM Product2")}
    lines = [
        (row["Product2Id"], float(row["Quantity"]))
        for row in api.query(
            f"SELECT Product2Id, Quantity FROM QuoteLineItem WHERE QuoteId = {quoted(quote)}"
        )
    ]
    broken = broken_rules(config_rules(answers, products), lines)
    if len(broken) > 1:
        raise NotScripted(f"the quote breaks {len(broken)} rules")
    return broken.pop() if broken else "None"


TASK_TYPES = (
    TaskType(
        name="quote_approval",
        skill=POLICY,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_quote_approval,
        solve=solve_quote_approval,
        orgs=PRO,
    ),
    TaskType(
        name="invalid_config",
        skill=POLICY,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_invalid_config,
        solve=solve_invalid_config,
        orgs=PRO,
    ),
)
