"""Binds a parsed query to the schema: resolves objects, fields and relationship paths
case-insensitively, and types every literal against its field, with Salesforce's errors.

Date literals (TODAY, LAST_N_DAYS:5, ...) resolve against the OrgCalendar given to `bind`, to a
DateSpan of dates (date fields) or of UTC datetimes (datetime fields, local midnights in the
org's time zone).

Date functions (CALENDAR_YEAR(CloseDate), HOUR_IN_DAY(convertTimezone(CreatedDate)), ...) bind
in WHERE, HAVING, GROUP BY, ORDER BY and the SELECT of aggregate queries.

Semi-joins and anti-joins (`Id [NOT] IN (SELECT AccountId FROM Contact ...)`) bind with
Salesforce's restrictions: at most 2, not nested, not under OR or NOT, one id field selected.

Child subqueries (`(SELECT Subject FROM Cases)`) bind recursively, up to 5 levels deep; the
SELECT list and GROUP BY (FIELDS(), TYPEOF, toLabel/FORMAT, ROLLUP/CUBE) are in select_list.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from app.metadata.model import ID_TYPES, NUMBER_TYPES, FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql import ast
from app.soql.bound import (
    AggregateFunction,
    BoundAggregate,
    BoundAnd,
    BoundColumn,
    BoundCondition,
    BoundDateFunction,
    BoundDistance,
    BoundExpr,
    BoundGrouping,
    BoundNot,
    BoundOr,
    BoundOrder,
    BoundPath,
    BoundQuery,
    BoundSemiJoin,
    BoundSubquery,
    BoundTypeOf,
    ConditionKind,
    DateSpan,
    Hop,
    SelectExpr,
    Target,
)
from app.soql.data_categories import bind_categories
from app.soql.date_literals import OrgCalendar
from app.soql.errors import SoqlError, malformed
from app.soql.functions import DATE_FUNCTIONS, EARTH_RADIUS
from app.soql.name_entity import TYPE_FIELD, name_field
from app.soql.select_list import MAX_FIELDS_LIMIT, SelectListBinder, bind_group_by
from app.storage.ids import normalize_id

MAX_PARENT_DEPTH = 5
# Parent-to-child queries reach 5 levels (API 58 and later): the root and 4 nested subqueries.
MAX_CHILD_DEPTH = 4
MAX_SEMI_JOINS = 2
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
_BAD_CHILD_RELATIONSHIP = (
    "Didn't understand relationship '{name}' in FROM part of query call. If you are attempting "
    "to use a custom relationship, be sure to append the '__r' after the custom relationship "
    "name. Please reference your WSDL or the describe call for the appropriate names."
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

    def __init__(self, registry: SchemaRegistry, text: str, calendar: OrgCalendar) -> None:
        self.registry = registry
        self.text = text
        self.calendar = calendar
        self.semi_joins = 0
        self.in_semi_join = False

    # -- errors ---------------------------------------------------------------------------

    def _error(self, code: str, reason: str, pos: ast.Position | None) -> SoqlError:
        return SoqlError(code, reason, query=self.text, pos=pos)

    # -- objects and paths ----------------------------------------------------------------

    def _sobject(self, name: str, pos: ast.Position) -> SObjectDef:
        sobject = self.registry.get(name)
        if sobject is None:
            raise self._error("INVALID_TYPE", _BAD_TYPE.format(name=name), pos)
        return sobject

    def _targets(self, lookup: FieldDef) -> list[SObjectDef]:
        """The objects of this org that the lookup can point at."""
        found = (self.registry.get(name) for name in lookup.reference_to)
        return [target for target in found if target is not None]

    def path(self, root: SObjectDef, alias: str | None, node: ast.FieldPath) -> BoundPath:
        parts = list(node.parts)
        prefixes = {root.name.lower()} | ({alias.lower()} if alias else set())
        if len(parts) > 1 and parts[0].lower() in prefixes:
            parts = parts[1:]  # `OrderItem.Order.AccountId` on OrderItem, `c.Name` with alias c
        hops: list[Hop] = []
        current = root
        for index, relationship in enumerate(parts[:-1]):
            lookup = current.field_by_relationship(relationship)
            targets = self._targets(lookup) if lookup is not None else []
            if lookup is None or not targets:
                raise self._error(
                    "INVALID_FIELD", _BAD_RELATIONSHIP.format(name=relationship), node.pos
                )
            if len(targets) > 1:
                # A polymorphic lookup reads the Name entity, which has no lookups to follow.
                if index != len(parts) - 2:
                    raise self._error(
                        "INVALID_FIELD", _BAD_RELATIONSHIP.format(name=parts[index + 1]), node.pos
                    )
                hops.append(Hop(lookup=lookup, target=targets[0], alternatives=tuple(targets)))
                return BoundPath(hops=tuple(hops), field=self._name_field(targets, parts[-1], node))
            hops.append(Hop(lookup=lookup, target=targets[0]))
            current = targets[0]
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

    def _name_field(self, targets: list[SObjectDef], name: str, node: ast.FieldPath) -> FieldDef:
        """A field of the Name entity read through a polymorphic lookup: the first target's
        definition of it (a target without it reads null), or the object type for `Type`."""
        canonical = name_field(name)
        if canonical is None:
            raise self._error(
                "INVALID_FIELD", _NO_SUCH_COLUMN.format(name=name, entity="Name"), node.pos
            )
        if canonical == "Type":
            return TYPE_FIELD
        for target in targets:
            found = target.field(canonical)
            if found is not None:
                return found
        return FieldDef(name=canonical, type=FieldType.STRING, label=canonical)

    # -- functions ------------------------------------------------------------------------

    def aggregate(
        self, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str
    ) -> BoundAggregate:
        upper = call.name.upper()
        try:
            function = AggregateFunction(upper)
        except ValueError:
            # SQL habits (YEAR(), UPPER(), NOW()): SOQL has no such function.
            raise malformed(
                f"Unknown function: {call.name}", query=self.text, pos=call.pos
            ) from None
        if not call.args:
            if function is not AggregateFunction.COUNT:
                raise malformed("unexpected token: ')'", query=self.text, pos=call.pos)
            return BoundAggregate(function=function, path=None, name=name)
        if len(call.args) != 1 or not isinstance(call.args[0], ast.FieldPath):
            raise malformed(f"{upper}() takes exactly one field", query=self.text, pos=call.pos)
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

    def date_function(
        self, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str = ""
    ) -> BoundDateFunction:
        """`CALENDAR_YEAR(CloseDate)`, `HOUR_IN_DAY(convertTimezone(CreatedDate))`."""
        function = call.name.upper()
        if len(call.args) != 1:
            raise malformed(
                f"{function} requires exactly one field argument", query=self.text, pos=call.pos
            )
        arg = call.args[0]
        zone = None
        if isinstance(arg, ast.FunctionCall):
            if arg.name.upper() != "CONVERTTIMEZONE" or len(arg.args) != 1:
                raise malformed(
                    f"{function} only takes a field or convertTimezone(field)",
                    query=self.text,
                    pos=arg.pos,
                )
            inner = arg.args[0]
            if not isinstance(inner, ast.FieldPath):
                raise malformed(
                    "convertTimezone only takes a dateTime field", query=self.text, pos=arg.pos
                )
            zone = self.calendar.zone
            arg = inner
        path = self.path(root, alias, arg)
        field_type = path.field.type
        if field_type not in (FieldType.DATE, FieldType.DATETIME):
            raise self._error(
                "INVALID_FIELD",
                f"field {path.field.name} does not support date function {function}: it is "
                "not a date or dateTime field",
                arg.pos,
            )
        if field_type is FieldType.DATE and (
            zone is not None or function in ("HOUR_IN_DAY", "DAY_ONLY")
        ):
            what = "convertTimezone" if zone is not None else function
            raise self._error(
                "INVALID_FIELD",
                f"field {path.field.name} does not support {what}: it needs a dateTime field",
                arg.pos,
            )
        return BoundDateFunction(
            function=function,
            path=path,
            zone=zone,
            fiscal_start_month=self.calendar.fiscal_start_month,
            name=name,
        )

    def distance(
        self, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str = ""
    ) -> BoundDistance:
        """`DISTANCE(Location__c, GEOLOCATION(37.77, -122.42), 'mi')` (the parser checked its
        shape): a point on the globe, a unit, and a location field."""
        lat_literal, lon_literal, unit_literal = call.literals
        point = (float(Decimal(str(lat_literal.value))), float(Decimal(str(lon_literal.value))))
        for value, limit, literal in ((point[0], 90, lat_literal), (point[1], 180, lon_literal)):
            if not -limit <= value <= limit:
                raise malformed(
                    f"GEOLOCATION() takes a latitude within 90 and a longitude within 180 "
                    f"degrees: {literal.text}",
                    query=self.text,
                    pos=literal.pos,
                )
        unit = str(unit_literal.value)
        if unit not in EARTH_RADIUS:
            raise malformed(
                f"DISTANCE() takes the unit 'mi' or 'km', not {unit_literal.text}",
                query=self.text,
                pos=unit_literal.pos,
            )
        located = call.args[0]
        assert isinstance(located, ast.FieldPath)  # the parser reads DISTANCE's field as a path
        path = self.path(root, alias, located)
        field = path.field
        if field.type is not FieldType.LOCATION:
            raise self._error(
                "INVALID_FIELD",
                f"DISTANCE() takes a location field: {field.name} is not one",
                located.pos,
            )
        owner = path.hops[-1].target if path.hops else root
        latitude, longitude = owner.location_parts(field)
        return BoundDistance(
            latitude=BoundPath(path.hops, latitude),
            longitude=BoundPath(path.hops, longitude),
            point=point,
            unit=unit,
            name=name,
        )

    def grouping(
        self, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str = ""
    ) -> BoundGrouping:
        """`GROUPING(Status)`: 1 on the ROLLUP/CUBE rows that sum over Status, else 0."""
        if len(call.args) != 1:
            raise malformed("GROUPING() takes exactly one field", query=self.text, pos=call.pos)
        arg = call.args[0]
        target: BoundPath | BoundDateFunction
        if isinstance(arg, ast.FieldPath):
            target = self.path(root, alias, arg)
        else:
            target = self.date_function(root, alias, arg)
        return BoundGrouping(target=target, name=name)

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
            return self._date_span(field, literal)
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

    def _date_span(self, field: FieldDef, literal: ast.Literal) -> DateSpan:
        if field.type not in (FieldType.DATE, FieldType.DATETIME):
            raise self._mismatch(field, literal)
        assert isinstance(literal.value, tuple)
        name, count = literal.value
        span = self.calendar.range(name, count)
        if field.type is FieldType.DATE:
            return DateSpan(span.start, span.end)
        start, end = span.utc_bounds(ZoneInfo(self.calendar.zone))
        return DateSpan(start, end)

    # -- conditions -----------------------------------------------------------------------

    def condition(
        self,
        root: SObjectDef,
        alias: str | None,
        node: ast.Condition,
        aggregates: AggregateMap,
        scope: str = "",
    ) -> BoundExpr:
        """`scope` is "OR" or "NOT" under those operators (where semi-joins are refused)."""
        if isinstance(node, ast.And):
            return BoundAnd(
                tuple(self.condition(root, alias, o, aggregates, scope) for o in node.operands)
            )
        if isinstance(node, ast.Or):
            return BoundOr(
                tuple(self.condition(root, alias, o, aggregates, "OR") for o in node.operands)
            )
        if isinstance(node, ast.Not):
            return BoundNot(self.condition(root, alias, node.operand, aggregates, scope or "NOT"))
        if isinstance(node.left, ast.FunctionCall) and node.left.name.upper() == "TOLABEL":
            return self._label_condition(root, alias, node)
        target = self._condition_target(root, alias, node.left, aggregates)
        field = _target_field(target)
        if field.type is FieldType.LOCATION:
            raise self._error(
                "INVALID_FIELD",
                f"A location field is filtered through DISTANCE(): {field.name}",
                node.pos,
            )
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
                if not isinstance(target, BoundPath) or field.type not in ID_TYPES:
                    raise self._error(
                        "INVALID_FIELD",
                        "Semi join sub-selects can only be used with an Id or reference field "
                        "on the left",
                        node.pos,
                    )
                semi_join = self.semi_join(root, node.values, scope, node.pos)
                kind = ConditionKind.NOT_IN if node.negated else ConditionKind.IN
                return BoundCondition(kind, target, None, semi_join)
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
                _BAD_CHILD_RELATIONSHIP.format(name=query.sobject),
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

    def _label_condition(
        self,
        root: SObjectDef,
        alias: str | None,
        node: ast.Comparison | ast.InCondition | ast.IncludesCondition,
    ) -> BoundCondition:
        """`toLabel(Status) = 'Closed'` compares labels: it becomes a test of the values whose
        label matches (a value the picklist does not list is its own label)."""
        call = node.left
        assert isinstance(call, ast.FunctionCall)
        if len(call.args) != 1 or not isinstance(call.args[0], ast.FieldPath):
            raise malformed("TOLABEL() takes exactly one field", query=self.text, pos=call.pos)
        path = self.path(root, alias, call.args[0])
        field = path.field
        if isinstance(node, ast.Comparison):
            literals: tuple[ast.Literal, ...] = (node.right,)
            negated = node.op is ast.Operator.NE
            if node.op not in (ast.Operator.EQ, ast.Operator.NE, ast.Operator.LIKE):
                raise self._error(
                    "INVALID_QUERY_FILTER_OPERATOR",
                    "toLabel() can only be compared with =, !=, IN, NOT IN or LIKE",
                    node.pos,
                )
            like = node.op is ast.Operator.LIKE
        elif isinstance(node, ast.InCondition) and not isinstance(node.values, ast.Query):
            literals, negated, like = node.values, node.negated, False
        else:
            raise malformed(
                "toLabel() cannot be used with INCLUDES, EXCLUDES or a sub-select",
                query=self.text,
                pos=node.pos,
            )
        values: list[Any] = []
        for literal in literals:
            if literal.kind is ast.LiteralKind.NULL:
                values.append(None)
                continue
            if literal.kind is not ast.LiteralKind.STRING or not field.is_text:
                raise self._mismatch(field, literal)
            values.extend(_values_labelled(field, str(literal.value), like))
        kind = ConditionKind.NOT_IN if negated else ConditionKind.IN
        return BoundCondition(kind, path, None, tuple(values))

    def semi_join(
        self, root: SObjectDef, query: ast.Query, scope: str, pos: ast.Position
    ) -> BoundSemiJoin:
        """The sub-select of a semi-join or anti-join, with Salesforce's restrictions."""

        def refuse(message: str, at: ast.Position | None = pos) -> SoqlError:
            return malformed(message, query=self.text, pos=at)

        if self.in_semi_join:
            raise refuse("Nesting of semi join sub-selects is not supported")
        if scope == "OR":
            raise refuse("Semi join sub-selects are not allowed with the 'OR' operator")
        if scope:
            raise refuse(
                "Semi join sub-selects are only allowed at the top level WHERE expressions and "
                "not in nested WHERE expressions."
            )
        self.semi_joins += 1
        if self.semi_joins > MAX_SEMI_JOINS:
            raise refuse("Maximum 2 semi join sub-selects are allowed")
        sobject = self._sobject(query.sobject, query.sobject_pos)
        if sobject.name == root.name:
            raise self._error(
                "INVALID_TYPE",
                "The inner and outer selects should not be on the same object type",
                query.sobject_pos,
            )
        item = query.select[0]
        if (
            len(query.select) != 1
            or not isinstance(item, ast.SelectField)
            or not isinstance(item.expr, ast.FieldPath)
            or item.alias is not None
        ):
            raise refuse("Semi join sub-selects can only select one Id or reference field")
        if query.group_by or query.having or query.order_by:
            raise refuse("Semi join sub-selects can not have GROUP BY, HAVING or ORDER BY")
        if query.limit is not None or query.offset is not None:
            raise refuse("Semi join sub-selects can not have LIMIT or OFFSET")
        column = self.path(sobject, query.alias, item.expr)
        if column.field.type not in ID_TYPES:
            raise self._error(
                "INVALID_FIELD",
                f"Semi join sub-selects can only select an Id or reference field: "
                f"{column.field.name}",
                item.pos,
            )
        where = None
        if query.where is not None:
            self.in_semi_join = True
            try:
                where = self.condition(sobject, query.alias, query.where, AggregateMap())
            finally:
                self.in_semi_join = False
            if _has_aggregate(where):
                raise refuse("Cannot use an aggregate function in the WHERE clause", None)
        return BoundSemiJoin(sobject=sobject, column=column, where=where)

    def _typed(self, field: FieldDef, target: Target, literal: ast.Literal) -> Any:
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
        if isinstance(target, BoundDateFunction) and literal.kind is ast.LiteralKind.DATE_LITERAL:
            raise self._error(
                "INVALID_FIELD",
                f"Date literal {literal.text} cannot be compared with the date function "
                f"{target.function}",
                literal.pos,
            )
        return self.value(field, literal)

    def _condition_target(
        self,
        root: SObjectDef,
        alias: str | None,
        left: ast.FieldPath | ast.FunctionCall,
        aggregates: AggregateMap,
    ) -> Target:
        if isinstance(left, ast.FieldPath):
            return self.path(root, alias, left)
        _no_bare_convert_timezone(self, left)
        if left.name.upper() in DATE_FUNCTIONS:
            return self.date_function(root, alias, left)
        if left.name.upper() == "DISTANCE":
            return self.distance(root, alias, left)
        if left.name.upper() == "GROUPING":
            return self.grouping(root, alias, left)
        return aggregates.find_or_add(self, root, alias, left)


def _like_regex(pattern: str) -> re.Pattern[str]:
    r"""A SOQL LIKE pattern as a regular expression: `%` any run, `_` one character, `\%` and
    `\_` literal; case-insensitive like the database's."""
    parts = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern) and pattern[index + 1] in "%_":
            parts.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def _values_labelled(field: FieldDef, text: str, like: bool) -> list[str]:
    """The stored values whose label is `text` (or matches it as a LIKE pattern)."""
    if like:
        regex = _like_regex(text)
        return [entry.value for entry in field.picklist if regex.fullmatch(entry.label)]
    matches = [entry.value for entry in field.picklist if entry.label.lower() == text.lower()]
    if not any(entry.value.lower() == text.lower() for entry in field.picklist):
        matches.append(text)
    return matches


def _no_bare_convert_timezone(binder: Binder, call: ast.FunctionCall) -> None:
    if call.name.upper() == "CONVERTTIMEZONE":
        raise malformed(
            "convertTimezone() can only be used inside a date function",
            query=binder.text,
            pos=call.pos,
        )


def _is_date_function(expr: ast.FieldPath | ast.FunctionCall) -> bool:
    return isinstance(expr, ast.FunctionCall) and expr.name.upper() in DATE_FUNCTIONS


def _target_field(target: Target) -> FieldDef:
    if isinstance(target, BoundPath):
        return target.field
    if isinstance(target, BoundDistance):
        return DISTANCE_FIELD
    if isinstance(target, BoundGrouping):
        return COUNT_FIELD
    if isinstance(target, BoundDateFunction):
        field_name = f"{target.function}({target.path.field.name})"
        if target.function == "DAY_ONLY":
            return FieldDef(name=field_name, type=FieldType.DATE, label=field_name)
        return FieldDef(name=field_name, type=FieldType.INT, label=field_name)
    if target.path is None:
        return COUNT_FIELD
    if target.function in {AggregateFunction.COUNT, AggregateFunction.COUNT_DISTINCT}:
        return COUNT_FIELD
    return target.path.field


# The type of COUNT(...) results, for typing literals compared with them.
COUNT_FIELD = FieldDef(name="expr", type=FieldType.INT, label="expr")
DISTANCE_FIELD = FieldDef(name="DISTANCE", type=FieldType.DOUBLE, label="DISTANCE")


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

    def add_selected(self, call: ast.FunctionCall, aggregate: BoundAggregate) -> None:
        self.by_key.setdefault(_call_key(call), aggregate)

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
        raise binder._error("INVALID_TYPE", _BAD_TYPE.format(name=query.sobject), query.sobject_pos)
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
    _check_record_only_items(text, select, is_aggregate, group_kind)
    grouping = _Grouping(group_by)
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
    if where is not None and _has_aggregate(where):
        raise malformed(
            "Cannot use an aggregate function in the WHERE clause", query=text, pos=None
        )
    # HAVING takes no sub-selects: binding it as if nested refuses them.
    having = (
        binder.condition(root, alias, query.having, aggregates, "NOT") if query.having else None
    )
    for condition in (where, having):
        if condition is not None and _alternations(condition) > MAX_ALTERNATIONS:
            raise malformed("query is nested too deeply", query=text, pos=None)
    order_by = []
    for order_key in query.order_by:
        if isinstance(order_key.expr, ast.FieldPath):
            target: Target = binder.path(root, alias, order_key.expr)
        elif _is_date_function(order_key.expr):
            target = binder.date_function(root, alias, order_key.expr)
        elif order_key.expr.name.upper() == "DISTANCE":
            target = binder.distance(root, alias, order_key.expr)
        elif order_key.expr.name.upper() == "GROUPING":
            target = binder.grouping(root, alias, order_key.expr)
        else:
            _no_bare_convert_timezone(binder, order_key.expr)
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
    groupings += [t for t in _condition_targets(having) if isinstance(t, BoundGrouping)]
    _check_groupings(text, groupings, grouping, group_kind)
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
        group_kind=group_kind,
        owned_by_user=_owned_by_user(binder, root, query),
        data_categories=bind_categories(binder.registry, root, query.data_categories, text),
    )


def _check_record_only_items(
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


def _check_groupings(
    text: str, groupings: list[BoundGrouping], grouping: _Grouping, group_kind: str
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


class _Grouping:
    """What GROUP BY groups: fields, and date functions. A date function of a grouped date
    field is grouped too (Salesforce allows it for date fields, not for dateTime fields)."""

    def __init__(self, group_by: list[BoundPath | BoundDateFunction]) -> None:
        self.paths = {(p.owner, p.field.name) for p in group_by if isinstance(p, BoundPath)}
        self.functions = {f.key for f in group_by if isinstance(f, BoundDateFunction)}

    def covers(self, target: BoundPath | BoundDateFunction) -> bool:
        if isinstance(target, BoundPath):
            return (target.owner, target.field.name) in self.paths
        if target.key in self.functions:
            return True
        path = target.path
        return path.field.type is FieldType.DATE and (path.owner, path.field.name) in self.paths


def _check_grouping(
    text: str,
    select: list[SelectExpr],
    group_by: list[BoundPath | BoundDateFunction],
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
    grouping = _Grouping(group_by)
    for item in select:
        if isinstance(item, BoundColumn) and not grouping.covers(item.path):
            raise malformed(
                f"Field must be grouped or aggregated: {item.path.field.name}", query=text, pos=None
            )
    for path in _condition_paths(having):
        if isinstance(path, BoundDistance):
            raise malformed("Field must be grouped or aggregated: DISTANCE", query=text, pos=None)
        if not grouping.covers(path):
            field_name = path.field.name if isinstance(path, BoundPath) else path.path.field.name
            raise malformed(
                f"Field must be grouped or aggregated: {field_name}", query=text, pos=None
            )
    for order in order_by:
        target = order.target
        if isinstance(target, BoundDistance):
            raise malformed(
                "Ordered field must be grouped or aggregated: DISTANCE", query=text, pos=None
            )
        if isinstance(target, BoundPath | BoundDateFunction) and not grouping.covers(target):
            field_name = (
                target.field.name if isinstance(target, BoundPath) else target.path.field.name
            )
            raise malformed(
                f"Ordered field must be grouped or aggregated: {field_name}",
                query=text,
                pos=None,
            )


def _condition_targets(expr: BoundExpr | None) -> list[Target]:
    if expr is None:
        return []
    if isinstance(expr, BoundCondition):
        return [expr.target]
    if isinstance(expr, BoundNot):
        return _condition_targets(expr.operand)
    return [target for operand in expr.operands for target in _condition_targets(operand)]


def _condition_paths(
    expr: BoundExpr | None,
) -> list[BoundPath | BoundDateFunction | BoundDistance]:
    if expr is None:
        return []
    if isinstance(expr, BoundCondition):
        target = expr.target
        if isinstance(target, BoundPath | BoundDateFunction | BoundDistance):
            return [target]
        return []
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
