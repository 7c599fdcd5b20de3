"""The Pro orgs' Service Agent tasks (crmarena.md 5.2).

- Solution Violation Identification (`policy_violation_identification`): a closed case's
  resolution, as its chat and e-mails state it, either follows its issue's resolution policy
  or breaks it; the answer is the policy article it breaks, or None. Read from the
  conversation and checked against the violations the generator planted.
- Knowledge QA: what a product's articles state (its quantity limit per quote, the product it
  cannot share a quote with, its list price), read from the articles; the price is checked
  against the standard price book. Named Entity Disambiguation is the original org's type,
  drawn in every org (app.tasks.original.service_agent).

Both have the names of the original org's types: the original org's and these are one type
each, graded alike; each family's solver solves its own orgs' tasks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from random import Random
from typing import Any

from app.tasks import org_sql
from app.tasks.model import (
    ABSTAIN_SHARE,
    POLICY,
    PRO,
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
from app.tasks.rulebook import (
    resolution_policy_title,
    resolutions_stated,
    spec_questions,
    template_pattern,
)
from app.tasks.solving import (
    article_titled,
    case_conversation,
    named_id,
    org_of,
    product_question,
    spec_values,
)

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


@dataclass(frozen=True)
class ProductFact:
    """A fact a product's articles state: the questions that ask it ({product} is the
    product's name), the words that state it (group 1 the value) and the answer."""

    name: str
    questions: tuple[str, ...]
    stated: re.Pattern[str]
    answer: str  # formatted with {value}


PRODUCT_FACTS = (
    ProductFact(
        "quantity limit",
        (
            "How many units of {product} can a single quote include at most?",
            "What is the most units of {product} one quote may hold?",
        ),
        re.compile(r"at most (\d+) units of"),
        "{value} units",
    ),
    ProductFact(
        "exclusion",
        (
            "Which product cannot be on the same quote as {product}?",
            "What can't {product} be combined with on a quote?",
        ),
        re.compile(r"<p>([^<]+?) cannot be (?:quoted|bought) together with this product"),
        "{value}",
    ),
    ProductFact(
        "list price",
        ("What is the list price of {product}?", "How much does one unit of {product} cost?"),
        re.compile(r"(\$[\d,]+\.\d\d) (?:per unit|each)"),
        "{value}",
    ),
)


def fact_value(fact: ProductFact, articles: list[str]) -> str:
    """The value the product's articles state for the fact; NoAnswer where none states it,
    Ambiguous where they state more than one."""
    values = {found[1] for text in articles for found in fact.stated.finditer(text)}
    if not values:
        raise NoAnswer
    if len(values) > 1:
        raise Ambiguous
    return values.pop()


SPEC_SHARE = 0.8  # of the draws, those asking a figure of a product's specification sheet


def draw_knowledge_qa(rng: Random, data: OrgData) -> Draft:
    """A figure a product's specification sheet gives, or a fact its other articles state."""
    if rng.random() < SPEC_SHARE:
        return _draw_spec(rng, data)
    fact = rng.choice(PRODUCT_FACTS)
    names = org_sql.product_names(data.conn, data.tables)
    name = rng.choice(sorted(names))
    value = fact_value(fact, org_sql.product_articles(data.conn, data.tables, name))
    if fact.name == "list price":
        listed = org_sql.list_prices(data.conn, data.tables).get(names[name])
        if listed is None:
            raise NoAnswer  # a retired product, out of the price book: its price is not asked
        if abs(listed - float(value[1:].replace(",", ""))) > 0.005:
            raise PlantedTruthDisagrees(f"{name}'s article says {value}, its price book {listed}")
    _, last = org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")
    question = rng.choice(fact.questions).format(product=name)
    params = {"fact": fact.name, "product": name, "org": data.org}
    return Draft(fact.answer.format(value=value), question, last, "", "", params)


def _draw_spec(rng: Random, data: OrgData) -> Draft:
    specs = data.pro_truth().product_specs
    questions = spec_questions(data.org)
    product = rng.choice(sorted(specs))
    column = rng.choice(tuple(questions))
    name = data.product_name(product)
    value = specs[product][column]
    articles = org_sql.product_articles(data.conn, data.tables, name)
    stated = {found for text in articles for found in spec_values(text, name, column)}
    if stated != {value}:
        raise PlantedTruthDisagrees(f"{name}'s articles state {stated} as its {column}")
    _, last = org_sql.day_span(data.conn, data.tables, "Case", "CreatedDate")
    question = questions[column].format(product=name)
    params = {"fact": column, "product": name, "org": data.org}
    return Draft(value, question, last, "", "", params)


# --- the reference solvers --------------------------------------------------------------------


def solve_policy_violation(api: Api, task: dict[str, Any]) -> str:
    org = org_of(api)
    if org not in PRO:
        raise ForAnotherFamily("the original org's case: its lines are read against policies")
    stated = resolutions_stated(org, case_conversation(api, named_id(task, "500", "case")))
    if len(stated) != 1:
        raise NotScripted(f"the conversation states {len(stated)} resolutions")
    ((issue, breaks),) = stated
    return article_titled(api, resolution_policy_title(org, issue)) if breaks else "None"


def solve_knowledge_qa(api: Api, task: dict[str, Any]) -> str:
    org = org_of(api)
    if org not in PRO:
        raise ForAnotherFamily("the original org's question: its care guides and policies")
    for column, question in spec_questions(org).items():
        named = product_question(question).fullmatch(task["query"])
        if named is not None:
            return _spec(api, column, named["product"])
    for fact in PRODUCT_FACTS:
        for question in fact.questions:
            if template_pattern(question).fullmatch(task["query"]):
                return _product_fact(api, fact, task["query"], question)
    raise NotScripted("the question is not in the rulebook")


def _spec(api: Api, column: str, product: str) -> str:
    """The figure in the column of the product's specification sheet."""
    rows = api.query(
        "SELECT Title, FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
    )
    values = {
        value
        for row in rows
        if row["Title"].startswith(f"{product}: ")
        for value in spec_values(row["FAQ_Answer__c"] or "", product, column)
    }
    if len(values) != 1:
        raise NotScripted(f"the articles of {product} state {len(values)} {column} values")
    return values.pop()


def _product_fact(api: Api, fact: ProductFact, query: str, question: str) -> str:
    """A fact a product's articles state: the product named where the question names it."""
    before, after = question.split("{product}")
    product = query[len(before) : len(query) - len(after)]
    rows = api.query(
        "SELECT Title, FAQ_Answer__c FROM Knowledge__kav WHERE PublishStatus = 'Online'"
    )
    texts = [row["FAQ_Answer__c"] or "" for row in rows if row["Title"].startswith(f"{product}: ")]
    values = {found[1] for text in texts for found in fact.stated.finditer(text)}
    if len(values) != 1:
        raise NotScripted(f"the articles of {product} state {len(values)} values")
    return fact.answer.format(value=values.pop())


TASK_TYPES = (
    TaskType(
        name="policy_violation_identification",
        skill=POLICY,
        persona=PERSONA,
        reward_metric="exact_match",
        answer_kind="ids",
        draw=draw_policy_violation,
        solve=solve_policy_violation,
        orgs=PRO,
    ),
    TaskType(
        name="knowledge_qa",
        skill=TEXT,
        persona=PERSONA,
        reward_metric="fuzzy_match",
        draw=draw_knowledge_qa,
        solve=solve_knowledge_qa,
        orgs=PRO,
        external_facing=True,
    ),
)
