"""The core of binding: objects, field paths (with parent relationships and polymorphic
lookups), functions (aggregates, date functions, DISTANCE, GROUPING) and literals typed against
their fields, with Salesforce's errors.

Date literals (TODAY, LAST_N_DAYS:5, ...) resolve against the binder's OrgCalendar, to a
DateSpan of dates (date fields) or of UTC datetimes (datetime fields, local midnights in the
org's time zone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from app.metadata.model import ID_TYPES, NUMBER_TYPES, FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql import ast
from app.soql.bound import (
    BoundAggregate,
    BoundDistance,
    BoundFunction,
    BoundGrouping,
    BoundPath,
    DateSpan,
    Hop,
    Target,
)
from app.soql.date_literals import OrgCalendar
from app.soql.errors import SoqlError, malformed
from app.soql.function_registry import FUNCTIONS, FunctionRegistry
from app.soql.function_spec import AggregateFunction, FunctionKind, FunctionSpec
from app.soql.functions import EARTH_RADIUS
from app.soql.name_entity import TYPE_FIELD, name_field
from app.storage.ids import normalize_id

MAX_PARENT_DEPTH = 5
# Parent-to-child queries reach 5 levels (API 58 and later): the root and 4 nested subqueries.
MAX_CHILD_DEPTH = 4
MAX_SEMI_JOINS = 2
MAX_OFFSET = 2000
# Levels of AND inside OR inside AND...: each is a level of parentheses in the SQL, and SQLite's
# parser overflows at about 20 of them (the SOQL parser allows 100 levels of nesting).
MAX_ALTERNATIONS = 12
NO_SUCH_COLUMN = (
    "No such column '{name}' on entity '{entity}'. If you are attempting to use a custom field, "
    "be sure to append the '__c' after the custom field name. Please reference your WSDL or the "
    "describe call for the appropriate names."
)
BAD_RELATIONSHIP = (
    "Didn't understand relationship '{name}' in field path. If you are attempting to use a "
    "custom relationship, be sure to append the '__r' after the custom relationship name. "
    "Please reference your WSDL or the describe call for the appropriate names."
)
BAD_CHILD_RELATIONSHIP = (
    "Didn't understand relationship '{name}' in FROM part of query call. If you are attempting "
    "to use a custom relationship, be sure to append the '__r' after the custom relationship "
    "name. Please reference your WSDL or the describe call for the appropriate names."
)
BAD_TYPE = (
    "sObject type '{name}' is not supported. If you are attempting to use a custom object, be "
    "sure to append the '__c' after the entity name. Please reference your WSDL or the "
    "describe call for the appropriate names."
)
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


class BinderCore:
    """What every part of binding needs: the schema, the query text (so every error can point
    into it), paths, functions and literals."""

    def __init__(
        self,
        registry: SchemaRegistry,
        text: str,
        calendar: OrgCalendar,
        functions: FunctionRegistry = FUNCTIONS,
    ) -> None:
        self.registry = registry
        self.text = text
        self.calendar = calendar
        self.functions = functions
        self.semi_joins = 0
        self.in_semi_join = False

    # -- errors ---------------------------------------------------------------------------

    def error(self, code: str, reason: str, pos: ast.Position | None) -> SoqlError:
        return SoqlError(code, reason, query=self.text, pos=pos)

    # -- objects and paths ----------------------------------------------------------------

    def sobject_named(self, name: str, pos: ast.Position) -> SObjectDef:
        sobject = self.registry.get(name)
        if sobject is None:
            raise self.error("INVALID_TYPE", BAD_TYPE.format(name=name), pos)
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
                raise self.error(
                    "INVALID_FIELD", BAD_RELATIONSHIP.format(name=relationship), node.pos
                )
            if len(targets) > 1:
                # A polymorphic lookup reads the Name entity, which has no lookups to follow.
                if index != len(parts) - 2:
                    raise self.error(
                        "INVALID_FIELD", BAD_RELATIONSHIP.format(name=parts[index + 1]), node.pos
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
            raise self.error(
                "INVALID_FIELD",
                NO_SUCH_COLUMN.format(name=parts[-1], entity=current.name),
                node.pos,
            )
        return BoundPath(hops=tuple(hops), field=field)

    def _name_field(self, targets: list[SObjectDef], name: str, node: ast.FieldPath) -> FieldDef:
        """A field of the Name entity read through a polymorphic lookup: the first target's
        definition of it (a target without it reads null), or the object type for `Type`."""
        canonical = name_field(name)
        if canonical is None:
            raise self.error(
                "INVALID_FIELD", NO_SUCH_COLUMN.format(name=name, entity="Name"), node.pos
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
        spec = self.functions.get(call.name)
        if spec is None or spec.aggregate is None:
            # SQL habits (YEAR(), UPPER(), NOW()): SOQL has no such function.
            raise malformed(f"Unknown function: {call.name}", query=self.text, pos=call.pos)
        function, upper = spec.aggregate, spec.name
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
            raise self.error(
                "MALFORMED_QUERY",
                f"field {path.field.name} does not support aggregate operator {upper}",
                call.args[0].pos,
            )
        return BoundAggregate(function=function, path=path, name=name)

    def row_function(
        self, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str = ""
    ) -> BoundFunction:
        """A function of one field, per row: `CALENDAR_YEAR(CloseDate)`,
        `HOUR_IN_DAY(convertTimezone(CreatedDate))`, or any ROW function of the registry."""
        spec = self.functions.get(call.name)
        assert spec is not None and spec.kind is FunctionKind.ROW
        if len(call.args) != 1:
            raise malformed(
                f"{spec.name} requires exactly one field argument", query=self.text, pos=call.pos
            )
        arg, zone = self._row_argument(spec, call.args[0])
        path = self.path(root, alias, arg)
        self._check_argument_type(spec, path.field, zone, arg.pos)
        return BoundFunction(
            spec=spec,
            path=path,
            zone=zone,
            fiscal_start_month=self.calendar.fiscal_start_month,
            name=name,
        )

    def _row_argument(
        self, spec: FunctionSpec, arg: ast.FieldPath | ast.FunctionCall
    ) -> tuple[ast.FieldPath, str | None]:
        """A row function's field, and the org's time zone when a date function's field is
        wrapped in convertTimezone()."""
        if isinstance(arg, ast.FieldPath):
            return arg, None
        wrapper = self.functions.get(arg.name)
        is_time_zone = wrapper is not None and wrapper.kind is FunctionKind.TIME_ZONE
        if not (spec.date_function and is_time_zone) or len(arg.args) != 1:
            takes = "a field or convertTimezone(field)" if spec.date_function else "a field"
            raise malformed(f"{spec.name} only takes {takes}", query=self.text, pos=arg.pos)
        inner = arg.args[0]
        if not isinstance(inner, ast.FieldPath):
            raise malformed(
                "convertTimezone only takes a dateTime field", query=self.text, pos=arg.pos
            )
        return inner, self.calendar.zone

    def _check_argument_type(
        self, spec: FunctionSpec, field: FieldDef, zone: str | None, pos: ast.Position
    ) -> None:
        """The field is of a type the function takes (convertTimezone() takes dateTimes only)."""
        if field.type in spec.argument_types and (zone is None or field.type is FieldType.DATETIME):
            return
        if spec.date_function and field.type in (FieldType.DATE, FieldType.DATETIME):
            what = "convertTimezone" if zone is not None else spec.name
            reason = f"field {field.name} does not support {what}: it needs a dateTime field"
        elif spec.date_function:
            reason = (
                f"field {field.name} does not support date function {spec.name}: it is not a "
                "date or dateTime field"
            )
        else:
            types = ", ".join(sorted(kind.value for kind in spec.argument_types))
            reason = (
                f"field {field.name} does not support function {spec.name}: it takes a field "
                f"of type {types}"
            )
        raise self.error("INVALID_FIELD", reason, pos)

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
            raise self.error(
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
        target: BoundPath | BoundFunction
        if isinstance(arg, ast.FieldPath):
            target = self.path(root, alias, arg)
        elif self.functions.kind_of(arg.name) is FunctionKind.ROW:
            target = self.row_function(root, alias, arg)
        else:
            raise malformed(
                f"GROUPING() takes a field of the ROLLUP or CUBE, not {arg.name}()",
                query=self.text,
                pos=arg.pos,
            )
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
        return self.error(
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
            return self._id_value(field, literal)
        if field.is_text or field.type is FieldType.JUNCTIONIDLIST:
            if kind is not ast.LiteralKind.STRING:
                raise self._mismatch(field, literal)
            return literal.value
        if field.type is FieldType.BOOLEAN and kind is ast.LiteralKind.BOOLEAN:
            return literal.value
        if field.type in NUMBER_TYPES and kind in _NUMBER_KINDS:
            return _number_value(field, literal.value)
        if field.type is FieldType.DATE and kind is ast.LiteralKind.DATE:
            return literal.value
        if field.type is FieldType.DATETIME and kind is ast.LiteralKind.DATETIME:
            return _utc_naive(literal.value)
        raise self._mismatch(field, literal)

    def _id_value(self, field: FieldDef, literal: ast.Literal) -> str:
        """An id literal, as the 18-character id it names."""
        if literal.kind is not ast.LiteralKind.STRING:
            raise self._mismatch(field, literal)
        normalized = normalize_id(literal.value)
        if normalized is None:
            raise self.error(
                "INVALID_QUERY_FILTER_OPERATOR", f"invalid ID field: {literal.value}", None
            )
        return normalized

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


_NUMBER_KINDS = frozenset({ast.LiteralKind.INTEGER, ast.LiteralKind.DECIMAL})


def _number_value(field: FieldDef, number: Any) -> int | float:
    """A number literal as `field` compares it. A literal beyond the column's range compares as
    a float (inf when huge) instead of overflowing the driver: int columns hold 32 bits, and
    float(int) can overflow."""
    assert isinstance(number, int | Decimal)
    whole = int(number)
    if field.type is FieldType.INT and number == whole and abs(whole) < 2**31:
        return whole
    return float(Decimal(number))


def _utc_naive(moment: Any) -> datetime:
    """A datetime literal as stored: UTC, without a zone."""
    assert isinstance(moment, datetime)
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


def target_field(target: Target) -> FieldDef:
    if isinstance(target, BoundPath):
        return target.field
    if isinstance(target, BoundDistance):
        return DISTANCE_FIELD
    if isinstance(target, BoundGrouping):
        return COUNT_FIELD
    if isinstance(target, BoundFunction):
        field_name = f"{target.function}({target.path.field.name})"
        return FieldDef(name=field_name, type=target.spec.result_type, label=field_name)
    if target.path is None:
        return COUNT_FIELD
    if target.function in {AggregateFunction.COUNT, AggregateFunction.COUNT_DISTINCT}:
        return COUNT_FIELD
    return target.path.field


# The type of COUNT(...) results, for typing literals compared with them.
COUNT_FIELD = FieldDef(name="expr", type=FieldType.INT, label="expr")
DISTANCE_FIELD = FieldDef(name="DISTANCE", type=FieldType.DOUBLE, label="DISTANCE")


def call_key(call: ast.FunctionCall) -> tuple[str, tuple[str, ...]]:
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
        self.by_key.setdefault(call_key(call), aggregate)

    def find_or_add(
        self, binder: BinderCore, root: SObjectDef, alias: str | None, call: ast.FunctionCall
    ) -> BoundAggregate:
        key = call_key(call)
        found = self.by_key.get(key)
        if found is None:
            self.hidden += 1
            found = binder.aggregate(root, alias, call, f"__hidden{self.hidden}")
            self.by_key[key] = found
        return found
