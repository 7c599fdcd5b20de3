"""What the original org's generator (app/seeding/generate) and the Pro orgs' (app/seeding/pro)
share: the agent, product and case plan that each org's own kind extends, the Case and
LiveChatTranscript records a case plan gives, and the steps of settling cases that both orgs
take alike.

This module stands below both packages and imports neither, so each can build on it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from random import Random
from typing import Any, Protocol

from app.storage.ids import make_id

# The standard profiles every org has (app.seeding.standard_records writes them), by name and
# whether they see and change all data; ordinals 1-3 are the admin's, the sales reps' and the
# service agents', which the generators give their users.
PROFILE_PREFIX = "00e"
PROFILES = (
    ("System Administrator", True),
    ("Custom: Sales Profile", False),
    ("Custom: Support Profile", False),
    ("Standard User", False),
)
ADMIN_PROFILE, SALES_PROFILE, SERVICE_PROFILE = (make_id(PROFILE_PREFIX, n) for n in (1, 2, 3))
# The catalog every product category belongs to (a category's CatalogId is never null);
# ProductCatalog is not among the orgs' objects, so only its id, with the standard prefix.
CATALOG_ID = make_id("0ZS", 1)


@dataclass(frozen=True)
class Person:
    """Someone of the org, with a name and an e-mail address: an agent or a contact."""

    first: str
    last: str
    email: str

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(frozen=True, kw_only=True)
class Agent(Person):
    """A User who works the org's cases or deals."""

    index: int  # in the org's list of agents of its kind
    id: str
    hired: date
    skill: float  # 0 (novice) .. 1 (expert)
    specialties: frozenset[str] = frozenset()  # issue names the agent is routed more of


@dataclass(frozen=True, kw_only=True)
class Contact(Person):
    """A customer's Contact: a person account's own, or one of a business account's."""

    id: str
    customer: int  # index into the org's customers


@dataclass(frozen=True)
class Product:
    """A Product2 of the catalog, with what drives its cases."""

    index: int
    id: str
    name: str
    category: int  # index into the catalog's categories
    popularity: float  # how often it is bought
    dominant_issue: str  # the issue its cases lean to
    peak_months: Collection[int]  # when its cases peak


@dataclass
class CasePlan:
    """A case's timeline: when it opens, for whom, about what and who owns it; settling the
    plans fills in how each went (status, close, transfer, origin, chat, e-mail count)."""

    index: int
    id: str
    created: datetime
    customer: int  # index into the org's customers
    contact: int  # index into the org's contacts
    issue: int  # index into the org's issues
    priority: str
    first_owner: int  # index into the agents who work cases
    assigned: datetime
    owner: int
    status: str = "Closed"
    closed: datetime | None = None
    end: datetime = datetime.min  # last activity: ClosedDate, or the latest follow-up if open
    transfer: tuple[datetime, int] | None = None
    chat: bool = False
    origin: str = "Email"
    emails: int = 0
    context: dict[str, Any] = field(default_factory=dict)  # the facts its texts may quote

    def owner_at(self, at: datetime) -> int:
        if self.transfer and at >= self.transfer[0]:
            return self.transfer[1]
        return self.first_owner


class Correspondent(Protocol):
    """Who writes, chats or is written to: an agent or a customer contact."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def email(self) -> str: ...


def case_record(
    plan: CasePlan,
    *,
    contact_id: str,
    account_id: str,
    owner_id: str,
    item_id: str,
    issue_id: str,
) -> dict[str, Any]:
    """The Case of a settled plan whose context holds its subject and description."""
    return {
        "Id": plan.id,
        "Subject": plan.context["subject"],
        "Description": plan.context["description"],
        "Status": plan.status,
        "Priority": plan.priority,
        "Origin": plan.origin,
        "ContactId": contact_id,
        "AccountId": account_id,
        "OwnerId": owner_id,
        "CreatedDate": plan.created,
        "ClosedDate": plan.closed,
        "OrderItemId__c": item_id,
        "IssueId__c": issue_id,
    }


def transcript_record(
    transcript_id: str,
    visitor_id: str,
    plan: CasePlan,
    said: Sequence[tuple[datetime, bool, str]],
    agent: Correspondent,
    contact: Correspondent,
    *,
    account_id: str,
    owner_id: str,
) -> dict[str, Any]:
    """The LiveChatTranscript of a case's chat: what was `said` (when, whether by the agent,
    the words) between the agent and the contact."""
    body = "\n".join(
        f"[{at:%Y-%m-%dT%H:%M:%S}] "
        + (f"{agent.name} (Agent): " if by_agent else f"{contact.name} (Customer): ")
        + words
        for at, by_agent, words in said
    )
    return {
        "Id": transcript_id,
        "CaseId": plan.id,
        "AccountId": account_id,
        "ContactId": contact.id,
        "LiveChatVisitorId": visitor_id,
        "OwnerId": owner_id,
        "Body": body,
        "StartTime": said[0][0],
        "EndTime": said[-1][0],
        "Status": "Completed",
        "CreatedDate": said[-1][0],
    }


def weighted_key(rng: Random, weights: dict[str, float]) -> str:
    """A key of `weights` drawn by its weight (a case's priority by its issue's odds)."""
    keys = sorted(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def reopen(
    rng: Random,
    plans: Sequence[CasePlan],
    chosen: Iterable[int],
    statuses: Sequence[str],
    weights: Sequence[float],
) -> None:
    """The chosen plans stay open, each in one of the open `statuses`."""
    for k in chosen:
        plans[k].status = rng.choices(statuses, weights=weights)[0]


def transfer_target(
    rng: Random, agents: Sequence[Agent], plan: CasePlan, issue: str, boost: float
) -> int:
    """Who a case is transferred to: an agent on staff the day it opened, other than its first
    owner, preferably a skilled one and a specialist in its issue (`boost` times the weight)."""
    staff = [a for a in agents if a.hired <= plan.created.date() and a.index != plan.first_owner]
    weights = [(a.skill**2 + 0.05) * (boost if issue in a.specialties else 1.0) for a in staff]
    return rng.choices(staff, weights=weights)[0].index


@dataclass(frozen=True)
class HandleTimes:
    """How long an org's cases take."""

    noise: float  # sigma of the lognormal factor on a closed case's expected handle minutes
    bounds: tuple[float, float]  # the shortest and the longest handle time, in minutes
    open_minutes: tuple[int, int]  # how long an open case has gone on, at least and at most
    latest: datetime = datetime.max  # no case ends after this


def close_case(
    rng: Random, plan: CasePlan, expected: float, slowdown: float, times: HandleTimes
) -> None:
    """When a closed case closed, its handle time drawn around the `expected` minutes (times
    `slowdown`: a transfer's); or how long an open case has gone on."""
    if plan.status != "Closed":
        plan.end = min(
            plan.created + timedelta(minutes=rng.randint(*times.open_minutes)), times.latest
        )
        return
    minutes = expected * rng.lognormvariate(0.0, times.noise) * slowdown
    low, high = times.bounds
    closed = plan.created + timedelta(seconds=int(min(max(minutes, low), high) * 60))
    plan.closed = plan.end = min(closed, times.latest)
