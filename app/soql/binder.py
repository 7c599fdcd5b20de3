"""Binds a parsed query to the schema: resolves objects, fields and relationship paths
case-insensitively, and types every literal against its field, with Salesforce's errors.

LIMITATIONS (part 2 of the engine): child subqueries, semi-joins, date functions and date
literals such as TODAY answer FUNCTIONALITY_NOT_ENABLED naming the feature.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from app.errors import FeatureNotSupported
from app.metadata.model import ID_TYPES, NUMBER_TYPES, FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql import ast
from app.soql.bound import (
    AggregateFunction,
    BoundAggregate,
    BoundAnd,
    BoundColumn,
    BoundCondition,
    BoundExpr,
    BoundNot,
    BoundOr,
    BoundOrder,
    BoundPath,
    BoundQuery,
    ConditionKind,
    Hop,
    SelectExpr,
)
from app.soql.errors import SoqlError, malformed
from app.storage.ids import normalize_id

MAX_PARENT_DEPTH = 5
MAX_OFFSET = 2000
# Levels of AND inside OR inside AND...: each is a level of parentheses in the SQL, and SQLite's
# parser overflows at about 20 of them (the SOQL parser allows 100 levels of nesting).
MAX_ALTERNATIONS = 12
_NO_SUCH_COLUMN = (
    "No such column '{name}' on entity '{entity}'. If you are attempting to use a custom field, "
    "be sure to append the '__c' after the custom field name. Please reference your WSDL or the "
    "describe call for the appropriate names."
)
_BAD_RELATIONSHIP = (
    "Didn't understand relationship '{name}' in field path. If you are attempting to use a "
    "custom relationship, be sure to append the '__r' after the custom relationship name. "
    "Please reference your WSDL or the describe call for the appropriate names."
)
_BAD_TYPE = (
    "sObject type '{name}' is not supported. If you are attempting to use a custom object, be "
    "sure to append the '__c' after the entity name. Please reference your WSDL or the "
    "describe call for the appropriate names."
)
_EQUALITY = frozenset({ast.Operator.EQ, ast.Operator.NE})
# How Salesforce names a field's type in "must be of type ..." messages.
_FILTER_TYPE_NAMES = {
    FieldType.BOOLEAN: "boolean",
    FieldType.INT: "int",
    FieldType.DOUBLE: "double",
    FieldType.CURRENCY: "currency",
    FieldType.PERCENT: "percent",
    FieldType.DATE: "date",
    FieldType.DATETIME: "dateTime",
}


class Binder:
    """Binds one query. Holds the query text so every error can point into it."""

    def __init__(self, registry: SchemaRegistry, text: str) -> None:
        self.registry = registry
        self.text = text

    # -- errors ---------------------------------------------------------------------------

    def _error(self, code: str, reason: str, pos: ast.Position | None) -> SoqlError:
        return SoqlError(code, reason, query=self.text, pos=pos)

    # -- objects and paths ----------------------------------------------------------------

    def _sobject(self, name: str, pos: ast.Position) -> SObjectDef:
        sobject = self.registry.get(name)
        if sobject is None:
            raise self._error("INVALID_TYPE", _BAD_TYPE.format(name=name), pos)
        return sobject

    def _target(self, lookup: FieldDef) -> SObjectDef | None:
        for name in lookup.reference_to:
            target = self.registry.get(name)
            if target is not None:
                return target
        return None

    def path(self, root: SObjectDef, alias: str | None, node: ast.FieldPath) -> BoundPath:
        parts = list(node.parts)
        prefixes = {root.name.lower()} | ({alias.lower()} if alias else set())
        if len(parts) > 1 and parts[0].lower() in prefixes:
            parts = parts[1:]  # `OrderItem.Order.AccountId` on OrderItem, `c.Name` with alias c
        hops: list[Hop] = []
        current = root
        for relationship in parts[:-1]:
            lookup = current.field_by_relationship(relationship)
            target = self._target(lookup) if lookup is not None else None
            if lookup is None or target is None:
                raise self._error(
                    "INVALID_FIELD", _BAD_RELATIONSHIP.format(name=relationship), node.pos
                )
            hops.append(Hop(lookup=lookup, target=target))
            current = target
        if len(hops) > MAX_PARENT_DEPTH:
            raise malformed(
                "SOQL statements cannot query relationships that are more than 5 levels away "
                "from the root entity object.",
                query=self.text,
                pos=node.pos,
            )
        field = current.field(parts[-1])
        if field is None:
            raise self._error(
                "INVALID_FIELD",
                _NO_SUCH_COLUMN.format(name=parts[-1], entity=current.name),
                node.pos,
            )
        return BoundPath(hops=tuple(hops), field=field)

    # -- functions ------------------------------------------------------------------------

    def aggregate(
        self, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str
    ) -> BoundAggregate:
        upper = call.name.upper()
        try:
            function = AggregateFunction(upper)
        except ValueError:
            raise FeatureNotSupported(f"the SOQL function {call.name}()") from None
        if not call.args:
            if function is not AggregateFunction.COUNT:
                raise malformed("unexpected token: ')'", query=self.text, pos=call.pos)
            return BoundAggregate(function=function, path=None, name=name)
        if len(call.args) != 1 or not isinstance(call.args[0], ast.FieldPath):
            raise FeatureNotSupported(f"nested functions inside {call.name}()")
        path = self.path(root, alias, call.args[0])
        numeric_only = function in {AggregateFunction.SUM, AggregateFunction.AVG}
        # MIN and MAX order values; a checkbox has no order (PostgreSQL has no max(boolean)).
        unordered = function in {AggregateFunction.MIN, AggregateFunction.MAX} and (
            path.field.type is FieldType.BOOLEAN
        )
        if (numeric_only and path.field.type not in NUMBER_TYPES) or unordered:
            raise self._error(
                "MALFORMED_QUERY",
                f"field {path.field.name} does not support aggregate operator {upper}",
                call.args[0].pos,
            )
        return BoundAggregate(function=function, path=path, name=name)

    # -- literals -------------------------------------------------------------------------

    def _mismatch(self, field: FieldDef, literal: ast.Literal) -> SoqlError:
        if field.is_text:
            expected = "must be of type string and should be enclosed in quotes"
        elif field.type in ID_TYPES:
            # Id and lookup values are quoted strings, so the hint says to quote them.
            expected = f"must be of type {field.type.value} and should be enclosed in quotes"
        else:
            type_name = _FILTER_TYPE_NAMES.get(field.type, field.type.value)
            expected = f"must be of type {type_name} and should not be enclosed in quotes"
        return self._error(
            "INVALID_FIELD",
            f"value of filter criterion for field '{field.name}' {expected}",
            literal.pos,
        )

    def value(self, field: FieldDef, literal: ast.Literal) -> Any:
        """The literal as a storage value of `field`'s type."""
        kind = literal.kind
        if kind is ast.LiteralKind.NULL:
            return None
        if kind is ast.LiteralKind.DATE_LITERAL:
            raise FeatureNotSupported(f"SOQL date literals such as {literal.text}")
        if field.type in ID_TYPES:
            if kind is not ast.LiteralKind.STRING:
                raise self._mismatch(field, literal)
            normalized = normalize_id(literal.value)
            if normalized is None:
                raise self._error(
                    "INVALID_QUERY_FILTER_OPERATOR", f"invalid ID field: {literal.value}", None
                )
            return normalized
        if field.is_text or field.type is FieldType.JUNCTIONIDLIST:
            if kind is not ast.LiteralKind.STRING:
                raise self._mismatch(field, literal)
            return literal.value
        if field.type is FieldType.BOOLEAN and kind is ast.LiteralKind.BOOLEAN:
            return literal.value
        if field.type in NUMBER_TYPES and kind in {
            ast.LiteralKind.INTEGER,
            ast.LiteralKind.DECIMAL,
        }:
            number = literal.value
            assert isinstance(number, int | Decimal)
            # A literal beyond the column's range compares as a float (inf when huge) instead of
            # overflowing the driver: int columns hold 32 bits, and float(int) can overflow.
            whole = int(number)
            if field.type is FieldType.INT and number == whole and abs(whole) < 2**31:
                return whole
            return float(Decimal(number))
        if field.type is FieldType.DATE and kind is ast.LiteralKind.DATE:
            return literal.value
        if field.type is FieldType.DATETIME and kind is ast.LiteralKind.DATETIME:
            moment = literal.value
            assert isinstance(moment, datetime)
            if moment.tzinfo is not None:
                moment = moment.astimezone(UTC).replace(tzinfo=None)
            return moment
        raise self._mismatch(field, literal)

    # -- conditions -----------------------------------------------------------------------

    def condition(
        self, root: SObjectDef, alias: str | None, node: ast.Condition, aggregates: AggregateMap
    ) -> BoundExpr:
        if isinstance(node, ast.And):
            return BoundAnd(
                tuple(self.condition(root, alias, o, aggregates) for o in node.operands)
            )
        if isinstance(node, ast.Or):
            return BoundOr(tuple(self.condition(root, alias, o, aggregates) for o in node.operands))
        if isinstance(node, ast.Not):
            return BoundNot(self.condition(root, alias, node.operand, aggregates))
        target = self._condition_target(root, alias, node.left, aggregates)
        field = _target_field(target)
        if isinstance(node, ast.Comparison):
            if node.op is ast.Operator.LIKE:
                if field.type in ID_TYPES:
                    raise self._error(
                        "INVALID_QUERY_FILTER_OPERATOR", "invalid operator on id field", node.pos
                    )
                if not field.is_text:
                    raise self._error(
                        "INVALID_FIELD",
                        f"Invalid operator on field '{field.name}'. LIKE can only be used on "
                        "string fields.",
                        node.pos,
                    )
            if field.type is FieldType.BOOLEAN and node.op not in _EQUALITY:
                # A checkbox is only equal or not: `IsActive < true` has no meaning.
                raise self._error(
                    "INVALID_QUERY_FILTER_OPERATOR", "invalid operator on boolean field", node.pos
                )
            value = self._typed(field, target, node.right)
            return BoundCondition(ConditionKind.COMPARE, target, node.op, value)
        if isinstance(node, ast.InCondition):
            if isinstance(node.values, ast.Query):
                raise FeatureNotSupported("SOQL semi-join and anti-join subqueries")
            values = tuple(self._typed(field, target, literal) for literal in node.values)
            kind = ConditionKind.NOT_IN if node.negated else ConditionKind.IN
            return BoundCondition(kind, target, None, values)
        if field.type is not FieldType.MULTIPICKLIST:
            raise self._error(
                "INVALID_FIELD",
                f"Invalid operator on field '{field.name}'. INCLUDES and EXCLUDES can only be "
                "used on multi-select picklist fields.",
                node.pos,
            )
        values = tuple(self._typed(field, target, literal) for literal in node.values)
        kind = ConditionKind.EXCLUDES if node.excludes else ConditionKind.INCLUDES
        return BoundCondition(kind, target, None, values)

    def _typed(
        self, field: FieldDef, target: BoundPath | BoundAggregate, literal: ast.Literal
    ) -> Any:
        if isinstance(target, BoundAggregate) and target.function in {
            AggregateFunction.COUNT,
            AggregateFunction.COUNT_DISTINCT,
        }:
            if literal.kind is not ast.LiteralKind.INTEGER:
                raise self._error(
                    "INVALID_FIELD",
                    f"value of filter criterion for field '{target.name}' must be of type "
                    "integer and should not be enclosed in quotes",
                    literal.pos,
                )
            return literal.value
        return self.value(field, literal)

    def _condition_target(
        self,
        root: SObjectDef,
        alias: str | None,
        left: ast.FieldPath | ast.FunctionCall,
        aggregates: AggregateMap,
    ) -> BoundPath | BoundAggregate:
        if isinstance(left, ast.FieldPath):
            return self.path(root, alias, left)
        return aggregates.find_or_add(self, root, alias, left)


def _target_field(target: BoundPath | BoundAggregate) -> FieldDef:
    if isinstance(target, BoundPath):
        return target.field
    if target.path is None:
        return COUNT_FIELD
    if target.function in {AggregateFunction.COUNT, AggregateFunction.COUNT_DISTINCT}:
        return COUNT_FIELD
    return target.path.field


# The type of COUNT(...) results, for typing literals compared with them.
COUNT_FIELD = FieldDef(name="expr", type=FieldType.INT, label="expr")


def _call_key(call: ast.FunctionCall) -> tuple[str, tuple[str, ...]]:
    return (
        call.name.upper(),
        tuple(arg.text.lower() if isinstance(arg, ast.FieldPath) else "" for arg in call.args),
    )


class AggregateMap:
    """Aggregates of a query by their text, so HAVING and ORDER BY reuse the SELECT's."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, tuple[str, ...]], BoundAggregate] = {}
        self.hidden = 0

    def add(self, key: tuple[str, tuple[str, ...]], aggregate: BoundAggregate) -> None:
        self.by_key.setdefault(key, aggregate)

    def find_or_add(
        self, binder: Binder, root: SObjectDef, alias: str | None, call: ast.FunctionCall
    ) -> BoundAggregate:
        key = _call_key(call)
        found = self.by_key.get(key)
        if found is None:
            self.hidden += 1
            found = binder.aggregate(root, alias, call, f"__hidden{self.hidden}")
            self.by_key[key] = found
        return found


def bind(registry: SchemaRegistry, text: str, query: ast.Query) -> BoundQuery:
    """Resolve and type-check `query` (parsed from `text`) against the org's schema."""
    binder = Binder(registry, text)
    root = binder._sobject(query.sobject, query.sobject_pos)
    alias = query.alias
    aggregates = AggregateMap()
    select: list[SelectExpr] = []
    count_only = False
    seen: set[str] = set()
    expr_index = 0
    for item in query.select:
        if isinstance(item, ast.SelectSubquery):
            raise FeatureNotSupported("SOQL parent-to-child subqueries")
        expr = item.expr
        if isinstance(expr, ast.FunctionCall) and expr.name.upper() == "COUNT" and not expr.args:
            if len(query.select) > 1:
                raise malformed(
                    "COUNT() and COUNT(fieldName) can only be used with other fields if the query "
                    "has a GROUP BY clause",
                    query=text,
                    pos=item.pos,
                )
            count_only = True
            continue
        if isinstance(expr, ast.FunctionCall):
            name = item.alias or f"expr{expr_index}"
            if item.alias is None:
                expr_index += 1
            if name.lower() in seen:
                raise binder._error("INVALID_FIELD", f"duplicate alias: {name}", item.pos)
            seen.add(name.lower())
            aggregate = binder.aggregate(root, alias, expr, name)
            aggregates.add(_call_key(expr), aggregate)
            select.append(aggregate)
            continue
        if item.alias is not None:
            raise malformed(
                "only aggregate expressions use field aliasing", query=text, pos=item.pos
            )
        path = binder.path(root, alias, expr)
        canonical = ".".join([*(hop.name for hop in path.hops), path.field.name])
        if canonical.lower() in seen:
            raise binder._error("INVALID_FIELD", f"duplicate field selected: {canonical}", None)
        seen.add(canonical.lower())
        select.append(BoundColumn(path))
    group_by = []
    for key in query.group_by:
        if isinstance(key, ast.FunctionCall):
            raise FeatureNotSupported(f"GROUP BY {key.name}() (date functions in GROUP BY)")
        group_by.append(binder.path(root, alias, key))
    is_aggregate = bool(group_by) or any(isinstance(s, BoundAggregate) for s in select)
    if is_aggregate:
        grouped = {(p.owner, p.field.name) for p in group_by}
        for expr_item in select:
            if isinstance(expr_item, BoundColumn):
                path = expr_item.path
                if (path.owner, path.field.name) not in grouped:
                    raise malformed(
                        f"Field must be grouped or aggregated: {path.field.name}",
                        query=text,
                        pos=None,
                    )
    where = binder.condition(root, alias, query.where, AggregateMap()) if query.where else None
    if where is not None and _has_aggregate(where):
        raise malformed(
            "Cannot use an aggregate function in the WHERE clause", query=text, pos=None
        )
    having = binder.condition(root, alias, query.having, aggregates) if query.having else None
    for condition in (where, having):
        if condition is not None and _alternations(condition) > MAX_ALTERNATIONS:
            raise malformed("query is nested too deeply", query=text, pos=None)
    order_by = []
    for order_key in query.order_by:
        if isinstance(order_key.expr, ast.FieldPath):
            target: BoundPath | BoundAggregate = binder.path(root, alias, order_key.expr)
        else:
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
    _check_grouping(text, select, group_by, having, order_by, count_only, hidden)
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
    )


def _check_grouping(
    text: str,
    select: list[SelectExpr],
    group_by: list[BoundPath],
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
    grouped = {(p.owner, p.field.name) for p in group_by}
    for item in select:
        if isinstance(item, BoundColumn) and (item.path.owner, item.path.field.name) not in grouped:
            raise malformed(
                f"Field must be grouped or aggregated: {item.path.field.name}", query=text, pos=None
            )
    for path in _condition_paths(having):
        if (path.owner, path.field.name) not in grouped:
            raise malformed(
                f"Field must be grouped or aggregated: {path.field.name}", query=text, pos=None
            )
    for order in order_by:
        target = order.target
        if isinstance(target, BoundPath) and (target.owner, target.field.name) not in grouped:
            raise malformed(
                f"Ordered field must be grouped or aggregated: {target.field.name}",
                query=text,
                pos=None,
            )


def _condition_paths(expr: BoundExpr | None) -> list[BoundPath]:
    if expr is None:
        return []
    if isinstance(expr, BoundCondition):
        return [expr.target] if isinstance(expr.target, BoundPath) else []
    if isinstance(expr, BoundNot):
        return _condition_paths(expr.operand)
    return [path for operand in expr.operands for path in _condition_paths(operand)]


def _alternations(expr: BoundExpr, negated: bool = False, outer: str = "") -> int:
    """How deeply AND and OR alternate once NOTs are pushed down to the leaves, as the compiler
    does (NOT turns AND into OR); an operand joined as its parent is flattened into it."""
    if isinstance(expr, BoundNot):
        return _alternations(expr.operand, not negated, outer)
    if isinstance(expr, BoundCondition):
        return 0
    joiner = "AND" if isinstance(expr, BoundAnd) != negated else "OR"
    inner = max(_alternations(operand, negated, joiner) for operand in expr.operands)
    return inner + (joiner != outer)


def _has_aggregate(expr: BoundExpr) -> bool:
    if isinstance(expr, BoundCondition):
        return isinstance(expr.target, BoundAggregate)
    if isinstance(expr, BoundNot):
        return _has_aggregate(expr.operand)
    return any(_has_aggregate(operand) for operand in expr.operands)
