"""`/query?explain=`: the plan of a query (or of a list view's query) in Salesforce's `plans`
shape, from the compiled query: how many rows it reads of how many the object has, and
whether its filter can lead with an index (on Id, a lookup, an external id or a unique field)
or scans the table."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select

from app.metadata.model import FieldDef, FieldType
from app.services.context import OrgContext
from app.services.list_views import LIST_VIEW_PREFIX, view_by_id
from app.services.query import checked_text, prepare
from app.soql.bound import BoundAnd, BoundCondition, BoundExpr, BoundNot, BoundOr, BoundPath
from app.soql.compiler import USER_PARAM


def _indexed(field: FieldDef) -> bool:
    return field.type in (FieldType.ID, FieldType.REFERENCE) or field.external_id or field.unique


def _filter_fields(where: BoundExpr | None) -> list[FieldDef]:
    """The object's own fields the WHERE clause filters on, in order."""
    if where is None:
        return []
    if isinstance(where, BoundCondition):
        target = where.target
        return [target.field] if isinstance(target, BoundPath) and not target.hops else []
    if isinstance(where, BoundNot):
        return _filter_fields(where.operand)
    assert isinstance(where, BoundAnd | BoundOr)
    return [field for operand in where.operands for field in _filter_fields(operand)]


def _count(conn: Connection, ctx: OrgContext, statement: Any) -> int:
    counted = select(func.count()).select_from(statement.subquery())
    return int(conn.execute(counted, {USER_PARAM: ctx.user_id}).scalar_one())


def explain(conn: Connection, ctx: OrgContext, subject: str | None) -> dict[str, Any]:
    """The plan of `subject`: a SOQL query, or the id of a list view (00B...)."""
    text = checked_text(subject).strip()
    view = view_by_id(ctx.registry, text) if text.startswith(LIST_VIEW_PREFIX) else None
    if view is not None:
        text = view.query
    compiled = prepare(ctx.registry, ctx.tables, text, False, ctx.org_calendar, ctx.functions)
    bound = compiled.bound
    table = ctx.tables[bound.sobject.name]
    live = select(table.c.Id).where(table.c.IsDeleted.is_(False))
    total = _count(conn, ctx, live)
    cardinality = _count(conn, ctx, compiled.statement)
    filtered = list(dict.fromkeys(_filter_fields(bound.where)))
    leading = [f.name for f in filtered if _indexed(f)]
    unindexed = [f.name for f in filtered if not _indexed(f)]
    notes = (
        [
            {
                "description": "Not considering filter for optimization because unindexed",
                "fields": unindexed,
                "tableEnumOrId": bound.sobject.name,
            }
        ]
        if unindexed
        else []
    )
    return {
        "plans": [
            {
                "cardinality": cardinality,
                "fields": leading,
                "leadingOperationType": "Index" if leading else "TableScan",
                "notes": notes,
                "relativeCost": round(cardinality / total, 6) if total else 0.0,
                "sobjectCardinality": total,
                "sobjectType": bound.sobject.name,
            }
        ],
        "sourceQuery": text,
    }
