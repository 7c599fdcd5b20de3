"""Binds a parsed query to the schema: resolves objects, fields and relationship paths
case-insensitively, and types every literal against its field, with Salesforce's errors.

The work is split by clause: bind_core (paths, functions, literals), bind_conditions (WHERE,
HAVING, semi-joins), select_list (the SELECT list and GROUP BY), bind_rules (what aggregate
queries allow). Child subqueries (`(SELECT Subject FROM Cases)`) bind here, recursively, up to
5 levels including the outer query.
"""

from __future__ import annotations

from datetime import datetime

from app.metadata.model import ChildRelationship, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql import ast
from app.soql.bind_conditions import ConditionBinder
from app.soql.bind_core import (
    BAD_CHILD_RELATIONSHIP,
    BAD_TYPE,
    MAX_ALTERNATIONS,
    MAX_CHILD_DEPTH,
    MAX_OFFSET,
    AggregateMap,
)
from app.soql.bind_expression import bind_expression
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
    BoundQuery,
    BoundSubquery,
    BoundTypeOf,
    SelectExpr,
)
from app.soql.data_categories import bind_categories
from app.soql.date_literals import OrgCalendar
from app.soql.errors import SoqlError, malformed
from app.soql.function_registry import FUNCTIONS, FunctionRegistry
from app.soql.function_spec import Clause
from app.soql.select_list import MAX_FIELDS_LIMIT, SelectList, SelectListBinder, bind_group_by


class Binder(ConditionBinder):
    """Binds one query, and the child subqueries in its SELECT list."""

    def child_query(
        self,
        parent: ast.Query,
        parent_sobject: SObjectDef,
        item: ast.SelectSubquery,
        depth: int,
    ) -> BoundSubquery:
        """`(SELECT ... FROM Cases ...)` in `parent`: FROM names a child relationship."""
        query = item.query
        parent_alias = parent.alias
        if query.offset is not None and parent.limit != 1:
            raise malformed(
                "OFFSET is allowed in a subquery only when the outer query has LIMIT 1",
                query=self.text,
                pos=item.pos,
            )
        relationship, child = self._child_relationship(parent_sobject, parent_alias, query)
        if depth + 1 > MAX_CHILD_DEPTH:
            raise malformed(
                "Parent-to-child queries reach at most 5 levels: the outer query and 4 nested "
                "subqueries",
                query=self.text,
                pos=item.pos,
            )
        link = child.field(relationship.field)
        assert link is not None and relationship.relationship_name is not None
        bound = bind_query(self, child, query, depth + 1)
        if bound.count_only or bound.is_aggregate:
            raise malformed(
                "Aggregate functions are not supported in parent-to-child subqueries",
                query=self.text,
                pos=item.pos,
            )
        if bound.owned_by_user:
            raise malformed(
                "USING SCOPE is not supported in parent-to-child subqueries",
                query=self.text,
                pos=item.pos,
            )
        return BoundSubquery(relationship=relationship.relationship_name, link=link, query=bound)

    def _child_relationship(
        self, parent: SObjectDef, parent_alias: str | None, query: ast.Query
    ) -> tuple[ChildRelationship, SObjectDef]:
        """The child relationship a subquery's FROM names (`Contacts`, or through its parent:
        `Account.Contacts`), and the child object."""
        name = query.sobject
        if "." in name:
            owner, _, name = name.rpartition(".")
            if owner.lower() not in {parent.name.lower(), (parent_alias or "").lower()}:
                name = query.sobject
        wanted = name.lower()
        relationship = next(
            (
                r
                for r in parent.child_relationships
                if (r.relationship_name or "").lower() == wanted
            ),
            None,
        )
        child = self.registry.get(relationship.child_sobject) if relationship else None
        if relationship is None or child is None:
            raise self.error(
                "INVALID_TYPE",
                BAD_CHILD_RELATIONSHIP.format(name=query.sobject),
                query.sobject_pos,
            )
        return relationship, child


# What date literals resolve against when the caller names no calendar.
UTC_EPOCH_CALENDAR = OrgCalendar.at(datetime(1970, 1, 1), "UTC", 1)


def bind(
    registry: SchemaRegistry,
    text: str,
    query: ast.Query,
    calendar: OrgCalendar = UTC_EPOCH_CALENDAR,
    functions: FunctionRegistry = FUNCTIONS,
) -> BoundQuery:
    """Resolve and type-check `query` (parsed from `text`) against the org's schema and
    `functions`; date literals resolve against `calendar`."""
    binder = Binder(registry, text, calendar, functions)
    if "." in query.sobject:
        raise binder.error("INVALID_TYPE", BAD_TYPE.format(name=query.sobject), query.sobject_pos)
    root = binder.sobject_named(query.sobject, query.sobject_pos)
    return bind_query(binder, root, query)


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


def _owned_by_user(binder: Binder, root: SObjectDef, query: ast.Query) -> bool:
    if query.scope is None:
        return False
    scope = query.scope.lower()
    if scope not in _SCOPES:
        raise malformed(f"Invalid scope: {query.scope}", query=binder.text, pos=None)
    if scope not in _OWNED_SCOPES:
        return False
    if root.field("OwnerId") is None:
        raise malformed(
            f"USING SCOPE {query.scope} needs an object with an owner; {root.name} has none",
            query=binder.text,
            pos=None,
        )
    return True


def bind_query(binder: Binder, root: SObjectDef, query: ast.Query, depth: int = 0) -> BoundQuery:
    """Bind `query` on `root`: the top-level query (depth 0) or a child subquery. Each clause
    binds in a pass of its own; the aggregate rules then check what the passes bound."""
    text = binder.text
    aggregates = AggregateMap()  # shared by SELECT, HAVING and ORDER BY: one column each
    selected = SelectListBinder(binder, binder.child_query, root, query, aggregates, depth).bind()
    select = selected.items
    group_by, group_kind = bind_group_by(binder, root, query)
    is_aggregate = bool(group_by) or any(isinstance(s, BoundAggregate) for s in select)
    _check_fields_function(text, query, selected, is_aggregate)
    check_record_only_items(text, select, is_aggregate, group_kind)
    grouping = Grouping(group_by)
    _check_selected_are_grouped(text, select, grouping, is_aggregate)
    where, having = _bind_filters(binder, root, query, aggregates)
    order_by = _bind_order_by(binder, root, query, aggregates)
    if query.offset is not None and query.offset > MAX_OFFSET:
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
        owned_by_user=_owned_by_user(binder, root, query),
        data_categories=bind_categories(binder.registry, root, query.data_categories, text),
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
    binder: Binder, root: SObjectDef, query: ast.Query, aggregates: AggregateMap
) -> tuple[BoundExpr | None, BoundExpr | None]:
    """WHERE (no aggregates) and HAVING (aggregates, no sub-selects)."""
    text, alias = binder.text, query.alias
    where = binder.condition(root, alias, query.where, AggregateMap()) if query.where else None
    if where is not None and has_aggregate(where):
        raise malformed(
            "Cannot use an aggregate function in the WHERE clause", query=text, pos=None
        )
    # HAVING takes no sub-selects: binding it as if nested refuses them.
    having = (
        binder.condition(root, alias, query.having, aggregates, "NOT", Clause.HAVING)
        if query.having
        else None
    )
    for condition in (where, having):
        if condition is not None and alternations(condition) > MAX_ALTERNATIONS:
            raise malformed("query is nested too deeply", query=text, pos=None)
    return where, having


def _bind_order_by(
    binder: Binder, root: SObjectDef, query: ast.Query, aggregates: AggregateMap
) -> list[BoundOrder]:
    order_by = []
    for key in query.order_by:
        target = bind_expression(binder, root, query.alias, key.expr, Clause.ORDER_BY, aggregates)
        # Salesforce sorts nulls first unless told otherwise, in both directions.
        nulls_first = True if key.nulls_first is None else key.nulls_first
        order_by.append(BoundOrder(target, key.descending, nulls_first))
    return order_by
