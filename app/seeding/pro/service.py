"""The service side: Issue__c, Knowledge__kav, Case, CaseHistory__c, LiveChatTranscript and the
cases' EmailMessage threads.

Cases are about order items the customer actually received (an Activated order): a product's
cases lean to its dominant issue and peak in its peak months (top_issue_identification,
monthly_trend_analysis); agents get more cases of their specialties (case_routing); handle
time follows agent skill and a per-state service factor (handle_time, best_region); a few
resolutions break the issue's policy article (policy_violation_identification).

Knowledge articles: the org's policies (quote approval, configuration, BANT qualification,
contracts, ...) with the latent numbers filled in, an article per product (its configuration
rules: quantity limit and exclusions), per issue (troubleshooting and resolution policy) and
per category, and general FAQs.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from random import Random
from typing import Any

from app.seeding import common
from app.seeding.generate.case_records import history_records
from app.seeding.generate.conversations import email_record
from app.seeding.generate.knowledge import article_record
from app.seeding.generate.records import Record
from app.seeding.generate.sampling import between, moment, spaced_times, spread, weighted_sample
from app.seeding.generate.text import fill, load_text, long_date, money
from app.seeding.pro.catalog import Catalog, Product
from app.seeding.pro.people import Agent, People
from app.seeding.pro.profile import LAST_DAY, NOW, ORG_CREATED, VISITOR_PREFIX, OrgProfile
from app.seeding.pro.sales import Sales
from app.storage.ids import make_id

OPEN_STATUSES, OPEN_WEIGHTS = ("New", "Working", "Escalated"), (0.3, 0.5, 0.2)
SPECIALTY_BOOST, DOMINANT_ISSUE_BOOST, PEAK_BOOST = 5.0, 4.0, 2.5
TRANSFER_SPECIALTY_BOOST = 3.0  # a transferred case goes preferably to a specialist
MAX_CASE_EMAILS = 8
# No case ends after now, nor before ten minutes after its assignment (`_settle`).
HANDLE_TIMES = common.HandleTimes(noise=0.3, bounds=(15, 2400), open_minutes=(60, 2400), latest=NOW)


@dataclass
class Knowledge:
    records: list[Record]
    policies: dict[str, str]  # policy key -> Knowledge__kav Id
    product_articles: dict[int, str]  # product index -> its configuration article
    issue_articles: dict[str, str]  # issue name -> its resolution policy article
    overviews: dict[int, Record] = field(
        default_factory=dict
    )  # product index -> its sheet's article


@dataclass(kw_only=True)
class CasePlan(common.CasePlan):
    item: Record  # the OrderItem the case is about
    product: int
    violated: bool = False  # its resolution breaks the issue's policy


@dataclass
class Service:
    issues: list[Record]
    knowledge: Knowledge
    cases: list[Record] = field(default_factory=list)
    history: list[Record] = field(default_factory=list)
    chats: list[Record] = field(default_factory=list)
    emails: list[Record] = field(default_factory=list)  # without Ids
    violations: dict[str, str] = field(default_factory=dict)  # Case Id -> Knowledge__kav Id


def issue_specs(profile: OrgProfile) -> list[dict[str, Any]]:
    issues: list[dict[str, Any]] = load_text("service", profile.org)["issues"]
    if len(issues) != profile.counts["Issue__c"]:
        raise ValueError(
            f"{profile.org} service.yaml must define {profile.counts['Issue__c']} issues"
        )
    return issues


Draft = tuple[str, str | int, dict[str, Any]]  # (family, key, article template)


def build_knowledge(rng: Random, profile: OrgProfile, catalog: Catalog) -> Knowledge:
    text = load_text("knowledge", profile.org)
    issues = issue_specs(profile)
    params = {
        "auto_discount": f"{profile.auto_approve_discount:g}",
        "max_discount": f"{profile.max_discount:g}",
        "validity_days": profile.quote_validity_days,
    }
    drafts: list[Draft] = [
        *(("policy", spec["key"], spec) for spec in text["policies"]),
        *_product_drafts(text, catalog),
        *_issue_drafts(text, issues),
        *_category_drafts(text, catalog),
        *(("faq", spec["title"], spec) for spec in text["faqs"]),
    ]
    if len(drafts) != profile.counts["Knowledge__kav"]:
        raise ValueError(f"{profile.org} knowledge.yaml yields {len(drafts)} articles")
    written = sorted(
        (ORG_CREATED + timedelta(days=rng.randrange(100), seconds=rng.randrange(86400)), n)
        for n in range(len(drafts))
    )
    knowledge = Knowledge(records=[], policies={}, product_articles={}, issue_articles={})
    used: set[str] = set()
    for ordinal, (created, n) in enumerate(written, start=1):
        family, key, spec = drafts[n]
        article_id = profile.id("Knowledge__kav", ordinal)
        knowledge.records.append(
            article_record(
                rng,
                article_id,
                created,
                used,
                fill(spec["title"], params),
                fill(spec["summary"], params),
                fill(spec["answer"], params),
            )
        )
        _index_article(knowledge, family, key, article_id)
        # A product's sheet ends its overview, or its only article where it has one.
        if family == "product-info" or (family == "product" and key not in knowledge.overviews):
            knowledge.overviews[int(key)] = knowledge.records[-1]
    return knowledge


def add_spec_sheets(
    rng: Random, profile: OrgProfile, knowledge: Knowledge, catalog: Catalog
) -> dict[str, dict[str, str]]:
    """Each product's specification sheet at the end of its overview, drawn with `rng` (its
    own stream: the rest of the org is the same with or without them); returns Product2 Id ->
    column -> the value the sheet states."""
    sheet = load_text("knowledge", profile.org)["spec_sheet"]
    header = "".join(
        f"<th>{html.escape(name)}</th>"
        for name in ["Product", *(c["name"] for c in sheet["columns"])]
    )
    stated: dict[str, dict[str, str]] = {}
    for product in catalog.products:
        values = {column["name"]: _spec_value(rng, column) for column in sheet["columns"]}
        stated[product.id] = values
        cells = "".join(
            f"<td>{html.escape(cell)}</td>" for cell in (product.name, *values.values())
        )
        knowledge.overviews[product.index]["FAQ_Answer__c"] += (
            f"<h3>{html.escape(sheet['heading'])}</h3>"
            f"<table><tr>{header}</tr><tr>{cells}</tr></table>"
        )
    return stated


def _spec_value(rng: Random, column: dict[str, Any]) -> str:
    if "values" in column:
        return str(rng.choice(column["values"]))
    return str(column["format"]).format(n=rng.randint(*column["range"]))


def _index_article(knowledge: Knowledge, family: str, key: str | int, article_id: str) -> None:
    """Index the articles the org's data refers to: policies, products' configuration rules and
    issues' resolution policies."""
    if family == "policy":
        knowledge.policies[str(key)] = article_id
    elif family == "product":
        knowledge.product_articles[int(key)] = article_id
    elif family == "issue-policy":
        knowledge.issue_articles[str(key)] = article_id


def _product_drafts(text: dict[str, Any], catalog: Catalog) -> list[Draft]:
    """Each product's articles: its configuration rules first, then what else it needs."""
    drafts: list[Draft] = []
    for product in catalog.products:
        category = catalog.categories[product.category]
        excluded = catalog.products[product.excludes].name if product.excludes is not None else None
        context = {
            "product": product.name,
            "category": category["name"],
            "max_quantity": product.max_quantity,
            "price": money(product.price),
            "exclusion": fill(text["exclusion_sentence"], {"other": excluded})
            if excluded
            else text["no_exclusion_sentence"],
        }
        for n, spec in enumerate(text["per_product"]):
            drafts.append(
                ("product" if n == 0 else "product-info", product.index, _filled(spec, context))
            )
    return drafts


def _issue_drafts(text: dict[str, Any], issues: list[dict[str, Any]]) -> list[Draft]:
    """Each issue's articles: its resolution policy first, then its troubleshooting."""
    drafts: list[Draft] = []
    for issue in issues:
        context = {
            "issue": issue["name"],
            "description": issue["description"],
            "steps": _items(issue["steps"]),
            "policy": issue["policy"],
        }
        for n, spec in enumerate(text["per_issue"]):
            drafts.append(
                ("issue-policy" if n == 0 else "issue", issue["name"], _filled(spec, context))
            )
    return drafts


def _category_drafts(text: dict[str, Any], catalog: Catalog) -> list[Draft]:
    drafts: list[Draft] = []
    for category in catalog.categories:
        context = {"category": category["name"], "tips": _items(category["tips"]),
                   "category_lower": category["name"].lower()}  # fmt: skip
        for spec in text["per_category"]:
            drafts.append(("category", category["name"], _filled(spec, context)))
    return drafts


def _items(values: list[str]) -> str:
    return "".join(f"<li>{html.escape(v)}</li>" for v in values)


def _filled(spec: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """Fill the per-item placeholders now and keep the policy ones ({max_discount}) for later."""
    escaped = {k: v if k in ("tips", "steps") else html.escape(str(v)) for k, v in context.items()}
    plain = {k: str(v) for k, v in context.items()}
    keep = _Keep(plain)
    return {
        "title": spec["title"].format_map(keep),
        "summary": spec["summary"].format_map(keep),
        "answer": spec["answer"].format_map(_Keep(escaped)),
    }


class _Keep(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def build_service(
    rng: Random,
    profile: OrgProfile,
    people: People,
    catalog: Catalog,
    sales: Sales,
    knowledge: Knowledge,
) -> Service:
    issues = issue_specs(profile)
    issue_records = [
        {
            "Id": profile.id("Issue__c", n + 1),
            "Name": issue["name"],
            "Description__c": issue["description"],
            "OwnerId": people.admin_id,
            "CreatedDate": ORG_CREATED,
        }
        for n, issue in enumerate(issues)
    ]
    service = Service(issues=issue_records, knowledge=knowledge)
    plans = _plan_cases(rng, profile, people, catalog, sales, issues)
    _settle(rng, profile, people, issues, plans)
    text = load_text("service", profile.org)
    for plan in plans:
        _case_text(rng, profile, people, catalog, issues, plan, text)
        if plan.violated:
            service.violations[plan.id] = knowledge.issue_articles[issues[plan.issue]["name"]]
    service.cases = [_case_record(profile, people, plan) for plan in plans]
    service.history = history_records(plans, [a.id for a in people.service], profile.org)
    for plan in plans:
        if plan.chat:
            service.chats.append(_chat(rng, profile, people, plan, text, len(service.chats) + 1))
        service.emails.extend(_case_emails(rng, people, plan, text))
    return service


def _plan_cases(
    rng: Random,
    profile: OrgProfile,
    people: People,
    catalog: Catalog,
    sales: Sales,
    issues: list[dict[str, Any]],
) -> list[CasePlan]:
    orders = {o["Id"]: o for o in sales.records["Order"]}
    latest = LAST_DAY - timedelta(days=3)
    items = [
        item
        for item in sales.records["OrderItem"]
        if orders[item["OrderId"]]["Status"] == "Activated"
        and orders[item["OrderId"]]["EffectiveDate"] <= latest
    ]
    products = {p.id: p for p in catalog.products}
    weights = [products[item["Product2Id"]].popularity for item in items]
    drafts = [
        (_case_moment(rng, orders[item["OrderId"]], products[item["Product2Id"]], latest), item)
        for item in rng.choices(items, weights=weights, k=profile.counts["Case"])
    ]
    drafts.sort(key=lambda d: d[0])
    account_of = {c.id: c for c in people.customers}
    plans: list[CasePlan] = []
    for index, (created, item) in enumerate(drafts):
        product = products[item["Product2Id"]]
        customer = account_of[orders[item["OrderId"]]["AccountId"]]
        contacts = [k for k in customer.contacts if people.contacts[k].created <= created]
        issue = _case_issue(rng, issues, product)
        owner = _case_owner(rng, people, issues[issue]["name"], created)
        plans.append(
            CasePlan(
                index=index,
                id=profile.id("Case", index + 1),
                created=created,
                customer=customer.index,
                contact=rng.choice(contacts or customer.contacts),
                item=item,
                product=product.index,
                issue=issue,
                priority=common.weighted_key(rng, issues[issue]["priority"]),
                first_owner=owner.index,
                assigned=created + timedelta(seconds=rng.randint(0, 150)),
                owner=owner.index,
            )
        )
    return plans


def _case_moment(rng: Random, order: Record, product: Product, latest: date) -> datetime:
    """When a case about an order's item opens: within 240 days of its delivery, more likely
    in the product's peak months."""
    first: date = order["EffectiveDate"] + timedelta(days=2)
    span = max(0, min((latest - first).days, 240))
    days = [first + timedelta(days=rng.randint(0, span)) for _ in range(3)]
    boost = [PEAK_BOOST if d.month in product.peak_months else 1.0 for d in days]
    return moment(rng, rng.choices(days, weights=boost)[0])


def _case_issue(rng: Random, issues: list[dict[str, Any]], product: Product) -> int:
    """A case's issue: the product's dominant one more likely."""
    weights = [
        issue["weight"] * (DOMINANT_ISSUE_BOOST if issue["name"] == product.dominant_issue else 1.0)
        for issue in issues
    ]
    return rng.choices(range(len(issues)), weights=weights)[0]


def _case_owner(rng: Random, people: People, issue: str, created: datetime) -> Agent:
    """A service agent on staff when the case opened: specialists in its issue more likely."""
    staff = [a for a in people.service if a.hired <= created.date()]
    return rng.choices(
        staff, weights=[SPECIALTY_BOOST if issue in a.specialties else 1.0 for a in staff]
    )[0]


def _settle(
    rng: Random,
    profile: OrgProfile,
    people: People,
    issues: list[dict[str, Any]],
    plans: list[CasePlan],
) -> None:
    """Statuses, transfers, handle times, violations, origins and e-mail counts."""
    age = [math.exp(-(NOW - p.created).days / 400) + 0.02 for p in plans]
    open_cases = weighted_sample(rng, age, len(plans) - profile.closed_cases)
    common.reopen(rng, plans, open_cases, OPEN_STATUSES, OPEN_WEIGHTS)
    agents = people.service
    propensity = [
        0.0 if p.status == "New" else (1.1 - agents[p.first_owner].skill) ** 2 for p in plans
    ]
    transferred = set(weighted_sample(rng, propensity, profile.case_transfers))
    chats = set(rng.sample(range(len(plans)), profile.chats))
    states = sorted(people.state_weights)
    state_factor = {state: rng.lognormvariate(0.0, 0.2) for state in states}
    closed = [k for k, p in enumerate(plans) if p.status == "Closed"]
    violated = set(rng.sample(closed, profile.case_violations))
    for plan in plans:
        slowdown = 1.4 if plan.index in transferred else 1.0
        expected = _expected_minutes(plan, people, issues, state_factor)
        common.close_case(rng, plan, expected, slowdown, HANDLE_TIMES)
        plan.end = max(plan.end, plan.assigned + timedelta(minutes=10))
        plan.violated = plan.index in violated  # closed cases only
        if plan.index in chats:
            plan.chat, plan.origin = True, "Chat"
        else:
            plan.origin = rng.choices(("Email", "Web", "Phone"), weights=(0.55, 0.3, 0.15))[0]
        if plan.index in transferred:
            new = common.transfer_target(
                rng, agents, plan, issues[plan.issue]["name"], TRANSFER_SPECIALTY_BOOST
            )
            at = between(rng, plan.assigned + timedelta(minutes=5), plan.end - timedelta(minutes=2))
            plan.transfer, plan.owner = (at, new), new
    counts = spread(
        rng,
        profile.case_emails,
        [1] * len(plans),
        [3.0 if p.origin in ("Email", "Web") else 1.0 for p in plans],
        MAX_CASE_EMAILS,
    )
    for plan, count in zip(plans, counts, strict=True):
        plan.emails = count


def _expected_minutes(
    plan: CasePlan, people: People, issues: list[dict[str, Any]], state_factor: dict[str, float]
) -> float:
    """A case's handle time before chance: its issue's, its first owner's pace (skill) and its
    customer's state's service."""
    minutes: float = (
        issues[plan.issue]["handle_minutes"]
        * (0.45 + 1.6 * (1.0 - people.service[plan.first_owner].skill))
        * state_factor[people.customers[plan.customer].state]
    )
    return minutes


def _case_text(
    rng: Random,
    profile: OrgProfile,
    people: People,
    catalog: Catalog,
    issues: list[dict[str, Any]],
    plan: CasePlan,
    text: dict[str, Any],
) -> None:
    product = catalog.products[plan.product]
    contact = people.contacts[plan.contact]
    agent = people.service[plan.first_owner]
    issue = issues[plan.issue]
    context = {
        "company": text["company"],
        "product": product.name,
        "quantity": int(plan.item["Quantity"]),
        "order_date": long_date(plan.created.date() - timedelta(days=rng.randint(2, 30))),
        "customer_first": contact.first,
        "customer_name": contact.name,
        "agent_first": agent.first,
        "agent_name": agent.name,
        "account": people.customers[plan.customer].name,
    }
    context["subject"] = fill(rng.choice(issue["subjects"]), context)
    context["description"] = fill(rng.choice(issue["descriptions"]), context)
    context["resolution"] = fill(issue["violation" if plan.violated else "resolution"], context)
    plan.context = context


def _case_record(profile: OrgProfile, people: People, plan: CasePlan) -> Record:
    return common.case_record(
        plan,
        contact_id=people.contacts[plan.contact].id,
        account_id=people.customers[plan.customer].id,
        owner_id=people.service[plan.owner].id,
        item_id=plan.item["Id"],
        issue_id=profile.id("Issue__c", plan.issue + 1),
    )


def _chat(
    rng: Random,
    profile: OrgProfile,
    people: People,
    plan: CasePlan,
    text: dict[str, Any],
    ordinal: int,
) -> Record:
    chat = text["chat"]
    context = plan.context
    turns = [
        (True, rng.choice(chat["agent_greeting"])),
        (False, context["description"]),
        (True, rng.choice(chat["agent_probe"])),
        (False, rng.choice(chat["customer_detail"])),
        (True, context["resolution"]),
        (False, rng.choice(chat["customer_ack"])),
        (True, rng.choice(chat["agent_closing"])),
    ]
    span = min(rng.randint(240, 900), int(0.5 * (plan.end - plan.created).total_seconds()))
    times = spaced_times(
        rng, plan.created, plan.created + timedelta(seconds=max(span, 60)), len(turns)
    )
    return common.transcript_record(
        profile.id("LiveChatTranscript", ordinal),
        make_id(VISITOR_PREFIX, ordinal),
        plan,
        [
            (at, by_agent, fill(said, context))
            for at, (by_agent, said) in zip(times, turns, strict=True)
        ],
        people.service[plan.first_owner],
        people.contacts[plan.contact],
        account_id=people.customers[plan.customer].id,
        owner_id=people.service[plan.owner].id,
    )


def _case_emails(rng: Random, people: People, plan: CasePlan, text: dict[str, Any]) -> list[Record]:
    mail = text["email"]
    customer_first = plan.origin in ("Email", "Web")
    start = (
        plan.created if customer_first else plan.assigned + timedelta(minutes=rng.randint(5, 20))
    )
    start = min(start, plan.end)
    times = spaced_times(rng, start, plan.end, plan.emails)
    contact = people.contacts[plan.contact]
    emails: list[Record] = []
    for n, at in enumerate(times):
        by_agent = (n % 2 == 0) != customer_first
        agent = people.service[plan.owner_at(at)]
        context = plan.context | {"agent_first": agent.first, "agent_name": agent.name}
        subject = plan.context["subject"] if n == 0 else f"RE: {plan.context['subject']}"
        last = n == len(times) - 1
        if by_agent:
            content = (
                plan.context["resolution"] if last or n <= 1 else rng.choice(mail["agent_update"])
            )
            body = (
                f"Hi {contact.first},\n\n{fill(content, context)}\n\n"
                f"{rng.choice(mail['agent_signoff'])}\n{agent.name}\n"
                f"{fill(mail['signature'], context)}"
            )
        else:
            content = (
                plan.context["description"] if n == 0 else rng.choice(mail["customer_followup"])
            )
            body = f"Hello,\n\n{fill(content, context)}\n\nThanks,\n{contact.name}"
        emails.append(
            email_record(
                subject, body, at, by_agent, agent, contact, ParentId=plan.id, RelatedToId=plan.id
            )
        )
    return emails
