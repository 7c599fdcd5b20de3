"""Users (support agents), person Accounts (customers) and their Contacts.

Latent variables drawn here: each agent's skill (drives handle time and transfers), issue
specialties (drive case routing), workload and hire date; each customer's complaint habit
(how often they open cases) and shopping habit (how often they order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from random import Random
from typing import Any

from app.seeding import common
from app.seeding.generate.records import ORG_CREATED, Record, record_id
from app.seeding.generate.sampling import DaySampler
from app.seeding.generate.text import fill, load_text

USER_COUNT = 152  # one administrator plus 151 agents
ACCOUNT_COUNT = 201
CONTACT_COUNT = 208  # one per person account plus household members of a few accounts
DESK_OPEN_DAY = date(2019, 12, 2)  # the support desk's first day; cases start a month later


@dataclass(frozen=True, kw_only=True)
class Agent(common.Agent):
    """A support agent: every one has two specialties."""

    handle_factor: float  # multiplies a case's handle time: skilled agents are faster
    transfer_propensity: float  # how readily the agent hands a case to someone else
    workload: float  # share of routed cases the agent takes


@dataclass(frozen=True)
class Customer:
    index: int
    account_id: str
    state: str
    contacts: tuple[int, ...]  # indexes into People.contacts; the person contact first
    complaint_habit: float  # how readily this customer opens a case
    shopping_habit: float  # how often this customer orders


@dataclass
class People:
    admin_id: str
    agents: list[Agent]
    customers: list[Customer]
    contacts: list[common.Contact]
    users: list[Record] = field(default_factory=list)
    accounts: list[Record] = field(default_factory=list)
    contact_records: list[Record] = field(default_factory=list)


class NamePool:
    """Hands out full names never used before in the org (agents and customers alike)."""

    def __init__(self, names: dict[str, Any]) -> None:
        self._first: list[str] = list(names["first_names"])
        self._last: list[str] = list(names["last_names"])
        self._used: set[tuple[str, str]] = set()

    def reserve(self, first: str, last: str) -> None:
        self._used.add((first, last))

    def draw(self, rng: Random, last: str | None = None) -> tuple[str, str]:
        while True:
            candidate = (rng.choice(self._first), last or rng.choice(self._last))
            if candidate not in self._used:
                self._used.add(candidate)
                return candidate


def phone_number(rng: Random, area_codes: list[str]) -> str:
    return f"({rng.choice(area_codes)}) 555-{rng.randrange(10000):04d}"


def unique_value(candidate: str, used: set[str], limit: int, domain: str = "") -> str:
    """`candidate` (+ `domain`), or with a number appended to `candidate` if already taken,
    within `limit` characters in all."""
    limit -= len(domain)
    value, suffix = candidate[:limit], 1
    while value + domain in used:
        suffix += 1
        value = candidate[: limit - len(str(suffix))] + str(suffix)
    used.add(value + domain)
    return value + domain


def user_record(
    user_id: str, first: str, last: str, domain: str, hired: date, used: set[str], **fields: Any
) -> Record:
    """An active User with a username and alias unique in `used`; `fields` (the org's own, such
    as Phone or ProfileId) go right after the alias."""
    local = f"{first}.{last}".lower().replace("'", "")
    username = unique_value(local, used, 80, f"@{domain}")
    return {
        "Id": user_id,
        "FirstName": first,
        "LastName": last,
        "Username": username,
        "Email": username,
        "Alias": unique_value((first[0] + last).lower().replace("'", ""), used, 8),
        **fields,
        "IsActive": True,
        "TimeZoneSidKey": "America/Los_Angeles",
        "LocaleSidKey": "en_US",
        "EmailEncodingKey": "UTF-8",
        "LanguageLocaleKey": "en_US",
        "CreatedDate": datetime.combine(hired, time(16, 0)),
    }


def build_people(rng: Random, issue_names: list[str]) -> People:
    names = load_text("names")
    company = names["company"]
    pool = NamePool(names)
    used: set[str] = set()
    admin_first, admin_last = company["admin"]["first"], company["admin"]["last"]
    pool.reserve(admin_first, admin_last)
    admin_id = record_id("User", 1)
    users = [
        user_record(
            admin_id,
            admin_first,
            admin_last,
            company["user_domain"],
            ORG_CREATED.date(),
            used,
            Phone=phone_number(rng, company["agent_area_codes"]),
            ProfileId=common.ADMIN_PROFILE,  # a user has a profile (ProfileId is never null)
        )
    ]
    agents: list[Agent] = []
    late_hires = DaySampler(date(2020, 2, 3), date(2023, 12, 29), lambda _: 1.0)
    for ordinal in range(2, USER_COUNT + 1):
        first, last = pool.draw(rng)
        # Three agents in four staff the desk from the start; the rest join over the years.
        hired = (
            DESK_OPEN_DAY - timedelta(days=rng.randint(0, 120))
            if rng.random() < 0.75
            else late_hires.sample(rng, 1)[0]
        )
        phone = phone_number(rng, company["agent_area_codes"])
        record = user_record(
            record_id("User", ordinal),
            first,
            last,
            company["user_domain"],
            hired,
            used,
            Phone=phone,
            ProfileId=common.SERVICE_PROFILE,
        )
        skill = rng.betavariate(2.2, 2.2)
        agents.append(
            Agent(
                index=len(agents),
                id=record["Id"],
                first=first,
                last=last,
                email=record["Email"],
                hired=hired,
                skill=skill,
                handle_factor=0.45 + 1.6 * (1.0 - skill),
                transfer_propensity=(1.1 - skill) ** 2 * rng.uniform(0.5, 1.5),
                workload=rng.uniform(0.5, 1.5),
                specialties=frozenset(rng.sample(issue_names, 2)),
            )
        )
        users.append(record)
    people = People(admin_id=admin_id, agents=agents, customers=[], contacts=[], users=users)
    _add_customers(rng, people, pool, names)
    return people


def _customer_email(
    rng: Random, first: str, last: str, names: dict[str, Any], used: set[str]
) -> str:
    local = fill(
        rng.choice(names["customer_email_patterns"]),
        {"first": first, "last": last, "initial": first[0], "n": rng.randint(1, 99)},
    )
    return unique_value(local.lower(), used, 80, f"@{rng.choice(names['customer_email_domains'])}")


def _add_customers(rng: Random, people: People, pool: NamePool, names: dict[str, Any]) -> None:
    states: list[dict[str, Any]] = names["states"]
    signups = DaySampler(date(2018, 1, 8), date(2019, 8, 30), lambda _: 1.0)
    emails: set[str] = set()
    # Which accounts are households with a second contact (CONTACT_COUNT - ACCOUNT_COUNT).
    households = set(rng.sample(range(ACCOUNT_COUNT), CONTACT_COUNT - ACCOUNT_COUNT))
    extra_contacts: list[tuple[int, str, str]] = []
    for index in range(ACCOUNT_COUNT):
        first, last = pool.draw(rng)
        state = rng.choices(states, weights=[s["weight"] for s in states])[0]
        email = _customer_email(rng, first, last, names, emails)
        phone = phone_number(rng, state["area_codes"])
        account_id = record_id("Account", index + 1)
        created = datetime.combine(signups.sample(rng, 1)[0], time(rng.randint(14, 23)))
        people.accounts.append(
            {
                "Id": account_id,
                "Name": f"{first} {last}",
                "FirstName": first,
                "LastName": last,
                "PersonEmail": email,
                "Phone": phone,
                "RecordTypeId": None,
                "ShippingCity": rng.choice(state["cities"]),
                "ShippingState": state["code"],
                "OwnerId": people.admin_id,
                "CreatedDate": created,
            }
        )
        contact_indexes = [index]
        if index in households:
            contact_indexes.append(ACCOUNT_COUNT + len(extra_contacts))
            extra_contacts.append((index, last, phone))
        people.customers.append(
            Customer(
                index=index,
                account_id=account_id,
                state=state["code"],
                contacts=tuple(contact_indexes),
                complaint_habit=rng.lognormvariate(0.0, 0.6),
                shopping_habit=rng.lognormvariate(0.0, 0.5),
            )
        )
        _add_contact(people, index, first, last, email, phone, created)
    for customer, last, phone in extra_contacts:
        first, _ = pool.draw(rng, last=last)
        email = _customer_email(rng, first, last, names, emails)
        created = people.accounts[customer]["CreatedDate"] + timedelta(days=rng.randint(1, 60))
        _add_contact(people, customer, first, last, email, phone, created)


def _add_contact(
    people: People, customer: int, first: str, last: str, email: str, phone: str, at: datetime
) -> None:
    contact_id = record_id("Contact", len(people.contacts) + 1)
    people.contacts.append(
        common.Contact(id=contact_id, customer=customer, first=first, last=last, email=email)
    )
    people.contact_records.append(
        {
            "Id": contact_id,
            "AccountId": people.customers[customer].account_id,
            "FirstName": first,
            "LastName": last,
            "Email": email,
            "Phone": phone,
            "OwnerId": people.admin_id,
            "CreatedDate": at,
        }
    )
