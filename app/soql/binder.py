"""Binds a parsed query to the schema: resolves objects, fields and relationship paths
case-insensitively, and types every literal against its field, with Salesforce's errors.

The work is split by clause: bind_core (paths, functions, literals), bind_conditions (WHERE,
HAVING, semi-joins), select_list (the SELECT list and GROUP BY), bind_rules (what aggregate
queries allow). Child subqueries (`(SELECT Subject FROM Cases)`) bind here, recursively, up to
5 levels including the outer query.
"""

from __future__ import annotations

from datetime import datetime

from app.metadata.model import SObjectDef
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
    is_date_function,
    no_bare_convert_timezone,
)
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
    BoundDateFunction,
    BoundDistance,
    BoundGrouping,
    BoundOrder,
    BoundQuery,
    BoundSubquery,
    BoundTypeOf,
    Target,
)
from app.soql.data_categories import bind_categories
from app.soql.date_literals import OrgCalendar
from app.soql.errors import SoqlError, malformed
from app.soql.select_list import MAX_FIELDS_LIMIT, SelectListBinder, bind_group_by


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
        name = query.sobject
        if "." in name:
            # `FROM Account.Contacts` names the relationship through its parent.
            owner, _, name = name.rpartition(".")
            if owner.lower() not in {parent_sobject.name.lower(), (parent_alias or "").lower()}:
                name = query.sobject
        wanted = name.lower()
        relationships = parent_sobject.child_relationships
        relationship = next(
            (r for r in relationships if (r.relationship_name or "").lower() == wanted), None
        )
        child = self.registry.get(relationship.child_sobject) if relationship else None
        if relationship is None or child is None:
            raise self._error(
                "INVALID_TYPE",
                BAD_CHILD_RELATIONSHIP.format(name=query.sobject),
                query.sobject_pos,
            )
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


# What date literals resolve against when the caller names no calendar.
UTC_EPOCH_CALENDAR = OrgCalendar.at(datetime(1970, 1, 1), "UTC", 1)


def bind(
    registry: SchemaRegistry,
    text: str,
    query: ast.Query,
    calendar: OrgCalendar = UTC_EPOCH_CALENDAR,
) -> BoundQuery:
    """Resolve and type-check `query` (parsed from `text`) against the org's schema; date
    literals resolve against `calendar`."""
    binder = Binder(registry, text, calendar)
    if "." in query.sobject:
        raise binder._error("INVALID_TYPE", BAD_TYPE.format(name=query.sobject), query.sobject_pos)
    root = binder._sobject(query.sobject, query.sobject_pos)
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
    """Bind `query` on `root`: the top-level query (depth 0) or a child subquery."""
    text = binder.text
    alias = query.alias
    aggregates = AggregateMap()
    selected = SelectListBinder(binder, root, query, aggregates, depth).bind()
    select = selected.items
    count_only = selected.count_only
    group_by, group_kind = bind_group_by(binder, root, query)
    is_aggregate = bool(group_by) or any(isinstance(s, BoundAggregate) for s in select)
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
    check_record_only_items(text, select, is_aggregate, group_kind)
    grouping = Grouping(group_by)
    for expr_item in select:
        if isinstance(
            expr_item,
            BoundAggregate | BoundGrouping | BoundSubquery | BoundTypeOf | BoundDistance,
        ):
            continue
        checked = expr_item.path if isinstance(expr_item, BoundColumn) else expr_item
        if (is_aggregate or isinstance(expr_item, BoundDateFunction)) and not grouping.covers(
            checked
        ):
            raise malformed(
                f"Field must be grouped or aggregated: {expr_item.path.field.name}",
                query=text,
                pos=None,
            )
    where = binder.condition(root, alias, query.where, AggregateMap()) if query.where else None
    if where is not None and has_aggregate(where):
        raise malformed(
            "Cannot use an aggregate function in the WHERE clause", query=text, pos=None
        )
    # HAVING takes no sub-selects: binding it as if nested refuses them.
    having = (
        binder.condition(root, alias, query.having, aggregates, "NOT") if query.having else None
    )
    for condition in (where, having):
        if condition is not None and alternations(condition) > MAX_ALTERNATIONS:
            raise malformed("query is nested too deeply", query=text, pos=None)
    order_by = []
    for order_key in query.order_by:
        if isinstance(order_key.expr, ast.FieldPath):
            target: Target = binder.path(root, alias, order_key.expr)
        elif is_date_function(order_key.expr):
            target = binder.date_function(root, alias, order_key.expr)
        elif order_key.expr.name.upper() == "DISTANCE":
            target = binder.distance(root, alias, order_key.expr)
        elif order_key.expr.name.upper() == "GROUPING":
            target = binder.grouping(root, alias, order_key.expr)
        else:
            no_bare_convert_timezone(binder, order_key.expr)
            target = aggregates.find_or_add(binder, root, alias, order_key.expr)
        # Salesforce sorts nulls first unless told otherwise, in both directions.
        nulls_first = True if order_key.nulls_first is None else order_key.nulls_first
        order_by.append(BoundOrder(target, order_key.descending, nulls_first))
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
    check_grouping(text, select, group_by, having, order_by, count_only, hidden)
    return BoundQuery(
        sobject=root,
        select=tuple(select) + tuple(hidden),
        count_only=count_only,
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
