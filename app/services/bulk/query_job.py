"""Running a query job: the SOQL query through the same compiler as REST, its rows flattened
to CSV columns (`Account.Name` for a parent's field, `What.Name` for a field TYPEOF selects).
Bulk queries take no child subqueries, aggregates or OFFSET (Salesforce's Bulk API refuses
them too)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from app.errors import SalesforceError
from app.metadata.model import FieldType
from app.metadata.values import rest_datetime_as_z
from app.services.context import OrgContext
from app.services.cursors import CursorStore
from app.services.query import checked_text, prepare, run_query
from app.soql.bound import BoundColumn, BoundQuery, BoundSubquery, BoundTypeOf, SelectExpr

ALL_ROWS = 10**12  # one batch: a query job reads its whole result at once


def check_bulk_query(ctx: OrgContext, text: str | None, include_deleted: bool) -> BoundQuery:
    """The bound query, or the error Salesforce gives when the job is created."""
    checked = checked_text(text)
    bound = prepare(
        ctx.registry, ctx.tables, checked, include_deleted, ctx.org_calendar, ctx.functions
    ).bound
    refused = [
        ("aggregate functions or COUNT()", bound.is_aggregate or bound.count_only),
        ("child subqueries", any(isinstance(e, BoundSubquery) for e in bound.select)),
        ("OFFSET", bound.offset is not None),
    ]
    for what, present in refused:
        if present:
            raise SalesforceError(
                f"InvalidJob : The Bulk API does not support {what} in a query",
                error_code="INVALIDJOB",
            )
    if any(_selects_address(expr) for expr in bound.select):
        raise SalesforceError(
            "Selecting compound data not supported in Bulk Query",
            error_code="FUNCTIONALITY_NOT_ENABLED",
        )
    return bound


def _selects_address(expr: SelectExpr) -> bool:
    """An address compound (BillingAddress) selected: a Bulk query reads a location's, not an
    address's."""
    return isinstance(expr, BoundColumn) and expr.path.field.type is FieldType.ADDRESS


def _columns(bound: BoundQuery) -> list[tuple[str, tuple[str, ...]]]:
    """(CSV header, the keys that lead to the value in a record) per selected item."""
    columns = []
    for expr in bound.select:
        if isinstance(expr, BoundColumn):
            path = (*(hop.name for hop in expr.path.hops), expr.path.field.name)
            if expr.alias and not expr.path.hops:
                path = (expr.alias,)
            columns.append((".".join(path), path))
        elif isinstance(expr, BoundTypeOf):  # every field a branch selects, each once
            names = dict.fromkeys(f.name for branch in expr.branches for f in branch.fields)
            columns += [(f"{expr.name}.{name}", (expr.name, name)) for name in names]
        else:  # a function of a field, with its alias or exprN as its key
            name = str(getattr(expr, "name", ""))
            columns.append((name, (name,)))
    return columns


def _cell(record: dict[str, Any], path: tuple[str, ...]) -> str | None:
    value: Any = record
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return rest_datetime_as_z(str(value))


def query_records(
    conn: Connection, ctx: OrgContext, cursors: CursorStore, text: str, include_deleted: bool
) -> tuple[BoundQuery, list[dict[str, Any]]]:
    """The query's records, as the REST API writes them."""
    bound = check_bulk_query(ctx, text, include_deleted)
    result = run_query(
        conn, ctx, cursors, text, include_deleted=include_deleted, batch_size=ALL_ROWS
    )
    return bound, list(result["records"])


def csv_table(
    bound: BoundQuery, records: list[dict[str, Any]]
) -> tuple[list[str], list[list[str | None]]]:
    columns = _columns(bound)
    rows = [[_cell(record, path) for _, path in columns] for record in records]
    return [header for header, _ in columns], rows


def temporal_columns(bound: BoundQuery) -> list[str]:
    """The dotted paths of the selected date and datetime fields."""
    return [
        ".".join((*(hop.name for hop in expr.path.hops), expr.path.field.name))
        for expr in bound.select
        if isinstance(expr, BoundColumn)
        and expr.path.field.type in (FieldType.DATE, FieldType.DATETIME)
    ]


def run_query_job(
    conn: Connection, ctx: OrgContext, cursors: CursorStore, text: str, include_deleted: bool
) -> tuple[list[str], list[list[str | None]]]:
    return csv_table(*query_records(conn, ctx, cursors, text, include_deleted))
