"""Users (an administrator, sales agents, service agents), sales territories and who works
them, and the customers: business accounts with their contacts (B2B) or person accounts with
one contact each (B2C).

Latent variables drawn here: each sales agent's territory, skill (wins and accepted quotes),
conversion factor (lead conversion), cycle factor (sales cycle length) and discount habit;
each territory's conversion factor; each service agent's skill and issue specialties.
Customers created from converted leads are added later by sales.py (`add_customer`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from random import Random
from typing import Any

from app.seeding import common
from app.seeding.generate.people import NamePool, phone_number, unique_value, user_record
from app.seeding.generate.records import Record
from app.seeding.generate.sampling import DaySampler
from app.seeding.generate.text import fill, load_text
from app.seeding.pro.profile import (
    FIRST_DAY,
    ORG_CREATED,
    TERRITORY_MODEL_PREFIX,
    TERRITORY_TYPE_PREFIX,
    OrgProfile,
)
from app.storage.ids import make_id

TERRITORY_MODEL_ID = make_id(TERRITORY_MODEL_PREFIX, 1)
TERRITORY_TYPE_ID = make_id(TERRITORY_TYPE_PREFIX, 1)


@dataclass(frozen=True)
class Territory:
    index: int
    id: str
    name: str
    states: tuple[str, ...]
    conversion_factor: float  # multiplies its agents' lead conversion odds
    agents: tuple[int, ...] = ()  # indexes into People.sales


@dataclass(frozen=True, kw_only=True)
class Agent(common.Agent):
    """A sales agent (skill: wins deals and gets quotes accepted) or a service agent (with
    specialties)."""

    territory: int = -1  # sales agents only
    conversion_factor: float = 1.0  # odds multiplier on converting a lead
    cycle_factor: float = 1.0  # multiplies the length of the agent's sales cycles
    discount_habit: float = 0.0  # chance a quote line gets a discount


@dataclass
class Customer:
    """An account and its contacts (indexes into People.contacts)."""

    index: int
    id: str
    name: str
    state: str
    created: datetime
    size: float  # how much business the account does
    contacts: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Contact(common.Contact):
    created: datetime


@dataclass
class People:
    profile: OrgProfile
    admin_id: str
    sales: list[Agent]
    service: list[Agent]
    territories: list[Territory]
    state_territory: dict[str, int]
    state_weights: dict[str, float]
    area_codes: dict[str, list[str]]
    names: NamePool
    customers: list[Customer] = field(default_factory=list)
    contacts: list[Contact] = field(default_factory=list)
    users: list[Record] = field(default_factory=list)
    associations: list[Record] = field(default_factory=list)
    territory_records: list[Record] = field(default_factory=list)
    emails: set[str] = field(default_factory=set)

    def phone(self, rng: Random, state: str) -> str:
        return phone_number(rng, self.area_codes[state])

    def draw_state(self, rng: Random) -> str:
        states = sorted(self.state_weights)
        return rng.choices(states, weights=[self.state_weights[s] for s in states])[0]


def _agent(index: int, user: Record, hired: date, skill: float, **traits: Any) -> Agent:
    """The agent behind a User record; `traits` are the Agent fields of its kind of agent."""
    return Agent(
        index=index,
        id=user["Id"],
        first=user["FirstName"],
        last=user["LastName"],
        email=user["Email"],
        hired=hired,
        skill=skill,
        **traits,
    )


def build_people(rng: Random, profile: OrgProfile, issue_names: list[str]) -> People:
    names = load_text("names")  # person names are shared with the original org
    company = load_text("company", profile.org)
    geo: dict[str, dict[str, Any]] = company["states"]
    pool = NamePool(names)
    used: set[str] = set()
    admin = company["admin"]
    pool.reserve(admin["first"], admin["last"])
    admin_id = profile.id("User", 1)
    domain = company["user_domain"]
    users: list[Record] = []

    def add_user(
        profile_id: str, first: str, last: str, hired: date, area_codes: list[str]
    ) -> Record:
        record = user_record(
            profile.id("User", len(users) + 1),
            first,
            last,
            domain,
            hired,
            used,
            ProfileId=profile_id,
        )
        record["Phone"] = phone_number(rng, area_codes)
        users.append(record)
        return record

    add_user(
        common.ADMIN_PROFILE,
        admin["first"],
        admin["last"],
        ORG_CREATED.date(),
        company["office_area_codes"],
    )
    specs: list[dict[str, Any]] = company["territories"]
    territories = [
        Territory(
            index=n,
            id=profile.id("Territory2", n + 1),
            name=spec["name"],
            states=tuple(spec["states"]),
            conversion_factor=rng.lognormvariate(0.0, 0.35),
        )
        for n, spec in enumerate(specs)
    ]
    state_territory = {state: t.index for t in territories for state in t.states}
    hires = DaySampler(ORG_CREATED.date() + timedelta(days=14), date(2023, 6, 30), lambda _: 1.0)

    def hired_day() -> date:
        # Most of the team is there from the start; the rest joins over the years.
        return (
            ORG_CREATED.date() + timedelta(days=rng.randint(1, 60))
            if rng.random() < 0.7
            else (hires.sample(rng, 1)[0])
        )

    sales: list[Agent] = []
    members: list[list[int]] = [[] for _ in territories]
    for n in range(profile.sales_agents):
        first, last = pool.draw(rng)
        territory = n % len(territories)
        # Each territory has an agent from the first day on (the first one assigned to it).
        hired = hired_day() if n >= len(territories) else ORG_CREATED.date()
        area_codes = geo[territories[territory].states[0]]["area_codes"]
        record = add_user(common.SALES_PROFILE, first, last, hired, area_codes)
        skill = rng.betavariate(2.0, 2.0)
        sales.append(
            _agent(
                n,
                record,
                hired,
                skill,
                territory=territory,
                conversion_factor=rng.lognormvariate(0.0, 0.6) * (0.6 + 0.8 * skill),
                cycle_factor=rng.lognormvariate(0.0, 0.3) * (1.3 - 0.5 * skill),
                discount_habit=rng.uniform(0.05, 0.6),
            )
        )
        members[territory].append(n)
    territories = [
        Territory(t.index, t.id, t.name, t.states, t.conversion_factor, tuple(members[t.index]))
        for t in territories
    ]
    service: list[Agent] = []
    for n in range(profile.service_agents):
        first, last = pool.draw(rng)
        hired = hired_day()
        record = add_user(common.SERVICE_PROFILE, first, last, hired, company["office_area_codes"])
        skill = rng.betavariate(2.2, 2.2)
        service.append(
            _agent(n, record, hired, skill, specialties=frozenset(rng.sample(issue_names, 2)))
        )
    people = People(
        profile=profile,
        admin_id=admin_id,
        sales=sales,
        service=service,
        territories=territories,
        state_territory=state_territory,
        state_weights={code: float(spec["weight"]) for code, spec in geo.items()},
        area_codes={code: list(spec["area_codes"]) for code, spec in geo.items()},
        names=pool,
        users=users,
    )
    _territory_records(people)
    _add_starting_customers(rng, people, company)
    return people


def _territory_records(people: People) -> None:
    for territory in people.territories:
        people.territory_records.append(
            {
                "Id": territory.id,
                "Name": territory.name,
                "DeveloperName": re.sub(r"\W+", "_", territory.name),
                "Description": ",".join(territory.states),
                "Territory2ModelId": TERRITORY_MODEL_ID,
                "Territory2TypeId": TERRITORY_TYPE_ID,
                "CreatedDate": ORG_CREATED,
            }
        )
    # One association per sales agent, in the order the agents joined their territories.
    for n, agent in enumerate(sorted(people.sales, key=lambda a: (a.hired, a.index)), start=1):
        people.associations.append(
            {
                "Id": people.profile.id("UserTerritory2Association", n),
                "UserId": agent.id,
                "Territory2Id": people.territories[agent.territory].id,
                "IsActive": True,
                "CreatedDate": datetime.combine(agent.hired, time(16, 30)),
            }
        )


def territory_agents(people: People, state: str, day: date) -> list[Agent]:
    """The sales agents on staff on `day` in the territory that covers `state`."""
    territory = people.territories[people.state_territory[state]]
    staff = [people.sales[n] for n in territory.agents if people.sales[n].hired <= day]
    return staff or [people.sales[territory.agents[0]]]


def company_name(rng: Random, company: dict[str, Any], used: set[str]) -> str:
    while True:
        name = fill(
            rng.choice(company["account_name_patterns"]),
            {"a": rng.choice(company["name_words"]), "b": rng.choice(company["name_words"]),
             "suffix": rng.choice(company["name_suffixes"])},
        )  # fmt: skip
        if name not in used and len(set(name.split())) == len(name.split()):
            used.add(name)
            return name


def person_email(rng: Random, people: People, first: str, last: str, domain: str | None) -> str:
    names = load_text("names")
    local = fill(
        rng.choice(names["customer_email_patterns"]),
        {"first": first, "last": last, "initial": first[0], "n": rng.randint(1, 99)},
    ).lower()
    domain = domain or rng.choice(names["customer_email_domains"])
    return unique_value(local.replace("'", ""), people.emails, 80, f"@{domain}")


def add_customer(
    rng: Random, people: People, state: str, created: datetime, name: str | None = None
) -> Customer:
    """A new account (B2B: the company `name`; B2C: a person account without contacts yet)."""
    index = len(people.customers)
    customer = Customer(
        index=index,
        id=people.profile.id("Account", index + 1),
        name=name or "",
        state=state,
        created=created,
        size=rng.lognormvariate(0.0, 0.6),
    )
    people.customers.append(customer)
    return customer


def add_contact(
    rng: Random, people: People, customer: Customer, created: datetime, person: tuple[str, str]
) -> Contact:
    first, last = person
    domain = None
    if people.profile.business:
        domain = customer.name.split()[0].lower().replace("&", "") + ".example.com"
    contact = Contact(
        id=people.profile.id("Contact", len(people.contacts) + 1),
        customer=customer.index,
        first=first,
        last=last,
        email=person_email(rng, people, first, last, domain),
        created=created,
    )
    customer.contacts.append(len(people.contacts))
    people.contacts.append(contact)
    if not people.profile.business:
        customer.name = contact.name
    return contact


def _add_starting_customers(rng: Random, people: People, company: dict[str, Any]) -> None:
    """The customers the org already had when selling started (the rest come from leads)."""
    profile = people.profile
    signups = DaySampler(ORG_CREATED.date(), FIRST_DAY - timedelta(days=1), lambda _: 1.0)
    converted = round(profile.counts["Lead"] * profile.lead_conversion)
    used: set[str] = set()
    if profile.business:
        accounts, contacts = profile.counts["Account"], profile.counts["Contact"] - converted
    else:
        accounts = contacts = profile.counts["Account"] - converted
    for _ in range(accounts):
        state = people.draw_state(rng)
        created = datetime.combine(signups.sample(rng, 1)[0], time(rng.randint(14, 23)))
        name = company_name(rng, company, used) if profile.business else None
        add_customer(rng, people, state, created, name)
    if profile.business:
        # Every account has at least one contact; bigger accounts have more.
        sizes = [c.size for c in people.customers]
        picks = list(range(accounts)) + rng.choices(
            range(accounts), weights=sizes, k=contacts - accounts
        )
        for index in sorted(picks):
            customer = people.customers[index]
            at = customer.created + timedelta(days=rng.randint(0, 20), hours=rng.randint(0, 5))
            add_contact(rng, people, customer, at, people.names.draw(rng))
    else:
        for customer in people.customers:
            add_contact(rng, people, customer, customer.created, people.names.draw(rng))


def customer_records(rng: Random, people: People) -> tuple[list[Record], list[Record]]:
    """Account and Contact records, once every customer exists (after lead conversion)."""
    company = load_text("company", people.profile.org)
    accounts: list[Record] = []
    for customer in people.customers:
        owner = territory_agents(people, customer.state, customer.created.date())[0]
        record: Record = {
            "Id": customer.id,
            "Name": customer.name,
            "Phone": people.phone(rng, customer.state),
            "ShippingState": customer.state,
            "OwnerId": owner.id,
            "CreatedDate": customer.created,
        }
        if people.profile.business:
            industry = rng.choice(sorted(company["industries"]))
            employees = int(40 * customer.size**3 * rng.uniform(5, 60)) + 10
            record |= {
                "Industry": industry,
                "NumberOfEmployees": employees,
                "Description": fill(
                    rng.choice(company["industries"][industry]),
                    {"name": customer.name, "employees": f"{employees:,}"},
                ),
            }
        else:
            person = people.contacts[customer.contacts[0]]
            record |= {
                "FirstName": person.first,
                "LastName": person.last,
                "PersonEmail": person.email,
                "Description": fill(
                    rng.choice(company["customer_descriptions"]),
                    {"first": person.first, "year": customer.created.year},
                ),
            }
        accounts.append(record)
    contacts: list[Record] = []
    for contact in people.contacts:
        customer = people.customers[contact.customer]
        record = {
            "Id": contact.id,
            "AccountId": customer.id,
            "OwnerId": accounts[customer.index]["OwnerId"],
            "CreatedDate": contact.created,
        }
        record |= {"FirstName": contact.first, "LastName": contact.last}
        if people.profile.business:  # a B2C person contact's e-mail is the account's PersonEmail
            record["Email"] = contact.email
        contacts.append(record)
    return accounts, contacts
