"""The Service Agent's tasks (crmarena.md 5.1): Named Entity Disambiguation, Policy Violation
Identification and Knowledge QA.

Named entity disambiguation is computed from the data and checked against the purchase it was
drawn from. The other two ask about what the generator planted (the violation it injected
into a case's conversation, the policy figures its articles state): their answers come from
the planted truth and are checked against the database (the case has a conversation, the
article is published, the figure is in the article's text); a disagreement fails the
generation.

The reference solvers read the same through the REST API; where a task needs reading, from a
rulebook: the lines the knowledge base's policies (and the issues' stories) count as
violations, which words of an article state the figure each question asks for."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    EVERY_ORG,
    ORIGINAL,
    POLICY,
    TEXT,
    Ambiguous,
    Api,
    Draft,
    ForAnotherFamily,
    NoAnswer,
    NotScripted,
    OrgData,
    PlantedTruthDisagrees,
    TaskType,
)
from app.tasks.rulebook import violation_lines
from app.tasks.solving import (
    article_titled,
    case_conversation,
    named_id,
    org_of,
    product_question,
    quoted,
    spec_values,
    today_of,
)

PERSONA = "Service Agent"


NED_QUERIES = (
    "I want to return the {term} I bought {ago}.",
    "There's a problem with the {term} I purchased {ago}.",
    "Can you help me with the {term} I ordered {ago}?",
)
NED_POLICY = (
    "The customer is the contact given. Identify the product they mean: among the products "
    "of their account's Activated orders of that day, the one whose name or description "
    "mentions what they call it. Answer with its Product2 Id."
)


def _mentions(term: str, *texts: str) -> bool:
    pattern = re.compile(rf"\b{re.escape(term)}\b", re.IGNORECASE)
    return any(pattern.search(text) for text in texts)


def draw_named_entity(rng: Random, data: OrgData) -> Draft:
    contact, account, day, product = rng.choice(org_sql.contacts_purchases(data.conn, data.tables))
    bought = org_sql.products_bought_on(data.conn, data.tables, account, day)
    names = {product_id: name for product_id, name, _ in bought}
    term = names[product].split()[-1].lower()  # "the parka", "the cleats"
    matching = [pid for pid, name, text in bought if _mentions(term, name, text)]
    if len(matching) != 1:
        raise Ambiguous
    if matching[0] != product:
        raise PlantedTruthDisagrees(f"{term} on {day} names {matching[0]}, not {product}")
    if rng.random() < 0.5:
        days = rng.randint(2, 13)
        ago, today = f"{days} days ago", day + timedelta(days=days)
    else:
        weeks = rng.randint(1, 8)
        ago = "a week ago" if weeks == 1 else f"{weeks} weeks ago"
        today = day + timedelta(weeks=weeks)
    query = rng.choice(NED_QUERIES).format(term=term, ago=ago)
    policy = f"Contact Id: {contact}\n{NED_POLICY}"
    params = {"contact": contact, "day": day, "term": term}
    return Draft(matching[0], query, today, policy, "", params)


PVI_QUERIES = (
    "Review case {case}: did the agent violate a company policy?",
    "Check how case {case} was handled. Was any policy breached?",
    "Did the agent's handling of case {case} go against our policies?",
)
PVI_POLICY = (
    "Read the case's chat transcripts and e-mails and compare what the agent did with the "
    "policies in the knowledge base. Answer with the Id of the Knowledge__kav article whose "
    "policy was violated, or None if the case was handled within policy."
)
COMPLIANT_SHARE = 0.3  # of the drawn cases, those handled within policy (answer None)


def draw_policy_violation(rng: Random, data: OrgData) -> Draft:
    with_conversation = org_sql.cases_with_conversation(data.conn, data.tables)
    violations = data.truth().violations
    violated = [case for case in with_conversation if case in violations]
    compliant = [case for case in with_conversation if case not in violations]
    if len(violated) != len(violations):
        missing = sorted(set(violations) - set(violated))[:3]
        raise PlantedTruthDisagrees(f"cases with planted violations lack conversations: {missing}")
    pool = compliant if rng.random() < COMPLIANT_SHARE else violated
    if not pool:
        raise NoAnswer
    case = rng.choice(pool)
    answer = violations.get(case)
    if answer is not None and answer not in org_sql.online_articles(data.conn, data.tables):
        raise PlantedTruthDisagrees(f"the article {answer} violated in {case} is not published")
    query = rng.choice(PVI_QUERIES).format(case=case)
    today = org_sql.case_closed_or_created(data.conn, data.tables, case).date()
    return Draft(answer, query, today, PVI_POLICY, "", {"case": case})


@dataclass(frozen=True)
class Fact:
    """A figure an article states: the questions that ask for it, the answer, and the words of
    the article's summary that state it. A policy figure (`param`) is the one the generator
    drew for the org; the others are fixed words of the knowledge base."""

    name: str
    questions: tuple[str, ...]
    answer: str  # formatted with {value}, the policy figure
    evidence: str  # formatted with {value}: must be in a published article's summary
    param: str | None = None


FACTS = (
    Fact(
        "return window",
        (
            "Within how many days of delivery can unworn items be returned for a full refund?",
            "How long do customers have to return an unworn item for a refund?",
        ),
        "{value} days",
        "within {value} days of delivery",
        "return_window_days",
    ),
    Fact(
        "goodwill limit",
        (
            "What is the largest goodwill credit an agent may issue per case without approval?",
            "Up to how much goodwill credit can an agent give on one case?",
        ),
        "${value}",
        "up to ${value} per case",
        "goodwill_limit",
    ),
    Fact(
        "price adjustment window",
        (
            "Within how many days of purchase can a customer request a price adjustment?",
            "How long after buying can a customer ask for a price adjustment?",
        ),
        "{value} days",
        "within {value} days of purchase",
        "price_adjust_days",
    ),
    Fact(
        "defect window",
        (
            "Within how many days of delivery must a defect be reported for a free replacement?",
            "How long do customers have to report a defect and get a free replacement?",
        ),
        "{value} days",
        "within {value} days of delivery qualify",
        "defect_days",
    ),
    Fact(
        "warranty",
        (
            "How long is the limited warranty against manufacturing defects?",
            "How many months does the limited warranty cover?",
        ),
        "{value} months",
        "{value}-month limited warranty",
        "warranty_months",
    ),
    Fact(
        "shipping delay",
        (
            "How many business days late must a package be before the shipping fee is refunded?",
            "When is the shipping fee refunded for a late package?",
        ),
        "{value} business days late",
        "more than {value} business days late",
        "delay_days",
    ),
    Fact(
        "cancellation window",
        (
            "Within how many hours of being placed can an order be canceled?",
            "How long after ordering can a customer cancel an order that has not shipped?",
        ),
        "{value} hours",
        "within {value} hours of being placed",
        "cancel_hours",
    ),
    Fact(
        "points per dollar",
        (
            "How many loyalty points do members earn per dollar?",
            "What is the loyalty points earning rate per dollar spent?",
        ),
        "{value} points per dollar",
        "earn {value} points per dollar",
        "points_per_dollar",
    ),
    Fact(
        "points expiry",
        (
            "After how many months without a purchase do loyalty points expire?",
            "When do unused loyalty points expire?",
        ),
        "{value} months without a purchase",
        "expire after {value} months without a purchase",
        "points_expire_months",
    ),
    Fact(
        "gold status",
        ("How many points a year earn Gold loyalty status?",),
        "{value} points a year",
        "Gold status is earned at {value} points a year",
        "gold_points",
    ),
    Fact(
        "free shipping",
        ("Above what order total is standard shipping free?",),
        "orders over ${value}",
        "free on orders over ${value}",
        "free_shipping_threshold",
    ),
    Fact(
        "recycling points",
        ("How many loyalty points does each pair of shoes dropped off for recycling earn?",),
        "50 loyalty points",
        "Each pair earns 50 loyalty points",
    ),
    Fact(
        "recycling limit",
        ("How many pairs of shoes a month can earn recycling points?",),
        "up to 4 pairs a month",
        "up to 4 pairs a month",
    ),
    Fact(
        "tracking delay",
        ("How long can a tracking link take to show the first scan?",),
        "up to 24 hours",
        "up to 24 hours to show the first scan",
    ),
    Fact(
        "promo codes",
        ("How many promo codes can be used on one order?",),
        "one promo code per order",
        "Only one promo code can be used per order",
    ),
    Fact(
        "support hours",
        ("When is customer support available by chat and phone?",),
        "6 a.m. to 9 p.m. Pacific, seven days a week",
        "6 a.m. to 9 p.m. Pacific, seven days a week",
    ),
    Fact(
        "standard shipping time",
        ("How long does standard shipping take?",),
        "5-7 business days",
        "Standard shipping takes 5-7 business days",
    ),
    Fact(
        "student discount",
        ("What discount do verified students and military members get?",),
        "10% off full-price items",
        "get 10% off full-price items",
    ),
    Fact(
        "password reset",
        ("How long is a password reset link valid?",),
        "60 minutes",
        "valid for 60 minutes",
    ),
    Fact(
        "pickup hold",
        ("How long are store pickup orders held?",),
        "7 days",
        "orders are held for 7 days",
    ),
    Fact(
        "apparel sizes",
        ("What range of sizes does the apparel come in?",),
        "XS to XXL",
        "comes in XS to XXL",
    ),
    Fact(
        "shipping area",
        ("Where do we ship orders?",),
        "only within the United States, including Alaska, Hawaii and APO/FPO addresses",
        "ship only within the United States, including Alaska, Hawaii and APO/FPO addresses",
    ),
)


# A product's figures its category's care guide tabulates (app.seeding.generate.knowledge):
# the column of the table -> the questions that ask for it ({product}: the product's name).
SPEC_QUESTIONS = {
    "Weight": ("How much does the {product} weigh?", "What is the weight of the {product}?"),
    "Made in": (
        "In which country is the {product} made?",
        "Where is the {product} manufactured?",
    ),
    "Introduced": (
        "In what year was the {product} introduced?",
        "When was the {product} first introduced?",
    ),
}
POLICY_FACT_SHARE = 0.25  # of the draws, those asking a policy or FAQ figure (FACTS)


def draw_knowledge_qa(rng: Random, data: OrgData) -> Draft:
    """A figure a policy or an FAQ states, or one a care guide's table gives for a product."""
    if rng.random() >= POLICY_FACT_SHARE:
        return _draw_product_spec(rng, data)
    fact = rng.choice(FACTS)
    value = data.truth().policy_params[fact.param] if fact.param else None
    evidence = fact.evidence.format(value=value)
    summaries = org_sql.online_articles(data.conn, data.tables).values()
    if not any(evidence in summary for summary in summaries):
        raise PlantedTruthDisagrees(f"no published article says {evidence!r}")
    # One today for every draw: a question is asked once.
    _, last = org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")
    question = rng.choice(fact.questions)
    answer = fact.answer.format(value=value)
    return Draft(answer, question, last, "", "", {"fact": fact.name})


def _draw_product_spec(rng: Random, data: OrgData) -> Draft:
    specs = data.truth().product_specs
    product = rng.choice(sorted(specs))
    column = rng.choice(tuple(SPEC_QUESTIONS))
    name = data.product_name(product)
    value = specs[product][column.lower()]
    guides = data.remembered(
        "answers", lambda conn, tables: org_sql.online_articles(conn, tables, "FAQ_Answer__c")
    )
    stated = {found for text in guides.values() for found in spec_values(text, name, column)}
    if stated != {value}:
        raise PlantedTruthDisagrees(f"the care guides state {stated} as the {column} of {name}")
    _, last = org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")
    question = rng.choice(SPEC_QUESTIONS[column]).format(product=name)
    return Draft(value, question, last, "", "", {"fact": column, "product": product})


# --- the reference solvers --------------------------------------------------------------------

_BOUGHT = re.compile(r"the (\S+) I (?:bought|purchased|ordered) (a|\d+) (days?|weeks?) ago")
_CONTACT = re.compile(r"Contact Id: (003[0-9A-Za-z]{15})")


def solve_named_entity(api: Api, task: dict[str, Any]) -> str:
    bought, contact = _BOUGHT.search(task["query"]), _CONTACT.search(task["metadata"]["required"])
    if bought is None or contact is None:
        raise NotScripted("the task names no purchase or no contact")
    count = 1 if bought[2] == "a" else int(bought[2])
    days = count * (7 if bought[3].startswith("week") else 1)
    day = today_of(task) - timedelta(days=days)
    (account,) = api.query(f"SELECT AccountId FROM Contact WHERE Id = {quoted(contact[1])}")
    items = api.query(
        "SELECT Product2Id, Product2.Name, Product2.Description FROM OrderItem WHERE "
        f"Order.AccountId = {quoted(account['AccountId'])} AND Order.Status = 'Activated' "
        f"AND Order.EffectiveDate = {day.isoformat()}"
    )
    word = re.compile(rf"\b{re.escape(bought[1])}\b", re.IGNORECASE)
    found = {
        item["Product2Id"]
        for item in items
        if word.search(item["Product2"]["Name"] or "")
        or word.search(item["Product2"]["Description"] or "")
    }
    if len(found) != 1:
        raise NotScripted(f"{len(found)} products fit {bought[1]!r}")
    return str(found.pop())


def solve_policy_violation(api: Api, task: dict[str, Any]) -> str:
    if org_of(api) != "original":
        raise ForAnotherFamily("a Pro org's case: its resolution is read against its policy")
    texts = case_conversation(api, named_id(task, "500", "case"))
    broken = {title for title, line in violation_lines() for text in texts if line.search(text)}
    if not broken:
        return "None"
    if len(broken) > 1:
        raise NotScripted(f"lines of {len(broken)} policies are broken")
    return article_titled(api, broken.pop())


def solve_knowledge_qa(api: Api, task: dict[str, Any]) -> str:
    spec = _product_spec(api, task["query"])
    if spec is not None:
        return spec
    fact = next((fact for fact in FACTS if task["query"] in fact.questions), None)
    if fact is None:
        raise ForAnotherFamily("the question is not in the original org's rulebook")
    # A figure: digits (with separators) up to its last digit, else the shortest word; a lazy
    # word alone would stop after one character where the evidence ends with the figure.
    figure = r"(\d[\d,.]*\d|\d|\S+?)"
    pattern = re.compile(figure.join(re.escape(part) for part in fact.evidence.split("{value}")))
    for row in api.query("SELECT Summary FROM Knowledge__kav WHERE PublishStatus = 'Online'"):
        stated = pattern.search(row["Summary"] or "")
        if stated is not None:
            value = stated[1] if pattern.groups else None
            return fact.answer.format(value=value)
    raise NotScripted("no article states it")


def _product_spec(api: Api, query: str) -> str | None:
    """The figure a care guide's table gives for the product a question names (None: the
    question asks no product's figure)."""
    for column, questions in SPEC_QUESTIONS.items():
        for question in questions:
            named = product_question(question).fullmatch(query)
            if named is None:
                continue
            product = named["product"]
            stated = {
                value
                for row in api.query(
                    "SELECT FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
                )
                for value in spec_values(row["FAQ_Answer__c"] or "", product, column)
            }
            if len(stated) != 1:
                raise NotScripted(f"the articles state {len(stated)} {column} values of {product}")
            return stated.pop()
    return None


TASK_TYPES = (
    # The Pro orgs ask it too: their contacts' accounts have Activated orders in the same shape.
    TaskType(
        name="named_entity_disambiguation",
        skill=TEXT,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_named_entity,
        solve=solve_named_entity,
        orgs=EVERY_ORG,
        external_facing=True,
    ),
    # The Pro orgs' own, of the same names: app.tasks.pro.service_agent.
    TaskType(
        name="policy_violation_identification",
        skill=POLICY,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_policy_violation,
        solve=solve_policy_violation,
        orgs=ORIGINAL,
    ),
    TaskType(
        name="knowledge_qa",
        skill=TEXT,
        persona=PERSONA,
        reward_metric="fuzzy_match",
        draw=draw_knowledge_qa,
        solve=solve_knowledge_qa,
        orgs=ORIGINAL,
        external_facing=True,
    ),
)
