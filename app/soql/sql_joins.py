"""The FROM of a compiled query: the root table, an outer join per parent relationship chain
(one per object a polymorphic lookup may point at), and the SQL of each selected expression:
fields, date functions, DISTANCE, aggregates; and the ORDER BY keys over them.
"""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import (
    ColumnElement,
    and_,
    case,
    distinct,
    func,
    literal,
    null,
)
from sqlalchemy.sql.expression import FromClause

from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.soql.bound import (
    BoundAggregate,
    BoundDistance,
    BoundFunction,
    BoundGrouping,
    BoundPath,
    BoundQuery,
    Hop,
    Target,
)
from app.soql.function_spec import AggregateFunction
from app.soql.functions import (
    EARTH_RADIUS,
    GeoDistance,
    case_insensitive,
    to_local_time,
)
from app.soql.name_entity import NAME_TYPES, TYPE_FIELD
from app.storage.tables import TableSet
from app.storage.text import group_spelling, key_of, text_extreme, text_key


class Joins:
    """The root table and one outer-joined alias per parent relationship chain."""

    def __init__(
        self, tables: TableSet, sobject: str, prefix: str = "t", rows: FromClause | None = None
    ) -> None:
        """`rows`: the root's rows where they are no table of `tables` (an activity view's)."""
        self.tables = tables
        self.prefix = prefix
        self.sub_selects = 0
        self.root = (tables[sobject] if rows is None else rows).alias(f"{prefix}0")
        self.aliases: dict[tuple[str, ...], FromClause] = {(): self.root}
        self.from_clause: FromClause = self.root
        # One SQL element per date function, reused by SELECT, GROUP BY, HAVING and ORDER BY:
        # its bound parameters then keep one name, so PostgreSQL sees the same expression.
        self.row_functions: dict[tuple[str, str, str, str | None], ColumnElement[Any]] = {}
        self.name_entity_columns: dict[tuple[str, ...], ColumnElement[Any]] = {}

    def table_for(self, hops: tuple[Hop, ...]) -> FromClause:
        key: tuple[str, ...] = ()
        current: FromClause = self.root
        for hop in hops:
            key = (*key, hop.name.lower())
            joined = self.aliases.get(key)
            if joined is None:
                joined = self.tables[hop.target.name].alias(f"{self.prefix}{len(self.aliases)}")
                # A deleted parent reads as an empty lookup, as after Salesforce clears it.
                target_key = joined.c[hop.target.key_field]
                on = and_(target_key == current.c[hop.lookup.name], joined.c.IsDeleted.is_(False))
                self.from_clause = self.from_clause.outerjoin(joined, on)
                self.aliases[key] = joined
            current = joined
        return current

    def _alternative_tables(self, hops: tuple[Hop, ...]) -> list[tuple[SObjectDef, FromClause]]:
        """The last step of `hops` is a polymorphic lookup: one outer join per object it may
        point at (the lookup's value matches the Id of at most one of them)."""
        base = self.table_for(hops[:-1])
        hop = hops[-1]
        prefix = tuple(h.name.lower() for h in hops)
        tables = []
        for target in hop.alternatives:
            key = (*prefix, f"@{target.name.lower()}")
            joined = self.aliases.get(key)
            if joined is None:
                joined = self.tables[target.name].alias(f"{self.prefix}{len(self.aliases)}")
                on = and_(joined.c.Id == base.c[hop.lookup.name], joined.c.IsDeleted.is_(False))
                self.from_clause = self.from_clause.outerjoin(joined, on)
                self.aliases[key] = joined
            tables.append((target, joined))
        return tables

    def column(self, path: BoundPath) -> ColumnElement[Any]:
        if not (path.hops and path.hops[-1].alternatives):
            return self.table_for(path.hops).c[path.field.name]
        key = (*(hop.name.lower() for hop in path.hops), path.field.name)
        found = self.name_entity_columns.get(key)
        if found is None:
            # Built once and reused, like a date function: one set of bound parameters.
            found = self.name_entity_columns[key] = self._name_entity_column(path)
        return found

    def _name_entity_column(self, path: BoundPath) -> ColumnElement[Any]:
        """A Name entity field read through a polymorphic lookup."""
        tables = self._alternative_tables(path.hops)
        if path.field is TYPE_FIELD:
            # Compared as text is (`Owner.Type = 'queue'`), so case-insensitively.
            return case_insensitive(
                case(
                    *(
                        (table.c.Id.is_not(None), literal(NAME_TYPES.get(target.name, target.name)))
                        for target, table in tables
                    ),
                    else_=null(),
                )
            )
        found = []
        for target, table in tables:
            # The Name entity's Name is each object's name field (a Case's CaseNumber).
            name = (target.name_field or "Name") if path.field.name == "Name" else path.field.name
            if target.field(name) is not None:
                found.append(table.c[name])
        if not found:
            return null()
        if len(found) == 1:
            return found[0]
        merged = func.coalesce(*found)
        return case_insensitive(merged) if path.field.is_text else merged

    def parent_id(self, hops: tuple[Hop, ...]) -> ColumnElement[Any]:
        """The Id of the record the path `hops` leads to (null when the lookup is empty)."""
        if hops[-1].alternatives:
            ids = [table.c.Id for _, table in self._alternative_tables(hops)]
            return func.coalesce(*ids) if len(ids) > 1 else ids[0]
        return self.table_for(hops).c[hops[-1].target.key_field]

    def typeof_table(self, lookup: str, target: str) -> FromClause:
        """The table of one TYPEOF branch, joined where the polymorphic lookup points at it."""
        key = ("typeof", lookup.lower(), target.lower())
        joined = self.aliases.get(key)
        if joined is None:
            joined = self.tables[target].alias(f"{self.prefix}{len(self.aliases)}")
            on = and_(joined.c.Id == self.root.c[lookup], joined.c.IsDeleted.is_(False))
            self.from_clause = self.from_clause.outerjoin(joined, on)
            self.aliases[key] = joined
        return joined

    def grouping(self, grouping: BoundGrouping) -> ColumnElement[Any]:
        raise AssertionError("GROUPING() is ROLLUP's and CUBE's; the binder keeps it there")

    def aggregate(self, aggregate: BoundAggregate) -> ColumnElement[Any]:
        if aggregate.path is None:
            return func.count()
        column = self.column(aggregate.path)
        is_text = aggregate.path.field.is_text  # compared by its key, letter case ignored
        match aggregate.function:
            case AggregateFunction.COUNT:
                return func.count(column)
            case AggregateFunction.COUNT_DISTINCT:
                return func.count(distinct(text_key(column) if is_text else column))
            case AggregateFunction.SUM:
                return decimal_sum(column, aggregate.path.field)
            case AggregateFunction.AVG:
                return decimal_average(column, aggregate.path.field)
            case AggregateFunction.MIN:
                return text_extreme(column, func.min) if is_text else func.min(column)
            case AggregateFunction.MAX:
                return text_extreme(column, func.max) if is_text else func.max(column)

    def group_key(self, target: BoundPath | BoundFunction) -> ColumnElement[Any]:
        """What GROUP BY groups a target on: text by its key (values that differ only in letter
        case are one group, as in Salesforce)."""
        value = self.expression(target)
        return text_key(value) if is_text_target(target) else value

    def group_value(self, target: BoundPath | BoundFunction) -> ColumnElement[Any]:
        """A grouped target as selected: for text, one of the group's values, the same on every
        back end (the first by code point)."""
        value = self.expression(target)
        return group_spelling(value) if is_text_target(target) else value

    def row_function(self, function: BoundFunction) -> ColumnElement[Any]:
        """A row function's SQL, built once per query for each distinct use."""
        found = self.row_functions.get(function.key)
        if found is None:
            value = self.column(function.path)
            if function.zone is not None:
                value = to_local_time(value, function.zone)
            found = function.spec.row_sql(value, function.fiscal_start_month)
            self.row_functions[function.key] = found
        return found

    def expression(self, target: BoundPath | BoundFunction | BoundDistance) -> ColumnElement[Any]:
        if isinstance(target, BoundFunction):
            return self.row_function(target)
        if isinstance(target, BoundDistance):
            return GeoDistance(
                self.column(target.latitude),
                self.column(target.longitude),
                target.point,
                EARTH_RADIUS[target.unit],
            )
        return self.column(target)


def decimal_sum(column: ColumnElement[Any], field: FieldDef) -> ColumnElement[Any]:
    """SUM as Salesforce adds: in decimal, so the sum has the field's scale exactly. A float sum
    carries noise (26.15 + ... = 26.150000000000002), and two groups whose sums are equal would
    sort apart; counting in units of the scale and dividing once gives the double nearest the
    decimal sum on every back end."""
    if field.type is FieldType.INT:
        return func.sum(column)
    units = _units(field)
    return func.round(func.sum(column) * units) / units


def decimal_average(column: ColumnElement[Any], field: FieldDef) -> ColumnElement[Any]:
    """AVG as the decimal sum over the count, one division of two exact integers: equal
    averages are equal doubles, however their groups add up (0.30 / 3 and 0.10 / 1)."""
    if field.type is FieldType.INT:
        return func.avg(column)
    units = _units(field)
    return func.round(func.sum(column) * units) / (func.count(column) * units)


def _units(field: FieldDef) -> ColumnElement[Any]:
    """How many of the field's smallest steps make one: 100 for a scale of 2."""
    return literal(float(10**field.scale))


class Columns(Protocol):
    """What conditions and ORDER BY read their targets from: the joined tables of a query, or
    the output columns of a ROLLUP/CUBE union."""

    def aggregate(self, aggregate: BoundAggregate) -> ColumnElement[Any]: ...

    def grouping(self, grouping: BoundGrouping) -> ColumnElement[Any]: ...

    def expression(
        self, target: BoundPath | BoundFunction | BoundDistance
    ) -> ColumnElement[Any]: ...


def target_column(joins: Columns, target: Target) -> ColumnElement[Any]:
    if isinstance(target, BoundAggregate):
        return joins.aggregate(target)
    if isinstance(target, BoundGrouping):
        return joins.grouping(target)
    return joins.expression(target)


def order_keys(joins: Columns, bound: BoundQuery) -> list[ColumnElement[Any]]:
    keys: list[ColumnElement[Any]] = []
    for order in bound.order_by:
        for value in sort_values(order.target, target_column(joins, order.target)):
            key = value.desc() if order.descending else value.asc()
            keys.append(key.nulls_first() if order.nulls_first else key.nulls_last())
    return keys


def sort_values(target: Target, column: ColumnElement[Any]) -> list[ColumnElement[Any]]:
    """What ORDER BY sorts a target by, as Salesforce sorts: a picklist by the order of its
    values (a value it does not list after them, by text), text by its key (upper-cased, by
    code point)."""
    field = text_field(target)
    if field is None:
        return [column]
    key = text_key(column)
    if isinstance(target, BoundPath) and field.type is FieldType.PICKLIST and field.picklist:
        ranks = [(key == key_of(entry.value), index) for index, entry in enumerate(field.picklist)]
        rank = case((key.is_(None), null()), *ranks, else_=len(field.picklist))
        return [rank, key]
    return [key]


def is_text_target(target: Target) -> bool:
    return text_field(target) is not None


def text_field(target: Target) -> FieldDef | None:
    """The text field whose values a target has: itself, or the field of MIN() or MAX()."""
    field = _sorted_field(target)
    return field if field is not None and field.is_text else None


def _sorted_field(target: Target) -> FieldDef | None:
    """The field whose values a target sorts: itself, or the field of MIN() or MAX()."""
    if isinstance(target, BoundPath):
        return target.field
    ordered = (AggregateFunction.MIN, AggregateFunction.MAX)
    if isinstance(target, BoundAggregate) and target.function in ordered and target.path:
        return target.path.field
    return None
