"""The sales side: Lead, Opportunity, OpportunityLineItem, Quote, QuoteLineItem, Contract,
Order and OrderItem, planned together so every number agrees with every other.

- Leads are routed by territory: a lead's state picks the Territory2 whose Description lists
  it, and the lead goes to one of that territory's agents. Whether it converts depends on the
  agent's and the territory's conversion factors; a converted lead becomes a Contact (B2B, at
  an account in the same territory) or a person Account and its Contact (B2C).
- A deal moves Qualification -> Discovery -> Quote -> Negotiation -> Closed. Won deals
  (IsWon) have an Accepted quote, a Contract (ContractID__c) and an Order whose items are the
  accepted quote's lines. Skilled agents win more and so own more Accepted quotes.
- A won deal's cycle (CreatedDate to Contract.CompanySignedDate) scales with its owner's
  cycle factor.
- Quote approval: a quote whose largest line discount exceeds the auto-approval threshold goes
  through review; above the maximum discount it is Rejected. A few quotes are approved against
  these rules, and a few break a product's configuration rules (quantity limit): the latent
  truth lists them with the knowledge article they violate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from random import Random
from typing import Any

from app.seeding.generate.records import Record
from app.seeding.generate.sampling import DaySampler, between, moment, spread, weighted_sample
from app.seeding.generate.text import fill, load_text
from app.seeding.pro.catalog import Catalog, Product
from app.seeding.pro.people import (
    Agent,
    Customer,
    People,
    add_contact,
    add_customer,
    company_name,
    person_email,
    territory_agents,
)
from app.seeding.pro.profile import (
    FIRST_DAY,
    LAST_DAY,
    NOW,
    STAGE_PROBABILITY,
    STAGES,
    OrgProfile,
)

# Where in a deal's cycle each stage starts (share of the cycle).
STAGE_START = (0.0, 0.12, 0.38, 0.65, 1.0)
BANT = ("Budget", "Authority", "Need", "Timeline")
QUALIFY, DISCOVER, QUOTE, NEGOTIATE, CLOSED = range(5)
MAX_QUOTES_PER_DEAL = 3


@dataclass
class LeadPlan:
    index: int
    id: str
    first: str
    last: str
    state: str
    owner: Agent
    created: datetime
    company: str = ""
    title: str = ""
    email: str = ""
    phone: str = ""
    status: str = "New"
    converted: datetime | None = None
    customer: int | None = None
    contact: int | None = None
    bant: dict[str, bool] = field(default_factory=dict)


@dataclass
class Line:
    product: Product
    quantity: int
    discount: float = 0.0
    id: str = ""


@dataclass
class QuotePlan:
    deal: DealPlan
    created: datetime
    status: str
    lines: list[int]  # indexes into the deal's lines
    quantities: list[int] = field(default_factory=list)
    discounts: list[float] = field(default_factory=list)
    id: str = ""
    line_ids: list[str] = field(default_factory=list)


@dataclass
class DealPlan:
    customer: int
    contact: int
    owner: Agent
    created: datetime
    cycle_days: float
    outcome: str  # Won, Lost or Open
    stage: int  # the true stage: the last one the deal reached (CLOSED for closed deals)
    worked: int  # the last working stage (Qualification..Negotiation) the deal was in
    stage_times: list[datetime]  # when it entered each stage up to `stage`
    close_date: date
    recorded_stage: int = 0
    id: str = ""
    lines: list[Line] = field(default_factory=list)
    quotes: list[QuotePlan] = field(default_factory=list)
    contract_id: str | None = None
    name: str = ""

    @property
    def end(self) -> datetime:
        """When the deal stopped moving: closed, or now."""
        return self.stage_times[-1] if self.stage == CLOSED else NOW


@dataclass
class Sales:
    leads: list[LeadPlan]
    deals: list[DealPlan]
    quotes: list[QuotePlan]
    records: dict[str, list[Record]] = field(default_factory=dict)
    approval_violations: dict[str, str] = field(default_factory=dict)  # Quote Id -> policy key
    config_violations: dict[str, int] = field(default_factory=dict)  # Quote Id -> product index
    wrong_stages: dict[str, str] = field(default_factory=dict)  # Opportunity Id -> true stage


def build_sales(rng: Random, profile: OrgProfile, people: People, catalog: Catalog) -> Sales:
    text = load_text("sales", profile.org)
    company = load_text("company", profile.org)
    leads = _plan_leads(rng, profile, people, company)
    deals = _plan_deals(rng, profile, people)
    quotes = _plan_quotes(rng, profile, deals)
    _plan_lines(rng, profile, catalog, deals, quotes)
    sales = Sales(leads=leads, deals=deals, quotes=quotes)
    _inject(rng, profile, sales)
    _records(rng, profile, people, catalog, sales, text)
    return sales


# --- leads -------------------------------------------------------------------------------


def _plan_leads(
    rng: Random, profile: OrgProfile, people: People, company: dict[str, Any]
) -> list[LeadPlan]:
    total = profile.counts["Lead"]
    converted = round(total * profile.lead_conversion)
    leads = _draw_leads(rng, profile, people, total)
    odds = [
        lead.owner.conversion_factor
        * people.territories[lead.owner.territory].conversion_factor
        * min(1.0, (NOW - lead.created).days / 30 + 0.02)
        for lead in leads
    ]
    chosen = set(weighted_sample(rng, odds, converted))
    for lead in leads:
        if lead.index in chosen:
            _convert(rng, lead)
        else:
            _leave_unconverted(rng, lead)
    used = {c.name for c in people.customers}
    # Conversions in the order they happened create the contacts (and B2C accounts).
    for lead in sorted((x for x in leads if x.converted), key=lambda x: (x.converted, x.index)):
        _add_converted_contact(rng, profile, people, lead)
    for lead in leads:
        _complete_lead(rng, profile, people, company, used, lead)
    return leads


def _draw_leads(rng: Random, profile: OrgProfile, people: People, total: int) -> list[LeadPlan]:
    """When each lead came in, from which state, and the territory agent it went to."""
    days = DaySampler(FIRST_DAY, LAST_DAY, lambda day: 1.0 + 0.15 * (day.year - 2020))
    created = sorted(moment(rng, day) for day in days.sample(rng, total))
    leads: list[LeadPlan] = []
    for index, at in enumerate(created):
        state = people.draw_state(rng)
        staff = territory_agents(people, state, at.date())
        first, last = people.names.draw(rng)
        leads.append(
            LeadPlan(
                index=index,
                id=profile.id("Lead", index + 1),
                first=first,
                last=last,
                state=state,
                owner=rng.choice(staff),
                created=at,
                phone=people.phone(rng, state),
            )
        )
    return leads


def _convert(rng: Random, lead: LeadPlan) -> None:
    """A converted lead: every BANT factor met, converted sooner by agents who convert more."""
    days_to_convert = rng.randint(3, 21) + int(25 * rng.random() / lead.owner.conversion_factor)
    lead.converted = min(lead.created + timedelta(days=days_to_convert), NOW)
    lead.status = "Closed"
    lead.bant = dict.fromkeys(BANT, True)


def _leave_unconverted(rng: Random, lead: LeadPlan) -> None:
    """A lead that did not convert: where it stands, and the BANT factors it fails (more of
    them for a closed one)."""
    age = (NOW - lead.created).days
    statuses = (
        ("New", "Contacted")
        if age < 21
        else ("Closed", "Contacted", "Qualified", "Proposal", "Negotiation")
    )
    weights = (0.6, 0.4) if age < 21 else (0.45, 0.25, 0.15, 0.1, 0.05)
    lead.status = rng.choices(statuses, weights=weights)[0]
    failing = rng.sample(
        BANT,
        rng.choice((1, 1, 2, 3)) if lead.status == "Closed" else rng.choice((0, 1, 1, 2)),
    )
    lead.bant = {factor: factor not in failing for factor in BANT}


def _add_converted_contact(
    rng: Random, profile: OrgProfile, people: People, lead: LeadPlan
) -> None:
    """The Contact a converted lead became: at an account of its territory (B2B), or with a
    person account of its own (B2C)."""
    assert lead.converted is not None
    if profile.business:
        territory = people.state_territory[lead.state]
        near = [
            c
            for c in people.customers
            if people.state_territory[c.state] == territory and c.created < lead.converted
        ]
        customer = rng.choice(near or people.customers[:10])
    else:
        customer = add_customer(rng, people, lead.state, lead.converted)
    contact = add_contact(rng, people, customer, lead.converted, (lead.first, lead.last))
    lead.customer, lead.contact = customer.index, len(people.contacts) - 1
    lead.email, lead.company = contact.email, customer.name


def _complete_lead(
    rng: Random,
    profile: OrgProfile,
    people: People,
    company: dict[str, Any],
    used: set[str],
    lead: LeadPlan,
) -> None:
    """A B2B lead's title and (unconverted) company; an unconverted lead's e-mail address."""
    if profile.business:
        lead.title = rng.choice(company["titles"])
        if not lead.converted:
            lead.company = company_name(rng, company, used)
    if not lead.email:
        domain = None
        if profile.business:
            domain = lead.company.split()[0].lower() + ".example.com"
        lead.email = person_email(rng, people, lead.first, lead.last, domain)


# --- deals -------------------------------------------------------------------------------


def _plan_deals(rng: Random, profile: OrgProfile, people: People) -> list[DealPlan]:
    mix = profile.opportunity_mix
    outcomes = ["Won"] * mix["Won"] + ["Lost"] * mix["Lost"]
    open_stages = [s for s in range(NEGOTIATE + 1) for _ in range(mix[STAGES[s]])]
    closed_count = len(outcomes)
    low, high = profile.sales_cycle_days
    # Customers that existed early enough for a closed deal to run its course.
    latest_start = LAST_DAY - timedelta(days=int(high * 2.2))
    early = [c for c in people.customers if c.created.date() <= latest_start]
    drafts: list[DealPlan] = []
    for n in range(closed_count + len(open_stages)):
        is_open = n >= closed_count
        pool = people.customers if is_open else early
        customer = rng.choices(pool, weights=[c.size for c in pool])[0]
        staff = [
            people.sales[i]
            for i in people.territories[people.state_territory[customer.state]].agents
        ]
        owner = rng.choice(staff)
        cycle = rng.uniform(low, high) * owner.cycle_factor * rng.lognormvariate(0.0, 0.15)
        cycle = min(cycle, high * 2.0)
        if is_open:
            drafts.append(_open_deal(rng, customer, owner, cycle, open_stages[n - closed_count]))
        else:
            drafts.append(_closed_deal(rng, customer, owner, cycle))
    _close_deals(rng, profile, [d for d in drafts if d.outcome == "Closed"])
    for deal in drafts:
        _timeline(rng, deal)
        deal.contact = _deal_contact(rng, people, deal)
    drafts.sort(key=lambda d: d.created)
    for n, deal in enumerate(drafts):
        deal.id = profile.id("Opportunity", n + 1)
        deal.recorded_stage = deal.stage
    return drafts


def _deal_contact(rng: Random, people: People, deal: DealPlan) -> int:
    """One of the customer's contacts who existed when the deal was created (or its first)."""
    customer = people.customers[deal.customer]
    options = [i for i in customer.contacts if people.contacts[i].created <= deal.created]
    return rng.choice(options or customer.contacts[:1])


def _open_deal(rng: Random, customer: Customer, owner: Agent, cycle: float, stage: int) -> DealPlan:
    """An open deal now `stage` deep into its cycle, created after its customer and its owner's
    hire."""
    share = rng.uniform(STAGE_START[stage], STAGE_START[stage + 1])
    created = NOW - timedelta(days=share * cycle, seconds=rng.randint(0, 36000))
    created = created.replace(microsecond=0)
    floor = max(customer.created + timedelta(hours=1), datetime.combine(owner.hired, time(17)))
    created = min(max(created, floor), NOW - timedelta(hours=2))
    if stage:  # a late customer or hire: the stages so far took less time
        elapsed = (NOW - created).total_seconds() / 86400
        cycle = min(cycle, 0.95 * elapsed / STAGE_START[stage])
    return _deal(customer.index, owner, created, cycle, "Open", stage, stage)


def _closed_deal(rng: Random, customer: Customer, owner: Agent, cycle: float) -> DealPlan:
    """A closed deal whose whole cycle fits between its customer's (and owner's) start and the
    last day."""
    first = max(FIRST_DAY, owner.hired, customer.created.date() + timedelta(days=1))
    last = LAST_DAY - timedelta(days=int(cycle) + 2)
    day = first + timedelta(days=rng.randint(0, max(0, (last - first).days)))
    return _deal(customer.index, owner, moment(rng, day), cycle, "Closed", CLOSED, 0)


def _close_deals(rng: Random, profile: OrgProfile, closed: list[DealPlan]) -> None:
    """Which closed deals were won (skilled agents win more), and how far the lost ones got."""
    mix = profile.opportunity_mix
    won = set(weighted_sample(rng, [d.owner.skill**1.5 + 0.05 for d in closed], mix["Won"]))
    lost = [d for k, d in enumerate(closed) if k not in won]
    after_quote = set(rng.sample(range(len(lost)), round(len(lost) * profile.lost_after_quote)))
    for k, deal in enumerate(closed):
        deal.outcome = "Won" if k in won else "Lost"
    for k, deal in enumerate(lost):
        deal.worked = (
            rng.choice((QUOTE, NEGOTIATE))
            if k in after_quote
            else rng.choice((QUALIFY, DISCOVER, DISCOVER))
        )


def _deal(
    customer: int,
    owner: Agent,
    created: datetime,
    cycle: float,
    outcome: str,
    stage: int,
    worked: int,
) -> DealPlan:
    return DealPlan(
        customer=customer,
        contact=-1,
        owner=owner,
        created=created,
        cycle_days=cycle,
        outcome=outcome,
        stage=stage,
        worked=worked,
        stage_times=[],
        close_date=created.date(),
    )


def _timeline(rng: Random, deal: DealPlan) -> None:
    span = timedelta(days=deal.cycle_days)
    if deal.outcome == "Won":
        deal.worked = NEGOTIATE
    deal.stage_times = [deal.created + span * STAGE_START[s] for s in range(deal.worked + 1)]
    deal.stage_times = [t.replace(microsecond=0) for t in deal.stage_times]
    if deal.outcome == "Open":
        deal.close_date = max(
            (deal.created + span).date(), LAST_DAY + timedelta(days=rng.randint(7, 45))
        )
        return
    share = rng.uniform(0.3, 0.9) if deal.outcome == "Lost" else 1.0
    ends = STAGE_START[deal.worked] + share * (
        STAGE_START[deal.worked + 1] - STAGE_START[deal.worked]
    )
    closed_at = min(deal.created + span * ends, NOW - timedelta(days=3))
    closed_at = max(closed_at, deal.stage_times[-1] + timedelta(hours=2))
    deal.stage_times.append(closed_at.replace(microsecond=0))
    deal.close_date = closed_at.date()


# --- quotes and lines ----------------------------------------------------------------------


def _plan_quotes(rng: Random, profile: OrgProfile, deals: list[DealPlan]) -> list[QuotePlan]:
    quoted = [d.worked >= QUOTE for d in deals]
    counts = spread(
        rng,
        profile.counts["Quote"],
        [1 if q else 0 for q in quoted],
        [1.0 if q else 0.0 for q in quoted],
        [MAX_QUOTES_PER_DEAL if q else 0 for q in quoted],
    )
    quotes: list[QuotePlan] = []
    for deal, count in zip(deals, counts, strict=True):
        if not count:
            continue
        start = deal.stage_times[QUOTE]
        end = deal.end - timedelta(hours=1)
        times = sorted(between(rng, start, max(start, end)) for _ in range(count))
        for k, at in enumerate(times):
            final = k == count - 1
            status = _quote_status(rng, deal, final)
            quote = QuotePlan(deal=deal, created=at, status=status, lines=[])
            deal.quotes.append(quote)
            quotes.append(quote)
    quotes.sort(key=lambda q: (q.created, q.deal.id))
    for n, quote in enumerate(quotes):
        quote.id = profile.id("Quote", n + 1)
    return quotes


def _quote_status(rng: Random, deal: DealPlan, final: bool) -> str:
    if not final:
        return rng.choice(("Rejected", "Denied", "Denied"))
    if deal.outcome == "Won":
        return "Accepted"
    if deal.outcome == "Lost":
        return rng.choices(("Denied", "Rejected"), weights=(0.7, 0.3))[0]
    if deal.stage == NEGOTIATE:
        return rng.choices(("Presented", "Approved"), weights=(0.6, 0.4))[0]
    return rng.choices(
        ("Draft", "Needs Review", "In Review", "Approved"), weights=(0.3, 0.25, 0.25, 0.2)
    )[0]


def _plan_lines(
    rng: Random,
    profile: OrgProfile,
    catalog: Catalog,
    deals: list[DealPlan],
    quotes: list[QuotePlan],
) -> None:
    sizes = _quote_sizes(rng, profile, quotes)
    needed = {id(d): 1 for d in deals}
    for quote, size in zip(quotes, sizes, strict=True):
        needed[id(quote.deal)] = max(needed[id(quote.deal)], size)
    line_counts = spread(
        rng,
        profile.counts["OpportunityLineItem"],
        [needed[id(d)] for d in deals],
        [1.0 + d.worked for d in deals],
        profile.max_lines,
    )
    sellable = catalog.sellable
    low, high = profile.quantity_range
    for deal, count in zip(deals, line_counts, strict=True):
        deal.lines = [
            Line(product=p, quantity=min(p.max_quantity, rng.randint(low, high)))
            for p in _pick_products(rng, sellable, count)
        ]
    for quote, size in zip(quotes, sizes, strict=True):
        deal = quote.deal
        quote.lines = sorted(rng.sample(range(len(deal.lines)), size))
        quote.quantities = [deal.lines[k].quantity for k in quote.lines]
        quote.discounts = _discounts(rng, profile, quote)
    for deal in deals:
        if deal.quotes:
            final = deal.quotes[-1]
            for k, discount in zip(final.lines, final.discounts, strict=True):
                deal.lines[k].discount = discount


def _quote_sizes(rng: Random, profile: OrgProfile, quotes: list[QuotePlan]) -> list[int]:
    """How many lines each quote has: the accepted quotes' lines are the orders' items."""
    accepted = [q.status == "Accepted" for q in quotes]
    ordered = profile.counts["OrderItem"]
    group_a = [k for k, a in enumerate(accepted) if a]
    group_b = [k for k, a in enumerate(accepted) if not a]
    sizes = [0] * len(quotes)
    for group, total in ((group_a, ordered), (group_b, profile.counts["QuoteLineItem"] - ordered)):
        counts = spread(rng, total, [1] * len(group), [1.0] * len(group), profile.max_lines)
        for k, count in zip(group, counts, strict=True):
            sizes[k] = count
    return sizes


def _pick_products(rng: Random, sellable: list[Product], count: int) -> list[Product]:
    """`count` products by popularity, never two that exclude each other."""
    picked: list[Product] = []
    for k in weighted_sample(rng, [p.popularity for p in sellable], len(sellable)):
        product = sellable[k]
        if all(product.excludes != other.index for other in picked):
            picked.append(product)
        if len(picked) == count:
            break
    return picked


def _discounts(rng: Random, profile: OrgProfile, quote: QuotePlan) -> list[float]:
    auto, cap = profile.auto_approve_discount, profile.max_discount
    habit = quote.deal.owner.discount_habit
    discounts = [
        float(rng.randint(1, int(auto))) if rng.random() < habit else 0.0 for _ in quote.lines
    ]
    target = rng.randrange(len(discounts))
    if quote.status == "Rejected":
        discounts[target] = float(rng.randint(int(cap) + 1, int(cap) + 15))
    elif quote.status in ("Needs Review", "In Review") or (
        quote.status != "Draft" and rng.random() < habit * 0.4
    ):
        # Above the automatic threshold: the quote went (or is going) through review.
        discounts[target] = float(rng.randint(int(auto) + 1, int(cap)))
    return discounts


# --- injected inconsistencies ----------------------------------------------------------------


def _inject(rng: Random, profile: OrgProfile, sales: Sales) -> None:
    approved = [q for q in sales.quotes if q.status in ("Approved", "Presented", "Accepted")]
    chosen = rng.sample(approved, profile.approval_violations + profile.config_violations)
    for quote in chosen[: profile.approval_violations]:
        k = rng.randrange(len(quote.discounts))
        quote.discounts[k] = float(
            rng.randint(int(profile.max_discount) + 1, int(profile.max_discount) + 12)
        )
        sales.approval_violations[quote.id] = "discount_approval"
        if quote is quote.deal.quotes[-1]:
            quote.deal.lines[quote.lines[k]].discount = quote.discounts[k]
    for quote in chosen[profile.approval_violations :]:
        k = rng.randrange(len(quote.lines))
        product = quote.deal.lines[quote.lines[k]].product
        quote.quantities[k] = product.max_quantity + rng.randint(
            1, max(2, product.max_quantity // 2)
        )
        sales.config_violations[quote.id] = product.index
    candidates = [
        d for d in sales.deals if d.outcome == "Open" and d.stage in (DISCOVER, QUOTE, NEGOTIATE)
    ]
    for deal in rng.sample(candidates, profile.wrong_stages):
        deal.recorded_stage = deal.stage - 1
        sales.wrong_stages[deal.id] = STAGES[deal.stage]


# --- records -------------------------------------------------------------------------------


def _money(amount: float) -> float:
    return round(amount + 1e-9, 2)


def _records(
    rng: Random,
    profile: OrgProfile,
    people: People,
    catalog: Catalog,
    sales: Sales,
    text: dict[str, Any],
) -> None:
    leads: list[Record] = []
    for lead in sales.leads:
        record: Record = {
            "Id": lead.id,
            "FirstName": lead.first,
            "LastName": lead.last,
            "Email": lead.email,
            "Phone": lead.phone,
            "Status": lead.status,
            "IsConverted": lead.converted is not None,
            "ConvertedDate": lead.converted.date() if lead.converted else None,
            "ConvertedAccountId": people.customers[lead.customer].id
            if lead.customer is not None
            else None,
            "ConvertedContactId": people.contacts[lead.contact].id
            if lead.contact is not None
            else None,
            "OwnerId": lead.owner.id,
            "CreatedDate": lead.created,
        }
        if profile.business:
            record["Company"], record["Title"] = lead.company, lead.title
        leads.append(record)
    deals: list[Record] = []
    items: list[Record] = []
    for deal in sales.deals:
        customer = people.customers[deal.customer]
        lead_product = deal.lines[0].product
        context = {
            "account": customer.name,
            "product": lead_product.name,
            "category": catalog.categories[lead_product.category]["name"],
            "first": people.contacts[deal.contact].first,
        }
        deal.name = fill(rng.choice(text["opportunity_names"]), context)
        amount = 0.0
        for line in deal.lines:
            line.id = profile.id("OpportunityLineItem", len(items) + 1)
            total = _money(line.quantity * line.product.price * (1 - line.discount / 100))
            amount += total
            items.append(
                {
                    "Id": line.id,
                    "OpportunityId": deal.id,
                    "PricebookEntryId": line.product.entry_id,
                    "Product2Id": line.product.id,
                    "Quantity": float(line.quantity),
                    "UnitPrice": line.product.price,
                    "Discount": line.discount,
                    "TotalPrice": total,
                    "CreatedDate": deal.created,
                }
            )
        won = deal.outcome == "Won"
        deals.append(
            {
                "Id": deal.id,
                "Name": deal.name,
                "Description": fill(rng.choice(text["opportunity_descriptions"]), context),
                "StageName": STAGES[deal.recorded_stage],
                "Amount": _money(amount),
                "Probability": (100.0 if won else 0.0)
                if deal.stage == CLOSED
                else STAGE_PROBABILITY[STAGES[deal.recorded_stage]],
                "CloseDate": deal.close_date,
                "IsClosed": deal.stage == CLOSED,
                "IsWon": won,
                "AccountId": customer.id,
                "ContactId": people.contacts[deal.contact].id,
                "OwnerId": deal.owner.id,
                "Pricebook2Id": catalog.standard_pricebook_id,
                "ContractID__c": None,
                "CreatedDate": deal.created,
            }
        )
    quotes: list[Record] = []
    quote_items: list[Record] = []
    for quote in sales.quotes:
        deal = quote.deal
        number = deal.quotes.index(quote) + 1
        quotes.append(
            {
                "Id": quote.id,
                "Name": f"{deal.name} - Q{number}",
                "Description": fill(
                    rng.choice(text["quote_descriptions"]),
                    {
                        "account": people.customers[deal.customer].name,
                        "n": number,
                        "days": profile.quote_validity_days,
                    },
                ),
                "Status": quote.status,
                "ExpirationDate": quote.created.date()
                + timedelta(days=profile.quote_validity_days),
                "OpportunityId": deal.id,
                "AccountId": people.customers[deal.customer].id,
                "ContactId": people.contacts[deal.contact].id,
                "Pricebook2Id": catalog.standard_pricebook_id,
                "CreatedDate": quote.created,
            }
        )
        for k, quantity, discount in zip(
            quote.lines, quote.quantities, quote.discounts, strict=True
        ):
            line = deal.lines[k]
            item_id = profile.id("QuoteLineItem", len(quote_items) + 1)
            quote.line_ids.append(item_id)
            quote_items.append(
                {
                    "Id": item_id,
                    "QuoteId": quote.id,
                    "OpportunityLineItemId": line.id,
                    "PricebookEntryId": line.product.entry_id,
                    "Product2Id": line.product.id,
                    "Quantity": float(quantity),
                    "UnitPrice": line.product.price,
                    "Discount": discount,
                    "TotalPrice": _money(quantity * line.product.price * (1 - discount / 100)),
                    "CreatedDate": quote.created,
                }
            )
    contracts, orders, order_items = _contracts(rng, profile, people, catalog, sales, text)
    by_id = {record["Id"]: record for record in deals}
    for deal in sales.deals:
        if deal.contract_id:
            by_id[deal.id]["ContractID__c"] = deal.contract_id
    sales.records = {
        "Lead": leads,
        "Opportunity": deals,
        "OpportunityLineItem": items,
        "Quote": quotes,
        "QuoteLineItem": quote_items,
        "Contract": contracts,
        "Order": orders,
        "OrderItem": order_items,
    }


def _contracts(
    rng: Random,
    profile: OrgProfile,
    people: People,
    catalog: Catalog,
    sales: Sales,
    text: dict[str, Any],
) -> tuple[list[Record], list[Record], list[Record]]:
    won = sorted((d for d in sales.deals if d.outcome == "Won"), key=lambda d: (d.close_date, d.id))
    contracts: list[Record] = []
    orders: list[Record] = []
    items: list[Record] = []
    for n, deal in enumerate(won, start=1):
        accepted = deal.quotes[-1]
        customer_signed = deal.close_date
        company_signed = min(customer_signed + timedelta(days=rng.randint(0, 4)), LAST_DAY)
        start = company_signed + timedelta(days=rng.randint(1, 10))
        started = start <= LAST_DAY
        created = between(rng, accepted.created, datetime.combine(customer_signed, time(0)))
        deal.contract_id = profile.id("Contract", n)
        contract: Record = {
            "Id": deal.contract_id,
            "AccountId": people.customers[deal.customer].id,
            "Status": "Activated" if started else "Signed",
            "StartDate": start,
            "ContractTerm": rng.choice(text["contract_terms"]),
            "CustomerSignedDate": customer_signed,
            "Description": fill(rng.choice(text["contract_descriptions"]), {"deal": deal.name}),
            "OwnerId": deal.owner.id,
            "CreatedDate": max(created, accepted.created),
        }
        if profile.business:
            contract["CompanySignedDate"] = company_signed
        contracts.append(contract)
        order_id = profile.id("Order", n)
        orders.append(
            {
                "Id": order_id,
                "AccountId": contract["AccountId"],
                "ContractId": deal.contract_id,
                "Pricebook2Id": catalog.standard_pricebook_id,
                "EffectiveDate": start,
                "Status": "Activated" if started else "Draft",
                "OwnerId": deal.owner.id,
                "CreatedDate": datetime.combine(company_signed, time(17, rng.randrange(60))),
            }
        )
        for k, quantity, discount in zip(
            accepted.lines, accepted.quantities, accepted.discounts, strict=True
        ):
            product = deal.lines[k].product
            items.append(
                {
                    "Id": profile.id("OrderItem", len(items) + 1),
                    "OrderId": order_id,
                    "PricebookEntryId": product.entry_id,
                    "Product2Id": product.id,
                    "Quantity": float(quantity),
                    "UnitPrice": _money(product.price * (1 - discount / 100)),
                    "CreatedDate": orders[-1]["CreatedDate"],
                }
            )
    return contracts, orders, items
