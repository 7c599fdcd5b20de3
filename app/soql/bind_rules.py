"""The rules of aggregate queries: what must be grouped or aggregated, where GROUPING(),
subqueries, TYPEOF and DISTANCE may appear, and how deeply conditions may nest.
"""

from __future__ import annotations

from app.metadata.model import FieldType
from app.soql.bound import (
    BoundAggregate,
    BoundAnd,
    BoundColumn,
    BoundCondition,
    BoundDistance,
    BoundExpr,
    BoundFunction,
    BoundGrouping,
    BoundNot,
    BoundOrder,
    BoundPath,
    BoundSubquery,
    BoundTypeOf,
    SelectExpr,
    Target,
)
from app.soql.errors import malformed


def check_record_only_items(
    text: str, select: list[SelectExpr], is_aggregate: bool, group_kind: str
) -> None:
    """Subqueries, TYPEOF and toLabel-style functions shape records; GROUPING() needs the
    subtotal rows of ROLLUP or CUBE."""
    for item in select:
        if is_aggregate and isinstance(item, BoundSubquery):
            raise malformed(
                "Parent-to-child subqueries cannot be used in an aggregate query",
                query=text,
                pos=None,
            )
        if is_aggregate and isinstance(item, BoundTypeOf):
            raise malformed("TYPEOF cannot be used in an aggregate query", query=text, pos=None)
        if is_aggregate and isinstance(item, BoundDistance):
            raise malformed("DISTANCE() cannot be used in an aggregate query", query=text, pos=None)


def check_groupings(
    text: str, groupings: list[BoundGrouping], grouping: Grouping, group_kind: str
) -> None:
    """GROUPING() (in SELECT, HAVING or ORDER BY) needs ROLLUP or CUBE, and one of its keys."""
    for item in groupings:
        if not group_kind:
            raise malformed(
                "GROUPING() can only be used with GROUP BY ROLLUP or GROUP BY CUBE",
                query=text,
                pos=None,
            )
        if not grouping.covers(item.target):
            field_name = (
                item.target.field.name
                if isinstance(item.target, BoundPath)
                else item.target.path.field.name
            )
            raise malformed(
                f"GROUPING() takes a field of the ROLLUP or CUBE: {field_name}",
                query=text,
                pos=None,
            )


class Grouping:
    """What GROUP BY groups: fields, and date functions. A date function of a grouped date
    field is grouped too (Salesforce allows it for date fields, not for dateTime fields)."""

    def __init__(self, group_by: list[BoundPath | BoundFunction]) -> None:
        self.paths = {(p.owner, p.field.name) for p in group_by if isinstance(p, BoundPath)}
        self.functions = {f.key for f in group_by if isinstance(f, BoundFunction)}

    def covers(self, target: BoundPath | BoundFunction) -> bool:
        if isinstance(target, BoundPath):
            return (target.owner, target.field.name) in self.paths
        if target.key in self.functions:
            return True
        path = target.path
        grouped_date = path.field.type is FieldType.DATE and target.spec.date_function
        return grouped_date and (path.owner, path.field.name) in self.paths


def check_grouping(
    text: str,
    select: list[SelectExpr],
    group_by: list[BoundPath | BoundFunction],
    having: BoundExpr | None,
    order_by: list[BoundOrder],
    count_only: bool,
    hidden: list[BoundAggregate],
) -> None:
    """HAVING and ORDER BY of an aggregate query may only use grouped fields, and an aggregate
    there makes the query an aggregate one; otherwise the SQL is invalid (a 500 on PostgreSQL)."""
    aggregated = bool(group_by) or any(isinstance(s, BoundAggregate) for s in select)
    if having is not None and not aggregated:
        raise malformed(
            "HAVING can only be used with GROUP BY or aggregate functions", query=text, pos=None
        )
    if not (aggregated or (hidden and not count_only)):
        return
    grouping = Grouping(group_by)
    for item in select:
        if isinstance(item, BoundColumn) and not grouping.covers(item.path):
            raise malformed(
                f"Field must be grouped or aggregated: {item.path.field.name}", query=text, pos=None
            )
    for path in condition_paths(having):
        if (name := _ungrouped(path, grouping)) is not None:
            raise malformed(f"Field must be grouped or aggregated: {name}", query=text, pos=None)
    for order in order_by:
        if (name := _ungrouped(order.target, grouping)) is not None:
            raise malformed(
                f"Ordered field must be grouped or aggregated: {name}", query=text, pos=None
            )


def _ungrouped(target: Target, grouping: Grouping) -> str | None:
    """The name of a field `target` uses that the grouping does not cover (DISTANCE never is),
    or None."""
    if isinstance(target, BoundDistance):
        return "DISTANCE"
    if isinstance(target, BoundPath | BoundFunction) and not grouping.covers(target):
        return target.field.name if isinstance(target, BoundPath) else target.path.field.name
    return None


def condition_targets(expr: BoundExpr | None) -> list[Target]:
    if expr is None:
        return []
    if isinstance(expr, BoundCondition):
        return [expr.target]
    if isinstance(expr, BoundNot):
        return condition_targets(expr.operand)
    return [target for operand in expr.operands for target in condition_targets(operand)]


def condition_paths(
    expr: BoundExpr | None,
) -> list[BoundPath | BoundFunction | BoundDistance]:
    if expr is None:
        return []
    if isinstance(expr, BoundCondition):
        target = expr.target
        if isinstance(target, BoundPath | BoundFunction | BoundDistance):
            return [target]
        return []
    if isinstance(expr, BoundNot):
        return condition_paths(expr.operand)
    return [path for operand in expr.operands for path in condition_paths(operand)]


def alternations(expr: BoundExpr, negated: bool = False, outer: str = "") -> int:
    """How deeply AND and OR alternate once NOTs are pushed down to the leaves, as the compiler
    does (NOT turns AND into OR); an operand joined as its parent is flattened into it."""
    if isinstance(expr, BoundNot):
        return alternations(expr.operand, not negated, outer)
    if isinstance(expr, BoundCondition):
        return 0
    joiner = "AND" if isinstance(expr, BoundAnd) != negated else "OR"
    inner = max(alternations(operand, negated, joiner) for operand in expr.operands)
    return inner + (joiner != outer)


def has_aggregate(expr: BoundExpr) -> bool:
    if isinstance(expr, BoundCondition):
        return isinstance(expr.target, BoundAggregate)
    if isinstance(expr, BoundNot):
        return has_aggregate(expr.operand)
    return any(has_aggregate(operand) for operand in expr.operands)
