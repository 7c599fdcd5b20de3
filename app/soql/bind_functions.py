"""Function calls bound by kind (the registry says which): aggregates, row functions (the date
functions and any SQL-backed one), DISTANCE and GROUPING; and the aggregates of one query, shared
by its clauses."""

from __future__ import annotations

from decimal import Decimal

from app.metadata.model import COMPOUND_TYPES, NUMBER_TYPES, FieldDef, FieldType, SObjectDef
from app.soql import ast
from app.soql.bind_context import BindContext
from app.soql.bind_paths import bind_path
from app.soql.bound import (
    BoundAggregate,
    BoundDistance,
    BoundFunction,
    BoundGrouping,
    BoundPath,
    Target,
)
from app.soql.function_spec import AggregateFunction, FunctionKind, FunctionSpec
from app.soql.functions import EARTH_RADIUS

# The type of COUNT(...) results, for typing literals compared with them.
COUNT_FIELD = FieldDef(name="expr", type=FieldType.INT, label="expr")
DISTANCE_FIELD = FieldDef(name="DISTANCE", type=FieldType.DOUBLE, label="DISTANCE")


def bind_aggregate(
    ctx: BindContext, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str
) -> BoundAggregate:
    spec = ctx.functions.get(call.name)
    if spec is None or spec.aggregate is None:
        # SQL habits (YEAR(), UPPER(), NOW()): SOQL has no such function.
        raise ctx.malformed(f"Unknown function: {call.name}", call.pos)
    function, upper = spec.aggregate, spec.name
    if not call.args:
        if function is not AggregateFunction.COUNT:
            raise ctx.malformed("unexpected token: ')'", call.pos)
        return BoundAggregate(function=function, path=None, name=name)
    if len(call.args) != 1 or not isinstance(call.args[0], ast.FieldPath):
        raise ctx.malformed(f"{upper}() takes exactly one field", call.pos)
    path = bind_path(ctx, root, alias, call.args[0])
    numeric_only = function in {AggregateFunction.SUM, AggregateFunction.AVG}
    # What describe says is not aggregatable (a long text area, a checkbox, a time) takes no
    # aggregate at all, COUNT and COUNT_DISTINCT included; SUM and AVG take numbers only.
    refused = not path.field.aggregatable or (numeric_only and path.field.type not in NUMBER_TYPES)
    if refused:
        raise ctx.error(
            "MALFORMED_QUERY",
            f"field {path.field.name} does not support aggregate operator {upper}",
            call.args[0].pos,
        )
    return BoundAggregate(function=function, path=path, name=name)


def bind_row_function(
    ctx: BindContext, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str = ""
) -> BoundFunction:
    """A function of one field, per row: `CALENDAR_YEAR(CloseDate)`,
    `HOUR_IN_DAY(convertTimezone(CreatedDate))`, or any ROW function of the registry."""
    spec = ctx.functions.get(call.name)
    assert spec is not None and spec.kind is FunctionKind.ROW
    if len(call.args) != 1:
        raise ctx.malformed(f"{spec.name} requires exactly one field argument", call.pos)
    arg, zone = _row_argument(ctx, spec, call.args[0])
    path = bind_path(ctx, root, alias, arg)
    _check_argument_type(ctx, spec, path.field, zone, arg.pos)
    return BoundFunction(
        spec=spec,
        path=path,
        zone=zone,
        fiscal_start_month=ctx.calendar.fiscal_start_month,
        name=name,
    )


def _row_argument(
    ctx: BindContext, spec: FunctionSpec, arg: ast.FieldPath | ast.FunctionCall
) -> tuple[ast.FieldPath, str | None]:
    """A row function's field, and the org's time zone when a date function's field is wrapped
    in convertTimezone()."""
    if isinstance(arg, ast.FieldPath):
        return arg, None
    is_time_zone = ctx.functions.kind_of(arg.name) is FunctionKind.TIME_ZONE
    if not (spec.date_function and is_time_zone) or len(arg.args) != 1:
        takes = "a field or convertTimezone(field)" if spec.date_function else "a field"
        raise ctx.malformed(f"{spec.name} only takes {takes}", arg.pos)
    inner = arg.args[0]
    if not isinstance(inner, ast.FieldPath):
        raise ctx.malformed("convertTimezone only takes a dateTime field", arg.pos)
    return inner, ctx.calendar.zone


def _check_argument_type(
    ctx: BindContext, spec: FunctionSpec, field: FieldDef, zone: str | None, pos: ast.Position
) -> None:
    """The field is of a type the function takes (convertTimezone() takes dateTimes only)."""
    if field.type in spec.argument_types and (zone is None or field.type is FieldType.DATETIME):
        return
    if spec.date_function and field.type in (FieldType.DATE, FieldType.DATETIME):
        what = "convertTimezone" if zone is not None else spec.name
        reason = f"field {field.name} does not support {what}: it needs a dateTime field"
    elif spec.date_function:
        reason = (
            f"field {field.name} does not support date function {spec.name}: it is not a date "
            "or dateTime field"
        )
    else:
        types = ", ".join(sorted(kind.value for kind in spec.argument_types))
        reason = (
            f"field {field.name} does not support function {spec.name}: it takes a field of "
            f"type {types}"
        )
    raise ctx.error("INVALID_FIELD", reason, pos)


def bind_distance(
    ctx: BindContext, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str = ""
) -> BoundDistance:
    """`DISTANCE(Location__c, GEOLOCATION(37.77, -122.42), 'mi')` (the parser checked its
    shape): a point on the globe, a unit, and a location field."""
    lat_literal, lon_literal, unit_literal = call.literals
    point = (float(Decimal(str(lat_literal.value))), float(Decimal(str(lon_literal.value))))
    for value, limit, literal in ((point[0], 90, lat_literal), (point[1], 180, lon_literal)):
        if not -limit <= value <= limit:
            raise ctx.malformed(
                f"GEOLOCATION() takes a latitude within 90 and a longitude within 180 "
                f"degrees: {literal.text}",
                literal.pos,
            )
    unit = str(unit_literal.value)
    if unit not in EARTH_RADIUS:
        raise ctx.malformed(
            f"DISTANCE() takes the unit 'mi' or 'km', not {unit_literal.text}", unit_literal.pos
        )
    located = call.args[0]
    assert isinstance(located, ast.FieldPath)  # the parser reads DISTANCE's field as a path
    path = bind_path(ctx, root, alias, located)
    field = path.field
    if field.type not in COMPOUND_TYPES:
        raise ctx.error(
            "INVALID_FIELD",
            f"DISTANCE() takes a location or address field: {field.name} is not one",
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


def bind_grouping(
    ctx: BindContext, root: SObjectDef, alias: str | None, call: ast.FunctionCall, name: str = ""
) -> BoundGrouping:
    """`GROUPING(Status)`: 1 on the ROLLUP/CUBE rows that sum over Status, else 0."""
    if len(call.args) != 1:
        raise ctx.malformed("GROUPING() takes exactly one field", call.pos)
    arg = call.args[0]
    target: BoundPath | BoundFunction
    if isinstance(arg, ast.FieldPath):
        target = bind_path(ctx, root, alias, arg)
    elif ctx.functions.kind_of(arg.name) is FunctionKind.ROW:
        target = bind_row_function(ctx, root, alias, arg)
    else:
        raise ctx.malformed(
            f"GROUPING() takes a field of the ROLLUP or CUBE, not {arg.name}()", arg.pos
        )
    return BoundGrouping(target=target, name=name)


def target_field(target: Target) -> FieldDef:
    """The field a target's values are typed as, for literals compared with them."""
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
        self, ctx: BindContext, root: SObjectDef, alias: str | None, call: ast.FunctionCall
    ) -> BoundAggregate:
        key = call_key(call)
        found = self.by_key.get(key)
        if found is None:
            self.hidden += 1
            found = bind_aggregate(ctx, root, alias, call, f"__hidden{self.hidden}")
            self.by_key[key] = found
        return found
