"""What the ground truth reads from an org's database: plain SQL over its tables, never the
SOQL engine, so a task's answer does not depend on the code it tests.

Each function takes an open connection and the org's tables and returns plain Python values,
ordered so that the same data gives the same result on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, select

from app.storage.tables import TableSet
from app.tasks.periods import Period

OWNER_ASSIGNMENT = "Owner Assignment"


def _in(column: Any, period: Period) -> Any:
    return (column >= period.start) & (column < period.end)


def assignments_per_agent(conn: Connection, tables: TableSet, period: Period) -> dict[str, int]:
    """Agent Id -> the Owner Assignment rows naming them as the new owner in `period` (a case's
    first owner and each agent it was transferred to)."""
    history = tables["CaseHistory__c"]
    rows = conn.execute(
        select(history.c.NewValue__c, func.count(history.c.Id))
        .where(history.c.Field__c == OWNER_ASSIGNMENT, _in(history.c.CreatedDate, period))
        .where(history.c.NewValue__c.is_not(None))
        .group_by(history.c.NewValue__c)
        .order_by(history.c.NewValue__c)
    )
    return {str(agent): int(count) for agent, count in rows}


def transfers_per_agent(conn: Connection, tables: TableSet, period: Period) -> dict[str, int]:
    """Agent Id -> the Owner Assignment rows in `period` that moved a case away from them."""
    history = tables["CaseHistory__c"]
    rows = conn.execute(
        select(history.c.OldValue__c, func.count(history.c.Id))
        .where(history.c.Field__c == OWNER_ASSIGNMENT, _in(history.c.CreatedDate, period))
        .where(history.c.OldValue__c.is_not(None))
        .group_by(history.c.OldValue__c)
        .order_by(history.c.OldValue__c)
    )
    return {str(agent): int(count) for agent, count in rows}


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


def product_case_dates(
    conn: Connection, tables: TableSet, product_id: str, period: Period
) -> list[tuple[str | None, datetime]]:
    """(IssueId__c, CreatedDate) of the cases created in `period` about an order item of the
    product."""
    case, item = tables["Case"], tables["OrderItem"]
    rows = conn.execute(
        select(case.c.IssueId__c, case.c.CreatedDate)
        .join_from(case, item, case.c.OrderItemId__c == item.c.Id)
        .where(item.c.Product2Id == product_id, _in(case.c.CreatedDate, period))
        .order_by(case.c.Id)
    )
    return [(issue, created) for issue, created in rows]


def products_with_cases(conn: Connection, tables: TableSet, least: int) -> list[str]:
    """The Ids of the products that at least `least` cases are about, in Id order."""
    case, item = tables["Case"], tables["OrderItem"]
    rows = conn.execute(
        select(item.c.Product2Id)
        .join_from(case, item, case.c.OrderItemId__c == item.c.Id)
        .group_by(item.c.Product2Id)
        .having(func.count(case.c.Id) >= least)
        .order_by(item.c.Product2Id)
    )
    return [product for (product,) in rows]


def case_span(conn: Connection, tables: TableSet) -> tuple[datetime, datetime]:
    """The first and the last CreatedDate of the org's cases."""
    case = tables["Case"]
    first, last = conn.execute(
        select(func.min(case.c.CreatedDate), func.max(case.c.CreatedDate))
    ).one()
    return _datetime(first), _datetime(last)


def _datetime(value: Any) -> datetime:
    # min()/max() lose the column's type on SQLite: the stored text comes back as it is.
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
