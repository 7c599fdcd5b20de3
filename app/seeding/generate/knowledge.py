"""Knowledge__kav articles: support policies, FAQs and product-care guides.

The policy numbers (return window, credit limit, ...) are latent parameters picked per seed;
the conversations quote them, and the injected policy violations contradict them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from random import Random
from string import ascii_lowercase, digits
from typing import Any

from app.seeding.generate.catalog import Catalog
from app.seeding.generate.records import Record, record_id
from app.seeding.generate.text import fill, load_text

ARTICLE_COUNT = 45
FIRST_ARTICLE_DAY = date(2019, 10, 1)
ARTICLE_DAYS = 80
URL_ALPHABET = ascii_lowercase + digits


@dataclass(frozen=True)
class Policy:
    key: str
    article_id: str
    window: str | None  # a parameter in days that splits compliant lines within/outside
    applies_when: str  # "any" or "clearance"
    violation_when: str  # "any", "outside" or "clearance"
    compliant: tuple[str, ...]
    compliant_within: tuple[str, ...]
    compliant_outside: tuple[str, ...]
    violation: tuple[str, ...]


@dataclass
class Knowledge:
    params: dict[str, int]
    policies: dict[str, Policy] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    care_guides: dict[str, Record] = field(default_factory=dict)  # category name -> its guide


def _lines(spec: dict[str, Any], key: str) -> tuple[str, ...]:
    return tuple(str(line) for line in spec.get(key, ()))


def build_knowledge(rng: Random) -> Knowledge:
    text = load_text("knowledge")
    params = {name: int(rng.choice(options)) for name, options in text["params"].items()}
    knowledge = Knowledge(params=params)
    drafts: list[tuple[str | None, str, str, str]] = [
        (spec["key"], spec["title"], spec["summary"], spec["answer"]) for spec in text["policies"]
    ]
    drafts += [(None, spec["title"], spec["summary"], spec["answer"]) for spec in text["faqs"]]
    guide = text["care_guide"]
    guides: dict[int, str] = {}  # draft index -> the category it guides
    for category in load_text("catalog")["categories"]:
        name = category["name"]
        guides[len(drafts)] = name
        tips = "".join(f"<li>{html.escape(tip)}</li>" for tip in category["care"])
        context = {"category": name, "category_lower": name.lower()}
        drafts.append(
            (
                None,
                fill(guide["title"], context),
                fill(guide["summary"], context),
                fill(
                    guide["answer"],
                    {k: html.escape(v) for k, v in context.items()} | {"tips": tips},
                ),
            )
        )
    if len(drafts) != ARTICLE_COUNT:
        raise ValueError(f"knowledge.yaml yields {len(drafts)} articles, need {ARTICLE_COUNT}")
    # Articles were written over a few weeks before the first case; ids follow creation order.
    written = sorted(
        (
            datetime.combine(
                FIRST_ARTICLE_DAY + timedelta(days=rng.randrange(ARTICLE_DAYS)),
                time(rng.randint(15, 23), rng.randrange(60), rng.randrange(60)),
            ),
            n,
        )
        for n in range(ARTICLE_COUNT)
    )
    url_names: set[str] = set()
    specs = {spec["key"]: spec for spec in text["policies"]}
    for ordinal, (created, n) in enumerate(written, start=1):
        key, title, summary, answer = drafts[n]
        article_id = record_id("Knowledge__kav", ordinal)
        knowledge.records.append(
            article_record(
                rng,
                article_id,
                created,
                url_names,
                fill(title, params),
                fill(summary, params),
                fill(answer, params),
            )
        )
        if key is not None:
            knowledge.policies[key] = _policy(key, article_id, specs[key])
        if n in guides:
            knowledge.care_guides[guides[n]] = knowledge.records[-1]
    return knowledge


SPEC_FACTS = ("weight", "made in", "introduced")  # the table's columns after the product's name


def add_product_specs(
    rng: Random, knowledge: Knowledge, catalog: Catalog
) -> dict[str, dict[str, str]]:
    """Each care guide's table of its category's products and their figures, drawn with `rng`
    (its own stream: the rest of the org is the same with or without them); returns Product2
    Id -> fact (SPEC_FACTS) -> the value the table states."""
    spec = load_text("knowledge")["product_specs"]
    first_year, last_year = spec["introduced"]
    stated: dict[str, dict[str, str]] = {}
    for category_index, category in enumerate(catalog.categories):
        low, high = spec["weight_grams"][category["name"]]
        rows = []
        for product in catalog.products:
            if product.category != category_index:
                continue
            values = (
                f"{rng.randrange(low, high + 1, 5):,} g",
                str(rng.choice(spec["countries"])),
                str(rng.randint(first_year, last_year)),
            )
            stated[product.id] = dict(zip(SPEC_FACTS, values, strict=True))
            cells = "".join(f"<td>{html.escape(cell)}</td>" for cell in (product.name, *values))
            rows.append(f"<tr>{cells}</tr>")
        header = "".join(f"<th>{html.escape(column)}</th>" for column in spec["columns"])
        article = knowledge.care_guides[category["name"]]
        article["FAQ_Answer__c"] += (
            f"<h3>{html.escape(spec['heading'])}</h3><table><tr>{header}</tr>{''.join(rows)}</table>"
        )
    return stated


def article_record(
    rng: Random,
    article_id: str,
    created: datetime,
    url_names: set[str],
    title: str,
    summary: str,
    answer: str,
) -> Record:
    """A published, validated Knowledge__kav with a UrlName not in `url_names` yet."""
    return {
        "Id": article_id,
        "Title": title,
        "UrlName": _url_name(rng, created, url_names),
        "Summary": summary,
        "FAQ_Answer__c": answer,
        "PublishStatus": "Online",
        "Language": "en_US",
        "ValidationStatus": "Validated",
        "CreatedDate": created,
    }


def _url_name(rng: Random, created: datetime, used: set[str]) -> str:
    """Like the real org's "1726808617-k4dmx": epoch seconds, a dash, five random characters."""
    epoch = int(created.replace(tzinfo=UTC).timestamp())
    while True:
        candidate = f"{epoch}-{''.join(rng.choices(URL_ALPHABET, k=5))}"
        if candidate not in used:
            used.add(candidate)
            return candidate


def _policy(key: str, article_id: str, spec: dict[str, Any]) -> Policy:
    return Policy(
        key=key,
        article_id=article_id,
        window=spec.get("window"),
        applies_when=str(spec.get("applies_when", "any")),
        violation_when=str(spec.get("violation_when", "any")),
        compliant=_lines(spec, "compliant"),
        compliant_within=_lines(spec, "compliant_within"),
        compliant_outside=_lines(spec, "compliant_outside"),
        violation=_lines(spec, "violation"),
    )
