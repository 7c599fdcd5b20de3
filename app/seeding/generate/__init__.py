"""Deterministic generator of the CRMArena-like "original" org (Shoes & Clothings).

`generate_original_org(seed)` returns every record of the org as plain Python values, keyed
by sObject name with parents before children. Same seed, same records, on any machine; see
seed/README.md for the latent variables and how they map to the benchmark's tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.seeding.generate.case_records import (
    add_contexts,
    case_records,
    history_records,
    issue_records,
)
from app.seeding.generate.cases import plan_cases
from app.seeding.generate.catalog import build_catalog
from app.seeding.generate.conversations import build_conversations
from app.seeding.generate.knowledge import add_product_specs, build_knowledge
from app.seeding.generate.orders import build_orders
from app.seeding.generate.people import build_people
from app.seeding.generate.records import Records, child_rng
from app.seeding.generate.text import load_text

__all__ = ["GeneratedOrg", "LatentTruth", "generate", "generate_original_org"]


@dataclass(frozen=True)
class LatentTruth:
    """The hidden variables behind the records, for building and checking benchmark tasks."""

    policy_params: dict[str, int]  # e.g. return_window_days -> 45
    policy_articles: dict[str, str]  # policy key -> Knowledge__kav Id
    violations: dict[str, str]  # Case Id -> Id of the Knowledge__kav article it violates
    agent_skill: dict[str, float]  # User Id -> 0..1
    agent_specialties: dict[str, tuple[str, ...]]  # User Id -> issue names
    product_specs: dict[str, dict[str, str]]  # Product2 Id -> fact -> what its care guide states


@dataclass(frozen=True)
class GeneratedOrg:
    records: Records
    truth: LatentTruth


def generate(seed: int) -> GeneratedOrg:
    """The org's records together with the latent truth they were generated from."""
    issues: list[dict[str, Any]] = load_text("issues")["issues"]
    issue_names = [issue["name"] for issue in issues]
    people = build_people(child_rng(seed, "people"), issue_names)
    catalog = build_catalog(child_rng(seed, "catalog"), issue_names)
    knowledge = build_knowledge(child_rng(seed, "knowledge"))
    product_specs = add_product_specs(child_rng(seed, "product-specs"), knowledge, catalog)
    orders = build_orders(child_rng(seed, "orders"), people, catalog)
    plans = plan_cases(child_rng(seed, "cases"), people, catalog, orders, issues)
    text_rng = child_rng(seed, "case-text")
    add_contexts(text_rng, plans, people, catalog, orders, issues, knowledge.params)
    cases = case_records(text_rng, plans, people)
    talk = build_conversations(child_rng(seed, "conversations"), plans, people, issues, knowledge)
    records: Records = {
        "User": people.users,
        "Account": people.accounts,
        "Contact": people.contact_records,
        "Issue__c": issue_records(issues, people.admin_id),
        "Knowledge__kav": knowledge.records,
        "ProductCategory": catalog.records["ProductCategory"],
        "Product2": catalog.records["Product2"],
        "ProductCategoryProduct": catalog.records["ProductCategoryProduct"],
        "Pricebook2": catalog.records["Pricebook2"],
        "PricebookEntry": catalog.records["PricebookEntry"],
        "Order": orders.records["Order"],
        "OrderItem": orders.records["OrderItem"],
        "Case": cases,
        "CaseHistory__c": history_records(plans, [agent.id for agent in people.agents]),
        "EmailMessage": talk.emails,
        "LiveChatTranscript": talk.transcripts,
    }
    truth = LatentTruth(
        policy_params=dict(knowledge.params),
        policy_articles={key: p.article_id for key, p in knowledge.policies.items()},
        violations=talk.violations,
        agent_skill={agent.id: agent.skill for agent in people.agents},
        agent_specialties={a.id: tuple(sorted(a.specialties)) for a in people.agents},
        product_specs=product_specs,
    )
    return GeneratedOrg(records=records, truth=truth)


def generate_original_org(seed: int) -> dict[str, list[dict[str, Any]]]:
    """sObject API name -> records in ordinal order (record i has Id make_id(prefix, i + 1))."""
    return generate(seed).records
