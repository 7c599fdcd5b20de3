"""Parent-to-child subqueries of a SELECT list: `(SELECT Subject FROM Cases WHERE ...)`, whose
FROM names a child relationship of the parent object; up to 5 levels including the outer
query, with no aggregates and no USING SCOPE."""

from __future__ import annotations

from collections.abc import Callable

from app.metadata.model import ChildRelationship, SObjectDef
from app.soql import ast
from app.soql.bind_context import BindContext
from app.soql.bound import BoundQuery, BoundSubquery

BAD_CHILD_RELATIONSHIP = (
    "Didn't understand relationship '{name}' in FROM part of query call. If you are attempting "
    "to use a custom relationship, be sure to append the '__r' after the custom relationship "
    "name. Please reference your WSDL or the describe call for the appropriate names."
)

# Binds a whole query at a depth: the binder's bind_query, passed in so that this module does
# not import it (it binds the SELECT lists that bind subqueries here).
QueryBinder = Callable[[BindContext, SObjectDef, ast.Query, int], BoundQuery]


def bind_child_query(
    ctx: BindContext,
    parent: ast.Query,
    parent_sobject: SObjectDef,
    item: ast.SelectSubquery,
    depth: int,
    *,
    bind_query: QueryBinder,
) -> BoundSubquery:
    """`(SELECT ... FROM Cases ...)` in `parent`, which is at `depth` (0: the outer query)."""
    query = item.query
    if query.offset is not None and parent.limit != 1:
        raise ctx.malformed(
            "OFFSET is allowed in a subquery only when the outer query has LIMIT 1", item.pos
        )
    relationship, child = _child_relationship(ctx, parent_sobject, parent.alias, query)
    if depth + 1 > ctx.limits.child_depth:
        raise ctx.malformed(
            "Parent-to-child queries reach at most 5 levels: the outer query and 4 nested "
            "subqueries",
            item.pos,
        )
    link = child.field(relationship.field)
    assert link is not None and relationship.relationship_name is not None
    bound = bind_query(ctx, child, query, depth + 1)
    if bound.count_only or bound.is_aggregate:
        raise ctx.malformed(
            "Aggregate functions are not supported in parent-to-child subqueries", item.pos
        )
    if bound.owned_by_user:
        raise ctx.malformed("USING SCOPE is not supported in parent-to-child subqueries", item.pos)
    return BoundSubquery(
        relationship=relationship.relationship_name,
        link=link,
        query=bound,
        activity_view=relationship in parent_sobject.activity_relationships,
    )


def _child_relationship(
    ctx: BindContext, parent: SObjectDef, parent_alias: str | None, query: ast.Query
) -> tuple[ChildRelationship, SObjectDef]:
    """The child relationship a subquery's FROM names (`Contacts`, or through its parent:
    `Account.Contacts`), and the child object."""
    name = query.sobject
    if "." in name:
        owner, _, name = name.rpartition(".")
        if owner.lower() not in {parent.name.lower(), (parent_alias or "").lower()}:
            name = query.sobject
    wanted = name.lower()
    relationships = (*parent.child_relationships, *parent.activity_relationships)
    relationship = next(
        (r for r in relationships if (r.relationship_name or "").lower() == wanted), None
    )
    child = None
    if relationship is not None:
        name = relationship.child_sobject
        child = ctx.registry.get(name) or ctx.registry.activity_view(name)
    if relationship is None or child is None:
        raise ctx.error(
            "INVALID_TYPE", BAD_CHILD_RELATIONSHIP.format(name=query.sobject), query.sobject_pos
        )
    return relationship, child
