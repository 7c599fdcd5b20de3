"""What every binding pass reads, frozen for the length of one query: the schema, the query
text (so that every error can point into it), the calendar date literals resolve against, the
function registry, the limits, and where each semi-join stands among the query's semi-joins."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from app.metadata.model import SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql import ast
from app.soql.date_literals import OrgCalendar
from app.soql.errors import SoqlError, malformed
from app.soql.function_registry import FunctionRegistry

BAD_TYPE = (
    "sObject type '{name}' is not supported. If you are attempting to use a custom object, be "
    "sure to append the '__c' after the entity name. Please reference your WSDL or the "
    "describe call for the appropriate names."
)
# An activity view (ActivityHistory, OpenActivity) is read only through a parent's child
# relationship; a query of its own is refused so [belief: the sentence every report of it
# quotes, its code taken as a real org's for an operation an object does not support].
VIEW_NOT_QUERYABLE = "entity type {name} does not support query"


@dataclass(frozen=True)
class Limits:
    """Salesforce's bounds on one query."""

    parent_depth: int = 5
    # Parent-to-child queries reach 5 levels (API 58 and later): the root and 4 nested subqueries.
    child_depth: int = 4
    semi_joins: int = 2
    offset: int = 2000
    # Levels of AND inside OR inside AND...: each is a level of parentheses in the SQL, and
    # SQLite's parser overflows at about 20 of them (the SOQL parser allows 100 levels).
    alternations: int = 12


# Salesforce's bounds: what the API's queries and searches bind within.
LIMITS = Limits()


@dataclass(frozen=True)
class BindContext:
    registry: SchemaRegistry
    text: str
    calendar: OrgCalendar
    functions: FunctionRegistry
    limits: Limits
    # Each semi-join condition's place among the query's (by node identity), in binding order.
    semi_join_order: Mapping[int, int]

    @classmethod
    def of(
        cls,
        registry: SchemaRegistry,
        text: str,
        query: ast.Query,
        *,
        calendar: OrgCalendar,
        functions: FunctionRegistry,
        limits: Limits,
    ) -> BindContext:
        order = {id(node): index for index, node in enumerate(_semi_joins(query))}
        return cls(registry, text, calendar, functions, limits, order)

    def error(self, code: str, reason: str, pos: ast.Position | None) -> SoqlError:
        return SoqlError(code, reason, query=self.text, pos=pos)

    def malformed(self, reason: str, pos: ast.Position | None) -> SoqlError:
        return malformed(reason, query=self.text, pos=pos)

    def sobject_named(self, name: str, pos: ast.Position) -> SObjectDef:
        sobject = self.registry.get(name)
        view = self.registry.activity_view(name) if sobject is None else None
        if view is not None:
            message = VIEW_NOT_QUERYABLE.format(name=view.name)
            raise self.error("INVALID_TYPE_FOR_OPERATION", message, None)  # no echo of the query
        if sobject is None:
            raise self.error("INVALID_TYPE", BAD_TYPE.format(name=name), pos)
        return sobject


def _semi_joins(query: ast.Query) -> Iterator[ast.InCondition]:
    """The semi-joins of a query in the order binding meets them: the child subqueries' (in
    SELECT order), then its own WHERE's. HAVING takes none, and one nested in another is
    refused before it counts."""
    for item in query.select:
        if isinstance(item, ast.SelectSubquery):
            yield from _semi_joins(item.query)
    if query.where is not None:
        yield from _semi_joins_in(query.where)


def _semi_joins_in(node: ast.Condition) -> Iterator[ast.InCondition]:
    if isinstance(node, ast.And | ast.Or):
        for operand in node.operands:
            yield from _semi_joins_in(operand)
    elif isinstance(node, ast.Not):
        yield from _semi_joins_in(node.operand)
    elif isinstance(node, ast.InCondition) and isinstance(node.values, ast.Query):
        yield node
