"""What the ground truth reads from an org's database: plain SQL over its tables, never the
SOQL engine, so a task's answer does not depend on the code it tests.

Each function takes an open connection and the org's tables and returns plain Python values,
ordered so that the same data gives the same result on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Connection, func, select

from app.storage.tables import TableSet
from app.tasks.periods import Period
from app.tasks.rulebook import DealActivity

OWNER_ASSIGNMENT = "Owner Assignment"


def _in(column: Any, period: Period) -> Any:
    return (column >= period.start) & (column < period.end)


def _assignments_by(
    conn: Connection, tables: TableSet, period: Period, column: str
) -> dict[str, int]:
    """The value of `column` of the Owner Assignment rows in `period` -> how many name it."""
    history = tables["CaseHistory__c"]
    agent = history.c[column]
    rows = conn.execute(
        select(agent, func.count(history.c.Id))
        .where(history.c.Field__c == OWNER_ASSIGNMENT, _in(history.c.CreatedDate, period))
        .where(agent.is_not(None))
        .group_by(agent)
        .order_by(agent)
    )
    return {str(value): int(count) for value, count in rows}


def assignments_per_agent(conn: Connection, tables: TableSet, period: Period) -> dict[str, int]:
    """Agent Id -> the Owner Assignment rows naming them as the new owner in `period` (a case's
    first owner and each agent it was transferred to)."""
    return _assignments_by(conn, tables, period, "NewValue__c")


def transfers_per_agent(conn: Connection, tables: TableSet, period: Period) -> dict[str, int]:
    """Agent Id -> the Owner Assignment rows in `period` that moved a case away from them."""
    return _assignments_by(conn, tables, period, "OldValue__c")


def closed_untransferred_cases(
    conn: Connection, tables: TableSet, period: Period, owners: Sequence[str]
) -> list[tuple[str, datetime, datetime]]:
    """(OwnerId, CreatedDate, ClosedDate) of the Closed cases created in `period`, owned by one
    of `owners`, that have exactly one Owner Assignment row in `period` (never transferred)."""
    case, history = tables["Case"], tables["CaseHistory__c"]
    assigned_once = (
        select(history.c.CaseId__c)
        .where(history.c.Field__c == OWNER_ASSIGNMENT, _in(history.c.CreatedDate, period))
        .group_by(history.c.CaseId__c)
        .having(func.count(history.c.Id) == 1)
    )
    rows = conn.execute(
        select(case.c.OwnerId, case.c.CreatedDate, case.c.ClosedDate)
        .where(case.c.Status == "Closed", _in(case.c.CreatedDate, period))
        .where(case.c.OwnerId.in_(list(owners)), case.c.Id.in_(assigned_once))
        .where(case.c.ClosedDate.is_not(None))
        .order_by(case.c.Id)
    )
    return [(owner, created, closed) for owner, created, closed in rows]


def closed_cases_by_state(
    conn: Connection, tables: TableSet, period: Period
) -> list[tuple[str, datetime, datetime]]:
    """(the account's ShippingState, CreatedDate, ClosedDate) of the Closed cases created in
    `period` whose account has a shipping state."""
    case, account = tables["Case"], tables["Account"]
    rows = conn.execute(
        select(account.c.ShippingState, case.c.CreatedDate, case.c.ClosedDate)
        .join_from(case, account, case.c.AccountId == account.c.Id)
        .where(case.c.Status == "Closed", _in(case.c.CreatedDate, period))
        .where(case.c.ClosedDate.is_not(None), account.c.ShippingState.is_not(None))
        .order_by(case.c.Id)
    )
    return [(state, created, closed) for state, created, closed in rows]


def product_cases(
    conn: Connection, tables: TableSet
) -> dict[str, list[tuple[str | None, datetime]]]:
    """Product2Id -> (IssueId__c, CreatedDate) of the cases about an order item of the product,
    in case Id order."""
    case, item = tables["Case"], tables["OrderItem"]
    rows = conn.execute(
        select(item.c.Product2Id, case.c.IssueId__c, case.c.CreatedDate)
        .join_from(case, item, case.c.OrderItemId__c == item.c.Id)
        .order_by(case.c.Id)
    )
    cases: dict[str, list[tuple[str | None, datetime]]] = {}
    for product, issue, created in rows:
        cases.setdefault(str(product), []).append((issue, created))
    return cases


def open_cases(
    conn: Connection, tables: TableSet
) -> list[tuple[str, str, str, str, str, datetime]]:
    """(Id, Subject, Description, IssueId__c, the product's Id, CreatedDate) of the cases not
    Closed that have an issue and an order item, in Id order."""
    case, item = tables["Case"], tables["OrderItem"]
    rows = conn.execute(
        select(
            case.c.Id,
            case.c.Subject,
            case.c.Description,
            case.c.IssueId__c,
            item.c.Product2Id,
            case.c.CreatedDate,
        )
        .join_from(case, item, case.c.OrderItemId__c == item.c.Id)
        .where(case.c.Status != "Closed", case.c.IssueId__c.is_not(None))
        .order_by(case.c.Id)
    )
    return [
        (str(i), str(subject or ""), str(text or ""), str(issue), str(product), created)
        for i, subject, text, issue, product, created in rows
    ]


def closed_cases_per_owner(
    conn: Connection,
    tables: TableSet,
    *,
    issue: str | None = None,
    product: str | None = None,
    owners: Sequence[str] | None = None,
) -> dict[str, int]:
    """OwnerId -> their Closed cases with `issue`, or about an order item of `product`, among
    `owners` when given."""
    case, item = tables["Case"], tables["OrderItem"]
    query = select(case.c.OwnerId, func.count(case.c.Id)).where(case.c.Status == "Closed")
    if issue is not None:
        query = query.where(case.c.IssueId__c == issue)
    if product is not None:
        query = query.join_from(case, item, case.c.OrderItemId__c == item.c.Id).where(
            item.c.Product2Id == product
        )
    if owners is not None:
        query = query.where(case.c.OwnerId.in_(list(owners)))
    rows = conn.execute(query.group_by(case.c.OwnerId).order_by(case.c.OwnerId))
    return {str(owner): int(count) for owner, count in rows}


def _per_owner(
    conn: Connection, owner: Any, counted: Any, owners: Sequence[str], query: Any
) -> dict[str, int]:
    """Owner -> the rows of `query` (a select from the tables it joins, filtered) that
    `owner` names, for each of `owners` (0 for one with none)."""
    rows = conn.execute(
        query.with_only_columns(owner, func.count(counted))
        .where(owner.in_(list(owners)))
        .group_by(owner)
    )
    counts = {str(found): int(count) for found, count in rows}
    return {name: counts.get(name, 0) for name in owners}


def open_cases_per_owner(
    conn: Connection, tables: TableSet, owners: Sequence[str]
) -> dict[str, int]:
    """OwnerId -> their cases not Closed, for each of `owners` (0 for one with none)."""
    case = tables["Case"]
    query = select(case.c.Id).where(case.c.Status != "Closed")
    return _per_owner(conn, case.c.OwnerId, case.c.Id, owners, query)


def contacts_purchases(conn: Connection, tables: TableSet) -> list[tuple[str, str, date, str]]:
    """(Contact Id, its AccountId, an Activated order's EffectiveDate, a product of the order),
    for every contact and order item of its account's Activated orders, in a stable order."""
    contact, order, item = tables["Contact"], tables["Order"], tables["OrderItem"]
    rows = conn.execute(
        select(contact.c.Id, contact.c.AccountId, order.c.EffectiveDate, item.c.Product2Id)
        .join_from(contact, order, contact.c.AccountId == order.c.AccountId)
        .join(item, item.c.OrderId == order.c.Id)
        .where(order.c.Status == "Activated", order.c.EffectiveDate.is_not(None))
        .order_by(contact.c.Id, item.c.Id)
    )
    return [(str(c), str(a), _date(day), str(p)) for c, a, day, p in rows]


def _activated_lines(tables: TableSet) -> Any:
    order, item = tables["Order"], tables["OrderItem"]
    return item.join(order, item.c.OrderId == order.c.Id), (
        order.c.Status == "Activated",
        order.c.EffectiveDate.is_not(None),
    )


def order_line_count(conn: Connection, tables: TableSet) -> int:
    """The order items of Activated orders."""
    joined, activated = _activated_lines(tables)
    return int(
        conn.execute(select(func.count()).select_from(joined).where(*activated)).scalar_one()
    )


@dataclass(frozen=True)
class OrderLine:
    product: str  # Product2Id
    product_name: str
    account_name: str
    ordered: date  # the order's EffectiveDate
    unit_price: float
    quantity: float


def order_line(conn: Connection, tables: TableSet, index: int) -> OrderLine:
    """The `index`th order item of an Activated order, in Id order."""
    order, item, product = tables["Order"], tables["OrderItem"], tables["Product2"]
    account = tables["Account"]
    joined, activated = _activated_lines(tables)
    p, name, account_name, day, price, quantity = conn.execute(
        select(item.c.Product2Id, product.c.Name, account.c.Name, order.c.EffectiveDate)
        .add_columns(item.c.UnitPrice, item.c.Quantity)
        .select_from(
            joined.join(product, product.c.Id == item.c.Product2Id).join(
                account, account.c.Id == order.c.AccountId
            )
        )
        .where(*activated)
        .order_by(item.c.Id)
        .offset(index)
        .limit(1)
    ).one()
    return OrderLine(
        str(p),
        str(name or ""),
        str(account_name or ""),
        _date(day),
        float(price or 0),
        float(quantity or 0),
    )


def issue_ids(conn: Connection, tables: TableSet) -> dict[str, str]:
    """Name -> Id of the org's Issue__c records."""
    issue = tables["Issue__c"]
    rows = conn.execute(select(issue.c.Name, issue.c.Id).order_by(issue.c.Id))
    return {str(name): str(issue_id) for name, issue_id in rows}


def products_bought_on(
    conn: Connection, tables: TableSet, account: str, day: date
) -> list[tuple[str, str, str]]:
    """(Id, Name, Description) of the products on the account's Activated orders of `day`."""
    order, item, product = tables["Order"], tables["OrderItem"], tables["Product2"]
    rows = conn.execute(
        select(product.c.Id, product.c.Name, product.c.Description)
        .distinct()
        .join_from(item, order, item.c.OrderId == order.c.Id)
        .join(product, product.c.Id == item.c.Product2Id)
        .where(order.c.AccountId == account, order.c.Status == "Activated")
        .where(order.c.EffectiveDate == day)
        .order_by(product.c.Id)
    )
    return [(str(i), str(name or ""), str(text or "")) for i, name, text in rows]


def cases_with_conversation(conn: Connection, tables: TableSet) -> list[str]:
    """The Ids of the cases that have a chat transcript or an e-mail, in Id order."""
    chat, email = tables["LiveChatTranscript"], tables["EmailMessage"]
    with_chat = select(chat.c.CaseId.label("case_id")).where(chat.c.CaseId.is_not(None))
    with_email = select(email.c.ParentId.label("case_id")).where(email.c.ParentId.is_not(None))
    union = with_chat.union(with_email).subquery()
    rows = conn.execute(select(union.c.case_id).order_by(union.c.case_id))
    return [str(case_id) for (case_id,) in rows]


def online_articles(conn: Connection, tables: TableSet, column: str = "Summary") -> dict[str, str]:
    """Id -> `column` (Summary, FAQ_Answer__c) of the published (Online) Knowledge articles."""
    article = tables["Knowledge__kav"]
    rows = conn.execute(
        select(article.c.Id, article.c[column])
        .where(article.c.PublishStatus == "Online")
        .order_by(article.c.Id)
    )
    return {str(i): str(text or "") for i, text in rows}


def _date(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


def case_closed_or_created(conn: Connection, tables: TableSet, case_id: str) -> datetime:
    """When the case was closed, or, while it is open, created."""
    case = tables["Case"]
    created, closed = conn.execute(
        select(case.c.CreatedDate, case.c.ClosedDate).where(case.c.Id == case_id)
    ).one()
    return closed or created  # type: ignore[no-any-return]


def cases_with_text(conn: Connection, tables: TableSet, subject: str, description: str) -> int:
    """How many cases have this Subject and this Description."""
    case = tables["Case"]
    return int(
        conn.execute(
            select(func.count(case.c.Id)).where(
                case.c.Subject == subject, case.c.Description == description
            )
        ).scalar_one()
    )


def case_owner(conn: Connection, tables: TableSet, case_id: str) -> str:
    case = tables["Case"]
    return str(conn.execute(select(case.c.OwnerId).where(case.c.Id == case_id)).scalar_one())


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time())


def day_span(conn: Connection, tables: TableSet, sobject: str, column: str) -> tuple[date, date]:
    """The first and the last day of a date or datetime column of an object."""
    values = tables[sobject].c[column]
    first, last = conn.execute(select(func.min(values), func.max(values))).one()
    if first is None or last is None:
        raise ValueError(f"{sobject}.{column} holds no value")
    return _date(first), _date(last)


def _days_in(column: Any, period: Period) -> Any:
    return (column >= period.start.date()) & (column < period.end.date())


def sales_per_owner(conn: Connection, tables: TableSet, period: Period) -> dict[str, float]:
    """Order owner -> the sum of Quantity x UnitPrice over the items of their Activated orders
    whose EffectiveDate is in `period`."""
    order, item = tables["Order"], tables["OrderItem"]
    rows = conn.execute(
        select(order.c.OwnerId, item.c.Quantity, item.c.UnitPrice)
        .join_from(item, order, item.c.OrderId == order.c.Id)
        .where(order.c.Status == "Activated", _days_in(order.c.EffectiveDate, period))
        .order_by(item.c.Id)
    )
    totals: dict[str, float] = {}
    for owner, quantity, price in rows:
        totals[str(owner)] = totals.get(str(owner), 0.0) + float(quantity) * float(price)
    return totals


def signing_field(tables: TableSet) -> str:
    """The date a contract is signed on: the company's signature where the org's Contract has
    it (b2b), else the customer's (b2c's Contract has no CompanySignedDate)."""
    columns = tables["Contract"].c
    return "CompanySignedDate" if "CompanySignedDate" in columns else "CustomerSignedDate"


def signed_opportunities(
    conn: Connection, tables: TableSet, period: Period
) -> list[tuple[str, datetime, date]]:
    """(the opportunity's OwnerId, its CreatedDate, its contract's signing date) for the
    opportunities whose contract (ContractID__c) was signed in `period`."""
    opportunity, contract = tables["Opportunity"], tables["Contract"]
    signed = contract.c[signing_field(tables)]
    rows = conn.execute(
        select(opportunity.c.OwnerId, opportunity.c.CreatedDate, signed)
        .join_from(opportunity, contract, opportunity.c.ContractID__c == contract.c.Id)
        .where(_days_in(signed, period))
        .order_by(opportunity.c.Id)
    )
    return [(str(owner), created, _date(signed)) for owner, created, signed in rows]


def leads_created(
    conn: Connection, tables: TableSet, period: Period
) -> list[tuple[str, date | None]]:
    """(OwnerId, ConvertedDate) of the leads created in `period`."""
    lead = tables["Lead"]
    rows = conn.execute(
        select(lead.c.OwnerId, lead.c.ConvertedDate)
        .where(_in(lead.c.CreatedDate, period))
        .order_by(lead.c.Id)
    )
    return [(str(owner), None if day is None else _date(day)) for owner, day in rows]


APPROVED_QUOTE_STATUSES = ("Approved", "Presented", "Accepted")


def approved_quotes(conn: Connection, tables: TableSet) -> list[str]:
    """The Ids of the quotes approved (or presented or accepted on approval), in Id order."""
    quote = tables["Quote"]
    rows = conn.execute(
        select(quote.c.Id).where(quote.c.Status.in_(APPROVED_QUOTE_STATUSES)).order_by(quote.c.Id)
    )
    return [str(quote_id) for (quote_id,) in rows]


def largest_discount(conn: Connection, tables: TableSet, quote_id: str) -> float:
    """The largest line Discount (percent) of a quote; 0 when it has none."""
    line = tables["QuoteLineItem"]
    found = conn.execute(
        select(func.max(line.c.Discount)).where(line.c.QuoteId == quote_id)
    ).scalar()
    return float(found or 0.0)


def quote_day(conn: Connection, tables: TableSet, quote_id: str) -> date:
    """The day the quote was created."""
    quote = tables["Quote"]
    return _date(
        conn.execute(select(quote.c.CreatedDate).where(quote.c.Id == quote_id)).scalar_one()
    )


def product_names(conn: Connection, tables: TableSet) -> dict[str, str]:
    """Name -> Id of the org's products."""
    product = tables["Product2"]
    rows = conn.execute(select(product.c.Name, product.c.Id).order_by(product.c.Id))
    return {str(name): str(product_id) for name, product_id in rows}


def quote_lines(conn: Connection, tables: TableSet, quote_id: str) -> list[tuple[str, float]]:
    """(Product2Id, Quantity) of a quote's lines."""
    line = tables["QuoteLineItem"]
    rows = conn.execute(
        select(line.c.Product2Id, line.c.Quantity)
        .where(line.c.QuoteId == quote_id)
        .order_by(line.c.Id)
    )
    return [(str(product), float(quantity)) for product, quantity in rows]


def open_deals_with_pending_tasks(conn: Connection, tables: TableSet) -> list[str]:
    """The Ids of the open opportunities that have a 'Not Started' task, in Id order."""
    opportunity, task = tables["Opportunity"], tables["Task"]
    rows = conn.execute(
        select(opportunity.c.Id)
        .distinct()
        .join_from(opportunity, task, task.c.WhatId == opportunity.c.Id)
        .where(opportunity.c.IsClosed.is_(False), task.c.Status == "Not Started")
        .order_by(opportunity.c.Id)
    )
    return [str(deal) for (deal,) in rows]


def deal_stage_and_pending_tasks(
    conn: Connection, tables: TableSet, deal: str
) -> tuple[str, list[tuple[str, str]]]:
    """The opportunity's StageName, and (Id, Subject) of its 'Not Started' tasks."""
    opportunity, task = tables["Opportunity"], tables["Task"]
    stage = conn.execute(
        select(opportunity.c.StageName).where(opportunity.c.Id == deal)
    ).scalar_one()
    rows = conn.execute(
        select(task.c.Id, task.c.Subject)
        .where(task.c.WhatId == deal, task.c.Status == "Not Started")
        .order_by(task.c.Id)
    )
    return str(stage), [(str(i), str(subject or "")) for i, subject in rows]


def open_deals_in_stages(conn: Connection, tables: TableSet, stages: Sequence[str]) -> list[str]:
    """The Ids of the open opportunities whose StageName is one of `stages`, in Id order."""
    opportunity = tables["Opportunity"]
    rows = conn.execute(
        select(opportunity.c.Id)
        .where(opportunity.c.IsClosed.is_(False), opportunity.c.StageName.in_(stages))
        .order_by(opportunity.c.Id)
    )
    return [str(deal) for (deal,) in rows]


def deal_activity(conn: Connection, tables: TableSet, deal: str) -> tuple[str, DealActivity]:
    """The opportunity's StageName and what its records say of its progress."""
    opportunity, task, event = tables["Opportunity"], tables["Task"], tables["Event"]
    email, call, quote = tables["EmailMessage"], tables["VoiceCallTranscript__c"], tables["Quote"]
    stage = conn.execute(
        select(opportunity.c.StageName).where(opportunity.c.Id == deal)
    ).scalar_one()

    def texts(column: Any, *where: Any) -> list[str]:
        rows = conn.execute(select(column).where(*where).order_by(column))
        return [str(text or "") for (text,) in rows]

    activity = DealActivity(
        task_subjects=texts(task.c.Subject, task.c.WhatId == deal, task.c.Status != "Not Started"),
        event_subjects=texts(event.c.Subject, event.c.WhatId == deal),
        email_subjects=texts(email.c.Subject, email.c.RelatedToId == deal),
        call_transcripts=texts(call.c.Body__c, call.c.OpportunityId__c == deal),
        has_quote=bool(texts(quote.c.Id, quote.c.OpportunityId == deal)),
    )
    return str(stage), activity


def deal_conversation(conn: Connection, tables: TableSet, deal: str) -> tuple[list[str], list[str]]:
    """The transcripts of the opportunity's calls and the bodies of its e-mails, in Id order."""
    call, email = tables["VoiceCallTranscript__c"], tables["EmailMessage"]
    calls = conn.execute(
        select(call.c.Body__c).where(call.c.OpportunityId__c == deal).order_by(call.c.Id)
    )
    emails = conn.execute(
        select(email.c.TextBody).where(email.c.RelatedToId == deal).order_by(email.c.Id)
    )
    return [str(body or "") for (body,) in calls], [str(body or "") for (body,) in emails]


def deal_last_activity_day(conn: Connection, tables: TableSet, deal: str) -> date:
    """The day of the opportunity's latest task, event, e-mail or call."""
    days = [
        conn.execute(select(func.max(table.c.CreatedDate)).where(link == deal)).scalar_one()
        for table, link in (
            (tables["Task"], tables["Task"].c.WhatId),
            (tables["Event"], tables["Event"].c.WhatId),
            (tables["EmailMessage"], tables["EmailMessage"].c.RelatedToId),
            (tables["VoiceCallTranscript__c"], tables["VoiceCallTranscript__c"].c.OpportunityId__c),
        )
    ]
    return max(_date(day) for day in days if day is not None)


def leads_with_calls(conn: Connection, tables: TableSet) -> list[str]:
    """The Ids of the leads that have a call transcript, in Id order."""
    call = tables["VoiceCallTranscript__c"]
    rows = conn.execute(
        select(call.c.LeadId__c)
        .distinct()
        .where(call.c.LeadId__c.is_not(None))
        .order_by(call.c.LeadId__c)
    )
    return [str(lead) for (lead,) in rows]


def lead_calls(conn: Connection, tables: TableSet, lead: str) -> tuple[list[str], date]:
    """The lead's call transcripts, oldest first, and the day of its last call."""
    call = tables["VoiceCallTranscript__c"]
    rows = conn.execute(
        select(call.c.Body__c, call.c.CreatedDate)
        .where(call.c.LeadId__c == lead)
        .order_by(call.c.CreatedDate, call.c.Id)
    ).all()
    return [str(body or "") for body, _ in rows], _date(rows[-1][1])


def territory_descriptions(conn: Connection, tables: TableSet) -> dict[str, str]:
    """Territory2 Id -> its Description, in Id order."""
    territory = tables["Territory2"]
    rows = conn.execute(select(territory.c.Id, territory.c.Description).order_by(territory.c.Id))
    return {str(i): str(text or "") for i, text in rows}


def territory_users(conn: Connection, tables: TableSet, territory: str, day: date) -> list[str]:
    """The Ids of the users actively assigned to the territory by the end of `day`."""
    link = tables["UserTerritory2Association"]
    rows = conn.execute(
        select(link.c.UserId)
        .distinct()
        .where(
            link.c.Territory2Id == territory,
            link.c.IsActive.is_(True),
            link.c.CreatedDate < _start_of(day + timedelta(days=1)),
        )
        .order_by(link.c.UserId)
    )
    return [str(user) for (user,) in rows]


def accepted_quotes_per_owner(
    conn: Connection, tables: TableSet, owners: Sequence[str]
) -> dict[str, int]:
    """Owner Id -> the Accepted quotes of the opportunities they own (0 for none)."""
    quote, opportunity = tables["Quote"], tables["Opportunity"]
    query = (
        select(quote.c.Id)
        .join_from(quote, opportunity, quote.c.OpportunityId == opportunity.c.Id)
        .where(quote.c.Status == "Accepted")
    )
    return _per_owner(conn, opportunity.c.OwnerId, quote.c.Id, owners, query)


def unconverted_leads_per_owner(
    conn: Connection, tables: TableSet, owners: Sequence[str]
) -> dict[str, int]:
    """Owner Id -> the leads they own that are not converted (0 for none)."""
    lead = tables["Lead"]
    query = select(lead.c.Id).where(lead.c.IsConverted.is_(False))
    return _per_owner(conn, lead.c.OwnerId, lead.c.Id, owners, query)


def case_conversation(conn: Connection, tables: TableSet, case: str) -> list[str]:
    """The texts of the case's chat transcripts and e-mails."""
    chat, email = tables["LiveChatTranscript"], tables["EmailMessage"]
    chats = conn.execute(select(chat.c.Body).where(chat.c.CaseId == case).order_by(chat.c.Id))
    emails = conn.execute(
        select(email.c.TextBody).where(email.c.ParentId == case).order_by(email.c.Id)
    )
    return [str(text or "") for (text,) in [*chats, *emails]]


def closed_cases_with_conversation(conn: Connection, tables: TableSet) -> list[str]:
    """The Ids of the Closed cases that have a chat transcript or an e-mail, in Id order."""
    case = tables["Case"]
    with_conversation = set(cases_with_conversation(conn, tables))
    rows = conn.execute(select(case.c.Id).where(case.c.Status == "Closed").order_by(case.c.Id))
    return [str(i) for (i,) in rows if str(i) in with_conversation]


def lead_names(conn: Connection, tables: TableSet) -> list[tuple[str, str, str]]:
    """(Id, FirstName, LastName) of every lead, in Id order."""
    lead = tables["Lead"]
    rows = conn.execute(select(lead.c.Id, lead.c.FirstName, lead.c.LastName).order_by(lead.c.Id))
    return [(str(i), str(first or ""), str(last or "")) for i, first, last in rows]


def list_prices(conn: Connection, tables: TableSet) -> dict[str, float]:
    """Product2 Id -> its UnitPrice in the standard price book."""
    entry, book = tables["PricebookEntry"], tables["Pricebook2"]
    rows = conn.execute(
        select(entry.c.Product2Id, entry.c.UnitPrice)
        .join_from(entry, book, entry.c.Pricebook2Id == book.c.Id)
        .where(book.c.IsStandard.is_(True))
        .order_by(entry.c.Product2Id)
    )
    return {str(product): float(price) for product, price in rows}


def product_articles(conn: Connection, tables: TableSet, product_name: str) -> list[str]:
    """The FAQ_Answer__c of the published articles about a product (titled '<name>: ...')."""
    article = tables["Knowledge__kav"]
    rows = conn.execute(
        select(article.c.FAQ_Answer__c)
        .where(
            article.c.PublishStatus == "Online",
            func.substr(article.c.Title, 1, len(product_name) + 2) == f"{product_name}: ",
        )
        .order_by(article.c.Id)
    )
    return [str(text or "") for (text,) in rows]


def contacts_with_accounts(conn: Connection, tables: TableSet) -> list[tuple[str, str, str, str]]:
    """(Contact Id, its name, its AccountId, the account's Name) of the contacts that have an
    account, in Id order."""
    contact, account = tables["Contact"], tables["Account"]
    rows = conn.execute(
        select(contact.c.Id, contact.c.FirstName, contact.c.LastName, account.c.Id, account.c.Name)
        .join_from(contact, account, contact.c.AccountId == account.c.Id)
        .order_by(contact.c.Id)
    )
    return [
        (str(i), f"{first or ''} {last or ''}".strip(), str(account_id), str(name or ""))
        for i, first, last, account_id, name in rows
    ]


def deal_owner_names(conn: Connection, tables: TableSet) -> list[str]:
    """The names of the users who own opportunities, in name order."""
    user, opportunity = tables["User"], tables["Opportunity"]
    rows = conn.execute(
        select(user.c.FirstName, user.c.LastName)
        .distinct()
        .join_from(user, opportunity, opportunity.c.OwnerId == user.c.Id)
        .order_by(user.c.FirstName, user.c.LastName)
    )
    return [f"{first or ''} {last or ''}".strip() for first, last in rows]


def unconverted_leads(conn: Connection, tables: TableSet) -> list[tuple[str, str]]:
    """(Id, OwnerId) of the leads not converted, in Id order."""
    lead = tables["Lead"]
    rows = conn.execute(
        select(lead.c.Id, lead.c.OwnerId).where(lead.c.IsConverted.is_(False)).order_by(lead.c.Id)
    )
    return [(str(i), str(owner)) for i, owner in rows]


def open_case_conversations(conn: Connection, tables: TableSet) -> dict[str, list[str]]:
    """Case Id -> the texts of its chat transcripts and e-mails, for every case not Closed
    (an empty list for one without)."""
    case, chat, email = tables["Case"], tables["LiveChatTranscript"], tables["EmailMessage"]
    open_ids = select(case.c.Id).where(case.c.Status != "Closed")
    texts: dict[str, list[str]] = {
        str(i): [] for (i,) in conn.execute(open_ids.order_by(case.c.Id))
    }
    for link, body, table in (
        (chat.c.CaseId, chat.c.Body, chat),
        (email.c.ParentId, email.c.TextBody, email),
    ):
        rows = conn.execute(select(link, body).where(link.in_(open_ids)).order_by(link, table.c.Id))
        for case_id, text in rows:
            texts[str(case_id)].append(str(text or ""))
    return texts
