"""Deterministic generators of the CRMArena-Pro orgs: `b2b` (equipment and software sold to
companies) and `b2c` (consumer goods sold to people).

`generate(org, seed)` returns every record of the org, keyed by sObject name, with the exact
record counts of the published Pro orgs, plus the latent truth behind them (agent skills,
territory map, approval thresholds, conversion factors, injected violations). Same seed, same
records. seed/README.md maps the latent patterns to the Pro tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.seeding.generate.records import Records
from app.seeding.pro.activities import build_activities
from app.seeding.pro.catalog import build_catalog
from app.seeding.pro.insights import plant_insights
from app.seeding.pro.people import build_people, customer_records
from app.seeding.pro.profile import B2B, B2C, PROFILES, OrgProfile
from app.seeding.pro.sales import build_sales
from app.seeding.pro.service import (
    add_spec_sheets,
    build_knowledge,
    build_service,
    issue_specs,
)

__all__ = ["GeneratedProOrg", "ProLatentTruth", "generate", "generate_b2b_org", "generate_b2c_org"]


@dataclass(frozen=True)
class ProLatentTruth:
    """The hidden variables behind the records, for building and checking Pro tasks."""

    sales_skill: dict[str, float]  # sales agent User Id -> 0..1 (wins, accepted quotes)
    conversion_factor: dict[str, float]  # sales agent User Id -> lead conversion odds factor
    cycle_factor: dict[str, float]  # sales agent User Id -> sales cycle length factor
    territory_states: dict[str, tuple[str, ...]]  # Territory2 Id -> state codes
    territory_factor: dict[str, float]  # Territory2 Id -> lead conversion odds factor
    auto_approve_discount: float  # quote discounts above this need review
    max_discount: float  # quote discounts above this must be rejected
    policy_articles: dict[str, str]  # policy key -> Knowledge__kav Id
    approval_violations: dict[str, str]  # Quote Id -> Knowledge__kav Id (discount policy)
    config_violations: dict[str, str]  # Quote Id -> Knowledge__kav Id (product config rules)
    wrong_stages: dict[str, str]  # Opportunity Id -> the stage its activity shows
    stray_tasks: dict[str, list[str]]  # Opportunity Id -> 'Not Started' tasks of another stage
    lead_failing_factors: dict[str, tuple[str, ...]]  # Lead Id (with calls) -> failing BANT
    lead_states: dict[str, str]  # Lead Id -> state code (routing)
    case_violations: dict[str, str]  # Case Id -> Knowledge__kav Id
    service_skill: dict[str, float]  # service agent User Id -> 0..1
    service_specialties: dict[str, tuple[str, ...]]  # service agent User Id -> issue names
    product_specs: dict[str, dict[str, str]]  # Product2 Id -> column -> what its sheet states
    deal_insights: dict[str, str]  # Opportunity Id -> the concern its customer raised on a call


@dataclass(frozen=True)
class GeneratedProOrg:
    records: Records
    truth: ProLatentTruth


def generate(org: str, seed: int) -> GeneratedProOrg:
    profile: OrgProfile = PROFILES[org]
    issue_names = [issue["name"] for issue in issue_specs(profile)]
    people = build_people(profile.rng(seed, "people"), profile, issue_names)
    catalog = build_catalog(profile.rng(seed, "catalog"), profile, issue_names)
    knowledge = build_knowledge(profile.rng(seed, "knowledge"), profile, catalog)
    specs = add_spec_sheets(profile.rng(seed, "product-specs"), profile, knowledge, catalog)
    sales = build_sales(profile.rng(seed, "sales"), profile, people, catalog)
    accounts, contacts = customer_records(profile.rng(seed, "customers"), people)
    activities = build_activities(profile.rng(seed, "activities"), profile, people, catalog, sales)
    insights = plant_insights(
        profile.rng(seed, "insights"),
        profile,
        catalog,
        sales.deals,
        activities.calls,
        activities.emails,
    )
    service = build_service(
        profile.rng(seed, "service"), profile, people, catalog, sales, knowledge
    )
    # E-mail ids follow the order the messages were sent, cases and deals alike.
    drafts = sorted(
        [*activities.emails, *service.emails],
        key=lambda e: (e["MessageDate"], e["RelatedToId"], e["Subject"], e["FromAddress"]),
    )
    emails = [{"Id": profile.id("EmailMessage", n), **e} for n, e in enumerate(drafts, start=1)]
    records: Records = {
        "User": people.users,
        "Territory2": people.territory_records,
        "UserTerritory2Association": people.associations,
        "Account": accounts,
        "Contact": contacts,
        "Issue__c": service.issues,
        "Knowledge__kav": knowledge.records,
        **catalog.records,
        **sales.records,
        "Task": activities.tasks,
        "Event": activities.events,
        "VoiceCallTranscript__c": activities.calls,
        "Case": service.cases,
        "CaseHistory__c": service.history,
        "LiveChatTranscript": service.chats,
        "EmailMessage": emails,
    }
    discount_article = knowledge.policies["discount_approval"]
    truth = ProLatentTruth(
        sales_skill={a.id: a.skill for a in people.sales},
        conversion_factor={a.id: a.conversion_factor for a in people.sales},
        cycle_factor={a.id: a.cycle_factor for a in people.sales},
        territory_states={t.id: t.states for t in people.territories},
        territory_factor={t.id: t.conversion_factor for t in people.territories},
        auto_approve_discount=profile.auto_approve_discount,
        max_discount=profile.max_discount,
        policy_articles=dict(knowledge.policies),
        approval_violations=dict.fromkeys(sales.approval_violations, discount_article),
        config_violations={
            quote: knowledge.product_articles[product]
            for quote, product in sales.config_violations.items()
        },
        wrong_stages=dict(sales.wrong_stages),
        stray_tasks=activities.stray_tasks,
        lead_failing_factors=activities.lead_factors,
        lead_states={lead.id: lead.state for lead in sales.leads},
        case_violations=service.violations,
        service_skill={a.id: a.skill for a in people.service},
        service_specialties={a.id: tuple(sorted(a.specialties)) for a in people.service},
        product_specs=specs,
        deal_insights=insights,
    )
    return GeneratedProOrg(records=records, truth=truth)


def generate_b2b_org(seed: int) -> dict[str, list[dict[str, Any]]]:
    """sObject API name -> records in ordinal order (record i has Id make_id(prefix, i + 1))."""
    return generate(B2B.org, seed).records


def generate_b2c_org(seed: int) -> dict[str, list[dict[str, Any]]]:
    return generate(B2C.org, seed).records
