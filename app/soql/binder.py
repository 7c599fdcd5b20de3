"""Binds a parsed query to the schema: resolves objects, fields and relationship paths
case-insensitively, and types every literal against its field, with Salesforce's errors.

Each clause binds in a pass of its own over one frozen BindContext (bind_context): the SELECT
list and GROUP BY (select_list), WHERE and HAVING (bind_conditions), ORDER BY (here); every
clause's expressions through bind_expression, and functions by what the registry says they are
(function_registry). Child subqueries bind in bind_children, recursively; bind_rules checks what
aggregate queries allow once the passes are done.
"""

from __future__ import annotations

import functools

from app.metadata.model import SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql import ast
from app.soql.bind_children import bind_child_query
from app.soql.bind_conditions import bind_condition
from app.soql.bind_context import BAD_TYPE, BindContext, Limits
from app.soql.bind_expression import bind_expression
from app.soql.bind_functions import AggregateMap
from app.soql.bind_paths import refuse_unless
from app.soql.bind_rules import (
    Grouping,
    alternations,
    check_grouping,
    check_groupings,
    check_record_only_items,
    condition_targets,
    has_aggregate,
)
from app.soql.bound import (
    BoundAggregate,
    BoundColumn,
    BoundDistance,
    BoundExpr,
    BoundFunction,
    BoundGrouping,
    BoundOrder,
    BoundPath,
    BoundQuery,
    BoundSubquery,
    BoundTypeOf,
    SelectExpr,
)
from app.soql.data_categories import bind_categories
from app.soql.date_literals import OrgCalendar
from app.soql.errors import SoqlError, malformed
from app.soql.function_registry import FunctionRegistry
from app.soql.function_spec import Clause
from app.soql.select_list import MAX_FIELDS_LIMIT, SelectList, SelectListBinder, bind_group_by


def bind(
    registry: SchemaRegistry,
    text: str,
    query: ast.Query,
    *,
    calendar: OrgCalendar,
    functions: FunctionRegistry,
    limits: Limits,
) -> BoundQuery:
    """Resolve and type-check `query` (parsed from `text`) against the org's schema and
    `functions`, within `limits`; date literals resolve against `calendar`. None of these has
    a default: a query binds against its org's calendar and the app's functions, which only
    the caller knows."""
    ctx = BindContext.of(
        registry, text, query, calendar=calendar, functions=functions, limits=limits
    )
    if "." in query.sobject:
        raise ctx.error("INVALID_TYPE", BAD_TYPE.format(name=query.sobject), query.sobject_pos)
    root = ctx.sobject_named(query.sobject, query.sobject_pos)
    return bind_query(ctx, root, query)


# USING SCOPE values, lower-cased. In a single-user org `mine` and `mine_and_my_groups` keep the
# records the user owns; the others (teams, territories, delegation, ...) select everything.
_SCOPES = frozenset(
    {
        "delegated",
        "everything",
        "mine",
        "mine_and_my_groups",
        "my_territory",
        "my_team_territory",
        "team",
        "scopingrule",
        "mru",
        "allprivate",
    }
)
_OWNED_SCOPES = frozenset({"mine", "mine_and_my_groups"})


def _owned_by_user(ctx: BindContext, root: SObjectDef, query: ast.Query) -> bool:
    if query.scope is None:
        return False
    scope = query.scope.lower()
    if scope not in _SCOPES:
        raise ctx.malformed(f"Invalid scope: {query.scope}", None)
    # On an object no one owns (User, for one) a real org takes `mine` too: it filters nothing.
    return scope in _OWNED_SCOPES and root.field("OwnerId") is not None


def bind_query(ctx: BindContext, root: SObjectDef, query: ast.Query, depth: int = 0) -> BoundQuery:
    """Bind `query` on `root`: the top-level query (depth 0) or a child subquery. Each clause
    binds in a pass of its own; the aggregate rules then check what the passes bound."""
    text = ctx.text
    aggregates = AggregateMap()  # shared by SELECT, HAVING and ORDER BY: one column each
    child_query = functools.partial(bind_child_query, ctx, bind_query=bind_query)
    selected = SelectListBinder(ctx, child_query, root, query, aggregates, depth).bind()
    select = selected.items
    group_by, group_kind = bind_group_by(ctx, root, query)
    is_aggregate = bool(group_by) or any(isinstance(s, BoundAggregate) for s in select)
    _check_fields_function(text, query, selected, is_aggregate)
    check_record_only_items(text, select, is_aggregate, group_kind)
    grouping = Grouping(group_by)
    _check_selected_are_grouped(text, select, grouping, is_aggregate)
    where, having = _bind_filters(ctx, root, query, aggregates)
    order_by = _bind_order_by(ctx, root, query, aggregates)
    if query.offset is not None and query.offset > ctx.limits.offset:
        raise SoqlError(
            "NUMBER_OUTSIDE_VALID_RANGE",
            "Maximum SOQL offset allowed is 2000",
            query=text,
            pos=None,
        )
    hidden = [a for a in aggregates.by_key.values() if a.name.startswith("__hidden")]
    groupings = [item for item in select if isinstance(item, BoundGrouping)]
    groupings += [o.target for o in order_by if isinstance(o.target, BoundGrouping)]
    groupings += [t for t in condition_targets(having) if isinstance(t, BoundGrouping)]
    check_groupings(text, groupings, grouping, group_kind)
    check_grouping(text, select, group_by, having, order_by, selected.count_only, hidden)
    return BoundQuery(
        sobject=root,
        select=tuple(select) + tuple(hidden),
        count_only=selected.count_only,
        where=where,
        group_by=tuple(group_by),
        having=having,
        order_by=tuple(order_by),
        limit=query.limit,
        offset=query.offset,
        group_kind=group_kind,
        owned_by_user=_owned_by_user(ctx, root, query),
        data_categories=bind_categories(ctx.registry, root, query.data_categories, text),
    )


def _check_fields_function(
    text: str, query: ast.Query, selected: SelectList, is_aggregate: bool
) -> None:
    """FIELDS(ALL) and FIELDS(CUSTOM) need LIMIT 200 or less; no FIELDS() beside aggregates."""
    if selected.unbounded_fields and (query.limit is None or query.limit > MAX_FIELDS_LIMIT):
        raise malformed(
            "The SOQL FIELDS function must have a LIMIT of at most 200", query=text, pos=None
        )
    if selected.uses_fields_function and is_aggregate:
        raise malformed(
            "FIELDS() cannot be used in a query with GROUP BY or aggregate functions",
            query=text,
            pos=None,
        )


# Selected items that are aggregates themselves, or that the grouping rules check elsewhere.
_GROUP_FREE = (BoundAggregate, BoundGrouping, BoundSubquery, BoundTypeOf, BoundDistance)


def _check_selected_are_grouped(
    text: str, select: list[SelectExpr], grouping: Grouping, is_aggregate: bool
) -> None:
    """In an aggregate query, and for a date function anywhere, a selected field must be
    grouped by."""
    for item in select:
        if isinstance(item, _GROUP_FREE):
            continue
        checked = item.path if isinstance(item, BoundColumn) else item
        if _must_be_grouped(item, is_aggregate) and not grouping.covers(checked):
            raise malformed(
                f"Field must be grouped or aggregated: {item.path.field.name}",
                query=text,
                pos=None,
            )


def _must_be_grouped(item: SelectExpr, is_aggregate: bool) -> bool:
    # Salesforce selects a date function only as a group's key, even with no aggregate.
    return is_aggregate or (isinstance(item, BoundFunction) and item.spec.date_function)


def _bind_filters(
    ctx: BindContext, root: SObjectDef, query: ast.Query, aggregates: AggregateMap
) -> tuple[BoundExpr | None, BoundExpr | None]:
    """WHERE (no aggregates) and HAVING (aggregates, no sub-selects)."""
    where = None
    if query.where is not None:
        where = bind_condition(ctx, root, query.alias, query.where, AggregateMap())
        if has_aggregate(where):
            raise ctx.malformed("Cannot use an aggregate function in the WHERE clause", None)
    having = None
    if query.having is not None:
        having = bind_condition(ctx, root, query.alias, query.having, aggregates, Clause.HAVING)
    for condition in (where, having):
        if condition is not None and alternations(condition) > ctx.limits.alternations:
            raise ctx.malformed("query is nested too deeply", None)
    return where, having


def _bind_order_by(
    ctx: BindContext, root: SObjectDef, query: ast.Query, aggregates: AggregateMap
) -> list[BoundOrder]:
    order_by = []
    for key in query.order_by:
        target = bind_expression(ctx, root, query.alias, key.expr, Clause.ORDER_BY, aggregates)
        if isinstance(target, BoundPath):
            refuse_unless(ctx, target.field.sortable, target, "sorted", key.expr.pos)
        # Salesforce sorts nulls first unless told otherwise, in both directions.
        nulls_first = True if key.nulls_first is None else key.nulls_first
        order_by.append(BoundOrder(target, key.descending, nulls_first))
    return order_by
