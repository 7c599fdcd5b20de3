"""One binder of expressions for every clause: a field path, or a function the registry allows
in that clause (SELECT, WHERE, HAVING, GROUP BY, ORDER BY), bound by its kind.

What only SELECT has (FIELDS(), toLabel()/FORMAT() of a selected field, COUNT() alone) is in
select_list.py; what only GROUP BY has (ROLLUP, CUBE) in select_list.bind_group_by.
"""

from __future__ import annotations

from collections.abc import Callable

from app.metadata.model import SObjectDef
from app.soql import ast
from app.soql.bind_context import BindContext
from app.soql.bind_functions import (
    AggregateMap,
    bind_aggregate,
    bind_distance,
    bind_grouping,
    bind_row_function,
)
from app.soql.bind_paths import bind_path
from app.soql.bound import BoundAggregate, Target
from app.soql.errors import SoqlError
from app.soql.function_spec import Clause, FunctionKind

# Binds a call whose kind the registry named: (context, root, alias, call, output name).
_KindBinder = Callable[[BindContext, SObjectDef, str | None, ast.FunctionCall, str], Target]

_BY_KIND: dict[FunctionKind, _KindBinder] = {
    FunctionKind.ROW: bind_row_function,
    FunctionKind.DISTANCE: bind_distance,
    FunctionKind.GROUPING: bind_grouping,
}


def bind_expression(
    ctx: BindContext,
    root: SObjectDef,
    alias: str | None,
    expr: ast.FieldPath | ast.FunctionCall,
    clause: Clause,
    aggregates: AggregateMap,
    name: str = "",
) -> Target:
    """What `expr` names in `clause`. An aggregate selected is recorded in `aggregates`; one in
    HAVING or ORDER BY reuses the SELECT's, or becomes a hidden column of its own."""
    if isinstance(expr, ast.FieldPath):
        return bind_path(ctx, root, alias, expr)
    spec = ctx.functions.get(expr.name)
    if spec is None or not spec.allowed_in(clause):
        raise refuse_function(ctx, expr, clause)
    if spec.kind is FunctionKind.AGGREGATE:
        if clause is not Clause.SELECT:
            return aggregates.find_or_add(ctx, root, alias, expr)
        aggregate: BoundAggregate = bind_aggregate(ctx, root, alias, expr, name)
        aggregates.add_selected(expr, aggregate)
        return aggregate
    return _BY_KIND[spec.kind](ctx, root, alias, expr, name)


def refuse_function(ctx: BindContext, call: ast.FunctionCall, clause: Clause) -> SoqlError:
    """The error for a function that `clause` does not take (or that does not exist)."""
    spec = ctx.functions.get(call.name)
    if spec is not None and spec.kind is FunctionKind.TIME_ZONE:
        reason = "convertTimezone() can only be used inside a date function"
    elif clause is Clause.GROUP_BY:
        reason = f"GROUP BY does not take the function {call.name}()"
    else:
        reason = f"Unknown function: {call.name}"
    return ctx.malformed(reason, call.pos)
