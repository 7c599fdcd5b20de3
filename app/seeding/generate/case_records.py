"""Issue__c, Case and CaseHistory__c records from the case plans.

CaseHistory__c is the audit trail the benchmark's handle-time and transfer tools read, so it
is derived from the very same plan as the Case: one 'Case Creation' at CreatedDate, an
'Owner Assignment' per owner (OldValue__c = the previous owner on a transfer) and a
'Case Closed' at ClosedDate.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from random import Random
from typing import Any, Protocol

from app.seeding.common import case_record
from app.seeding.generate.cases import CasePlan
from app.seeding.generate.catalog import Catalog
from app.seeding.generate.orders import Orders
from app.seeding.generate.people import People
from app.seeding.generate.records import ORG_CREATED, Record, record_id
from app.seeding.generate.text import agreement, fill, load_text, long_date, money, pick

# Tie-break order of history events that share a second.
CREATION, ASSIGNMENT, CLOSING = 0, 1, 2


def issue_records(issues: list[dict[str, Any]], owner_id: str) -> list[Record]:
    return [
        {
            "Id": record_id("Issue__c", n + 1),
            "Name": issue["name"],
            "OwnerId": owner_id,
            "CreatedDate": ORG_CREATED,
        }
        for n, issue in enumerate(issues)
    ]


def add_contexts(
    rng: Random,
    plans: list[CasePlan],
    people: People,
    catalog: Catalog,
    orders: Orders,
    issues: list[dict[str, Any]],
    params: dict[str, int],
) -> None:
    """Each case's story, and the facts its messages may mention (product, dates, sizes)."""
    carriers: list[str] = load_text("conversation")["carriers"]
    company: str = load_text("names")["company"]["name"]
    for plan in plans:
        line = orders.lines[plan.line]
        order = orders.orders[line.order]
        product = catalog.products[line.product]
        category = catalog.categories[product.category]
        contact = people.contacts[plan.contact]
        agent = people.agents[plan.first_owner]
        size_ordered, size_received = rng.sample(product.sizes, 2)
        plan.scenario = rng.choice(issues[plan.issue]["scenarios"])
        plan.context = (
            params
            | agreement(product.plural)
            | {
                "company": company,
                "product": product.name,
                "category": category["name"],
                "days_since": (plan.created.date() - order.day).days,
                "order_date": long_date(order.day),
                "price": money(line.unit_price),
                "quantity": int(line.quantity),
                "amount": money(line.unit_price * line.quantity),
                "size_ordered": size_ordered,
                "size_received": size_received,
                "carrier": rng.choice(carriers),
                "late_days": rng.randint(3, 12),
                "points": rng.randint(12, 240) * 10,
                "goodwill_over": params["goodwill_limit"] + rng.choice([25, 50, 75, 100]),
                "customer_first": contact.first,
                "customer_name": contact.name,
                "agent_first": agent.first,
                "agent_name": agent.name,
                "clearance": catalog.pricebooks[order.pricebook].final_sale,
            }
        )


def case_records(rng: Random, plans: list[CasePlan], people: People) -> list[Record]:
    records: list[Record] = []
    for plan in plans:
        subject = pick(rng, plan.scenario["subjects"], plan.context)
        description = fill(plan.scenario["description"], plan.context)
        # The e-mails quote them: the first customer e-mail is the case description.
        plan.context["subject"], plan.context["description"] = subject, description
        case = case_record(
            plan,
            contact_id=people.contacts[plan.contact].id,
            account_id=people.customers[plan.customer].account_id,
            owner_id=people.agents[plan.owner].id,
            item_id=record_id("OrderItem", plan.line + 1),
            issue_id=record_id("Issue__c", plan.issue + 1),
        )
        records.append({**case, "CreatedById": people.admin_id})
    return records


class CaseTimeline(Protocol):
    """What the audit trail needs of a case plan (the original org's or a Pro org's)."""

    index: int
    id: str
    created: datetime
    assigned: datetime
    first_owner: int  # index into the agent ids
    transfer: tuple[datetime, int] | None
    closed: datetime | None


def history_records(
    plans: Sequence[CaseTimeline], agent_ids: Sequence[str], org: str = "original"
) -> list[Record]:
    """The audit trail in event order, so history ids grow with time like the real org's."""
    events: list[tuple[datetime, int, int, str, str | None, str | None]] = []
    for plan in plans:
        first = agent_ids[plan.first_owner]
        events.append((plan.created, plan.index, CREATION, "Case Creation", None, None))
        events.append((plan.assigned, plan.index, ASSIGNMENT, "Owner Assignment", None, first))
        if plan.transfer:
            at, new_owner = plan.transfer
            new = agent_ids[new_owner]
            events.append((at, plan.index, ASSIGNMENT, "Owner Assignment", first, new))
        if plan.closed:
            events.append((plan.closed, plan.index, CLOSING, "Case Closed", None, None))
    events.sort(key=lambda event: event[:3])
    return [
        {
            "Id": record_id("CaseHistory__c", n + 1, org),
            "CaseId__c": plans[case].id,
            "Field__c": field_name,
            "OldValue__c": old,
            "NewValue__c": new,
            "CreatedDate": at,
        }
        for n, (at, case, _, field_name, old, new) in enumerate(events)
    ]
