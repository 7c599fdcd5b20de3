"""Compiles a bound query to one SQLAlchemy Core SELECT with bound parameters only.

Salesforce semantics, not SQL's: `!=` and NOT IN match nulls, an empty string is null, `= null`
on a checkbox means false, NOT of an unknown is true, nulls sort first unless told otherwise.
Case-insensitive text comes from the column types (NOCASE on SQLite, citext on PostgreSQL).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    bindparam,
    case,
    distinct,
    false,
    func,
    literal,
    not_,
    null,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.sql.expression import FromClause

from app.metadata.model import FieldType, SObjectDef
from app.soql.ast import Operator
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
    TypeOfBranch,
)
from app.soql.data_categories import category_condition
from app.soql.functions import EARTH_RADIUS, GeoDistance, date_part, day_only, to_local_time
from app.soql.name_entity import TYPE_FIELD
from app.storage.tables import TableSet

# The bound parameters every statement may take: the querying user (USING SCOPE mine) and, for
# a child subquery, the Ids of the batch of parent rows it is run for.
USER_PARAM = "lf_user_id"
PARENT_IDS_PARAM = "lf_parent_ids"


@dataclass(frozen=True)
class TypeOfColumns:
    """Where a TYPEOF lands in a row: per branch, the row index of the target's Id (null when
    the lookup points elsewhere), then of each of its fields."""

    typeof: BoundTypeOf
    branches: tuple[tuple[TypeOfBranch, int, tuple[int, ...]], ...]


@dataclass(frozen=True)
class ChildQuery:
    """A parent-to-child subquery, run once per batch of parent rows (PARENT_IDS_PARAM);
    `link_index` is where each child row holds its parent's Id."""

    subquery: BoundSubquery
    compiled: CompiledQuery
    link_index: int


# Where one selected item lands: a row index, a TYPEOF's columns, or a child subquery.
Slot = int | TypeOfColumns | ChildQuery


@dataclass(frozen=True)
class CompiledQuery:
    """The statement, and where each selected value lands in its result rows.

    Row layout for record queries: the root Id, then per selected item its parents' Ids (for
    nesting and nulls) and its value. Aggregate queries: the selected expressions in order.
    """

    statement: Select[Any]
    bound: BoundQuery
    parent_id_index: dict[tuple[str, ...], int]
    value_index: tuple[Slot, ...]


def like_pattern(value: str) -> str:
    """A SOQL LIKE pattern for SQL LIKE with ESCAPE '\\': `\\%` and `\\_` stay literal."""
    out = []
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value) and value[index + 1] in "%_":
            out.append(value[index : index + 2])
            index += 2
            continue
        out.append("\\\\" if char == "\\" else char)
        index += 1
    return "".join(out)


def _like_literal(value: str) -> str:
    """`value` as a LIKE pattern (ESCAPE '\\') that matches exactly that text."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class _Joins:
    """The root table and one outer-joined alias per parent relationship chain."""

    def __init__(self, tables: TableSet, sobject: str, prefix: str = "t") -> None:
        self.tables = tables
        self.prefix = prefix
        self.sub_selects = 0
        self.root = tables[sobject].alias(f"{prefix}0")
        self.aliases: dict[tuple[str, ...], FromClause] = {(): self.root}
        self.from_clause: FromClause = self.root
        # One SQL element per date function, reused by SELECT, GROUP BY, HAVING and ORDER BY:
        # its bound parameters then keep one name, so PostgreSQL sees the same expression.
        self.date_functions: dict[tuple[str, str, str, str | None], ColumnElement[Any]] = {}
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
                on = and_(joined.c.Id == current.c[hop.lookup.name], joined.c.IsDeleted.is_(False))
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
            return case(
                *((table.c.Id.is_not(None), literal(target.name)) for target, table in tables),
                else_=null(),
            )
        found = []
        for target, table in tables:
            # The Name entity's Name is each object's name field (a Case's CaseNumber).
            name = (target.name_field or "Name") if path.field.name == "Name" else path.field.name
            if target.field(name) is not None:
                found.append(table.c[name])
        if not found:
            return null()
        return func.coalesce(*found) if len(found) > 1 else found[0]

    def parent_id(self, hops: tuple[Hop, ...]) -> ColumnElement[Any]:
        """The Id of the record the path `hops` leads to (null when the lookup is empty)."""
        if hops[-1].alternatives:
            ids = [table.c.Id for _, table in self._alternative_tables(hops)]
            return func.coalesce(*ids) if len(ids) > 1 else ids[0]
        return self.table_for(hops).c.Id

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
        match aggregate.function:
            case AggregateFunction.COUNT:
                return func.count(column)
            case AggregateFunction.COUNT_DISTINCT:
                return func.count(distinct(column))
            case AggregateFunction.SUM:
                return func.sum(column)
            case AggregateFunction.AVG:
                return func.avg(column)
            case AggregateFunction.MIN:
                return func.min(column)
            case AggregateFunction.MAX:
                return func.max(column)

    def date_function(self, function: BoundDateFunction) -> ColumnElement[Any]:
        found = self.date_functions.get(function.key)
        if found is None:
            value = self.column(function.path)
            if function.zone is not None:
                value = to_local_time(value, function.zone)
            if function.function == "DAY_ONLY":
                found = day_only(value)
            else:
                found = date_part(function.function, value, function.fiscal_start_month)
            self.date_functions[function.key] = found
        return found

    def expression(
        self, target: BoundPath | BoundDateFunction | BoundDistance
    ) -> ColumnElement[Any]:
        if isinstance(target, BoundDateFunction):
            return self.date_function(target)
        if isinstance(target, BoundDistance):
            return GeoDistance(
                self.column(target.latitude),
                self.column(target.longitude),
                target.point,
                EARTH_RADIUS[target.unit],
            )
        return self.column(target)


class _Columns(Protocol):
    """What conditions and ORDER BY read their targets from: the joined tables of a query, or
    the output columns of a ROLLUP/CUBE union."""

    def aggregate(self, aggregate: BoundAggregate) -> ColumnElement[Any]: ...

    def grouping(self, grouping: BoundGrouping) -> ColumnElement[Any]: ...

    def expression(
        self, target: BoundPath | BoundDateFunction | BoundDistance
    ) -> ColumnElement[Any]: ...


def _target(joins: _Columns, target: Target) -> ColumnElement[Any]:
    if isinstance(target, BoundAggregate):
        return joins.aggregate(target)
    if isinstance(target, BoundGrouping):
        return joins.grouping(target)
    return joins.expression(target)


def _is_null_value(condition: BoundCondition, value: Any) -> bool:
    """Salesforce stores no empty text: `''` means null."""
    return value is None or (value == "" and isinstance(condition.target, BoundPath))


def _compare(condition: BoundCondition, column: ColumnElement[Any]) -> ColumnElement[Any]:
    value = condition.value
    op = condition.op
    is_checkbox = (
        isinstance(condition.target, BoundPath) and condition.target.field.type is FieldType.BOOLEAN
    )
    if isinstance(value, DateSpan):
        return _compare_span(op, value, column)
    if _is_null_value(condition, value):
        if is_checkbox and op in (Operator.EQ, Operator.NE):
            # Checkboxes are never null: `= null` matches false and `!= null` true.
            return column.is_(op is Operator.NE)
        if op is Operator.EQ:
            return column.is_(None)
        if op is Operator.NE:
            return column.is_not(None)
        return false()
    comparisons: dict[Operator, Any] = {
        Operator.EQ: lambda: column == value,
        Operator.NE: lambda: or_(column != value, column.is_(None)),
        Operator.LT: lambda: column < value,
        Operator.LE: lambda: column <= value,
        Operator.GT: lambda: column > value,
        Operator.GE: lambda: column >= value,
        Operator.LIKE: lambda: column.like(like_pattern(str(value)), escape="\\"),
    }
    if op in comparisons:
        result: ColumnElement[Any] = comparisons[op]()
        return result
    raise AssertionError(op)


def _compare_span(
    op: Operator | None, span: DateSpan, column: ColumnElement[Any]
) -> ColumnElement[Any]:
    """A date literal: `=` is membership of the half-open range, `<` and `>=` compare with its
    start, `<=` and `>` with its end; `!=` also matches nulls."""
    comparisons: dict[Operator | None, Any] = {
        Operator.EQ: lambda: _within(span, column),
        Operator.NE: lambda: or_(column < span.start, column >= span.end, column.is_(None)),
        Operator.LT: lambda: column < span.start,
        Operator.LE: lambda: column < span.end,
        Operator.GT: lambda: column >= span.end,
        Operator.GE: lambda: column >= span.start,
    }
    if op not in comparisons:
        raise AssertionError(op)
    result: ColumnElement[Any] = comparisons[op]()
    return result


def _within(span: DateSpan, column: ColumnElement[Any]) -> ColumnElement[bool]:
    return and_(column >= span.start, column < span.end)


def _membership(condition: BoundCondition, column: ColumnElement[Any]) -> ColumnElement[bool]:
    spans = [v for v in condition.value if isinstance(v, DateSpan)]
    values = [
        v
        for v in condition.value
        if not isinstance(v, DateSpan) and not _is_null_value(condition, v)
    ]
    has_null = len(values) + len(spans) != len(condition.value)
    if spans:
        within: ColumnElement[bool] = or_(
            column.in_(values) if values else false(), *(_within(span, column) for span in spans)
        )
        if condition.kind is ConditionKind.IN:
            return or_(within, column.is_(None)) if has_null else within
        # NOT IN matches nulls, like !=, unless null is one of the excluded values.
        excluded = within.is_not(True)
        return and_(excluded, column.is_not(None)) if has_null else excluded
    inside = column.in_(values) if values else false()
    if condition.kind is ConditionKind.IN:
        return or_(inside, column.is_(None)) if has_null else inside
    outside = column.not_in(values) if values else true()
    # NOT IN matches nulls, like !=, unless null is one of the excluded values.
    return and_(outside, column.is_not(None)) if has_null else or_(outside, column.is_(None))


def _semi_join(
    joins: _Joins, condition: BoundCondition, column: ColumnElement[Any]
) -> ColumnElement[bool]:
    """`column [NOT] IN (SELECT ...)` over the sub-select's live rows. Nulls in the sub-select
    are left out, so that NOT IN excludes nothing for them; NOT IN matches a null column."""
    semi_join: BoundSemiJoin = condition.value
    joins.sub_selects += 1
    inner = _Joins(joins.tables, semi_join.sobject.name, prefix=f"s{joins.sub_selects}_")
    selected = inner.column(semi_join.column)
    filters: list[ColumnElement[bool]] = [inner.root.c.IsDeleted.is_(False), selected.is_not(None)]
    if semi_join.where is not None:
        filters.append(_condition(inner, semi_join.where))
    sub = select(selected).select_from(inner.from_clause).where(*filters)
    if condition.kind is ConditionKind.IN:
        return column.in_(sub)
    return or_(column.is_(None), column.not_in(sub))


def _includes(condition: BoundCondition, column: ColumnElement[Any]) -> ColumnElement[bool]:
    wrapped = func.lower(literal(";") + column + literal(";"))
    alternatives = []
    for value in condition.value:
        parts = [part.strip().lower() for part in str(value).split(";") if part.strip()]
        # A value is matched whole: `%` and `_` in it are literal, not LIKE wildcards.
        alternatives.append(
            and_(*(wrapped.like(f"%;{_like_literal(part)};%", escape="\\") for part in parts))
        )
    matched = or_(*alternatives) if alternatives else false()
    if condition.kind is ConditionKind.INCLUDES:
        return matched
    return or_(not_(matched), column.is_(None))


# SQLite parses `a AND b AND ...` as a chain and refuses one deeper than 1000; longer AND/OR
# lists are split into parenthesised halves, which keeps the depth logarithmic.
_FLAT_OPERANDS = 64


def _joined(keyword: str, clauses: list[ColumnElement[bool]]) -> ColumnElement[bool]:
    if len(clauses) <= _FLAT_OPERANDS:
        return and_(*clauses) if keyword == "AND" else or_(*clauses)
    middle = len(clauses) // 2
    # A high-precedence operator makes SQLAlchemy parenthesise both halves (and_ would flatten).
    joiner = _joined(keyword, clauses[:middle]).bool_op(keyword, precedence=100)
    return joiner(_joined(keyword, clauses[middle:]))


def _condition(
    joins: _Joins | _UnionColumns, expr: BoundExpr, negated: bool = False
) -> ColumnElement[bool]:
    """The SQL of a condition. Salesforce's NOT is two-valued (NOT of "no match" is a match), so
    negations are pushed down to the leaves (De Morgan), where `IS NOT TRUE` also matches SQL's
    unknown: the SQL then nests no deeper than the parentheses, whereas one NOT(...) per level
    overflows SQLite's parser and SQLAlchemy's recursion well within the parser's depth limit."""
    if isinstance(expr, BoundNot):
        return _condition(joins, expr.operand, not negated)
    if isinstance(expr, BoundAnd | BoundOr):
        operands = [_condition(joins, operand, negated) for operand in expr.operands]
        return _joined("AND" if isinstance(expr, BoundAnd) != negated else "OR", operands)
    column = _target(joins, expr.target)
    if isinstance(expr.value, BoundSemiJoin):
        assert isinstance(joins, _Joins)  # HAVING, the only union condition, has no sub-selects
        leaf = _semi_join(joins, expr, column)
    elif expr.kind is ConditionKind.COMPARE:
        leaf = _compare(expr, column)
    elif expr.kind in (ConditionKind.IN, ConditionKind.NOT_IN):
        leaf = _membership(expr, column)
    else:
        leaf = _includes(expr, column)
    return leaf.is_not(True) if negated else leaf


def _order(joins: _Columns, bound: BoundQuery) -> list[ColumnElement[Any]]:
    keys: list[ColumnElement[Any]] = []
    for order in bound.order_by:
        column = _target(joins, order.target)
        key = column.desc() if order.descending else column.asc()
        keys.append(key.nulls_first() if order.nulls_first else key.nulls_last())
    return keys


# The largest LIMIT the databases take (a BIGINT); no org holds more rows than that.
MAX_SQL_LIMIT = 2**63 - 1


def _filters(joins: _Joins, bound: BoundQuery, include_deleted: bool) -> list[ColumnElement[bool]]:
    root = joins.root
    filters: list[ColumnElement[bool]] = []
    if not include_deleted:
        filters.append(root.c.IsDeleted.is_(False))
    if bound.owned_by_user:
        filters.append(root.c.OwnerId == bindparam(USER_PARAM))
    if bound.data_categories is not None:
        filters.append(category_condition(bound.data_categories, root, joins.tables))
    if bound.where is not None:
        filters.append(_condition(joins, bound.where))
    return filters


def compile_query(bound: BoundQuery, tables: TableSet, *, include_deleted: bool) -> CompiledQuery:
    """The SELECT for `bound`; `include_deleted` is queryAll's view of the recycle bin."""
    if bound.limit is not None and bound.limit > MAX_SQL_LIMIT:
        # `LIMIT 99999999999999999999` means "no limit"; passed on, it overflows the driver.
        bound = replace(bound, limit=MAX_SQL_LIMIT)
    if bound.group_kind:
        return _compile_subtotals(bound, tables, include_deleted)
    joins = _Joins(tables, bound.sobject.name)
    filters = _filters(joins, bound, include_deleted)

    if bound.count_only:
        inner = select(joins.root.c.Id).where(*filters)
        inner = inner.limit(bound.limit).offset(bound.offset)
        statement = select(func.count()).select_from(
            inner.select_from(joins.from_clause).subquery()
        )
        return CompiledQuery(statement, bound, {}, ())

    if bound.is_aggregate:
        columns = _aggregate_columns(joins, bound)
        statement = select(*columns).where(*filters)
        statement = statement.group_by(*(joins.expression(key) for key in bound.group_by))
        if bound.having is not None:
            statement = statement.having(_condition(joins, bound.having))
        statement = statement.order_by(*_order(joins, bound))
        statement = statement.limit(bound.limit).offset(bound.offset)
        statement = statement.select_from(joins.from_clause)
        return CompiledQuery(statement, bound, {}, tuple(range(len(columns))))

    layout = _RowLayout(joins, tables, include_deleted)
    slots = layout.place_all(bound)
    statement = select(*layout.columns).where(*filters)
    # The root Id last makes the order total, so batches of a cursor never shift.
    statement = statement.order_by(*_order(joins, bound), joins.root.c.Id)
    statement = statement.limit(bound.limit).offset(bound.offset)
    statement = statement.select_from(joins.from_clause)
    return CompiledQuery(statement, bound, layout.parent_id_index, slots)


def _aggregate_columns(joins: _Joins, bound: BoundQuery) -> list[ColumnElement[Any]]:
    columns = []
    for item in bound.select:
        if isinstance(item, BoundAggregate):
            columns.append(joins.aggregate(item))
        elif isinstance(item, BoundColumn):
            columns.append(joins.expression(item.path))
        else:
            assert isinstance(item, BoundDateFunction)
            columns.append(joins.expression(item))
    return columns


class _RowLayout:
    """The columns of a record query's rows, and where each selected item lands in them."""

    def __init__(self, joins: _Joins, tables: TableSet, include_deleted: bool) -> None:
        self.joins = joins
        self.tables = tables
        self.include_deleted = include_deleted
        self.columns: list[ColumnElement[Any]] = [joins.root.c.Id]
        self.parent_id_index: dict[tuple[str, ...], int] = {}

    def add(self, column: ColumnElement[Any]) -> int:
        self.columns.append(column)
        return len(self.columns) - 1

    def place_all(self, bound: BoundQuery) -> tuple[Slot, ...]:
        return tuple(self.place(item) for item in bound.select)

    def place(self, item: SelectExpr) -> Slot:
        if isinstance(item, BoundColumn):
            hops = item.path.hops
            for depth in range(1, len(hops) + 1):
                key = tuple(hop.name.lower() for hop in hops[:depth])
                if key not in self.parent_id_index:
                    self.parent_id_index[key] = self.add(self.joins.parent_id(hops[:depth]))
            return self.add(self.joins.column(item.path))
        if isinstance(item, BoundDistance):
            return self.add(self.joins.expression(item))
        if isinstance(item, BoundTypeOf):
            branches = []
            for branch in item.branches:
                table = self.joins.typeof_table(item.lookup.name, branch.target.name)
                id_index = self.add(table.c.Id)
                indexes = tuple(self.add(table.c[f.name]) for f in branch.fields)
                branches.append((branch, id_index, indexes))
            return TypeOfColumns(item, tuple(branches))
        assert isinstance(item, BoundSubquery)
        return _compile_child(item, self.tables, self.include_deleted)


def _compile_child(subquery: BoundSubquery, tables: TableSet, include_deleted: bool) -> ChildQuery:
    """The statement of a child subquery for one batch of parents: their children that match,
    in the subquery's order, with its LIMIT and OFFSET applied per parent."""
    bound = subquery.query
    joins = _Joins(tables, bound.sobject.name)
    link = joins.root.c[subquery.link.name]
    filters = _filters(joins, bound, include_deleted)
    filters.append(link.in_(bindparam(PARENT_IDS_PARAM, expanding=True)))
    layout = _RowLayout(joins, tables, include_deleted)
    slots = layout.place_all(bound)
    link_index = layout.add(link)
    order = [*_order(joins, bound), joins.root.c.Id]
    if bound.limit is None and bound.offset is None:
        statement = select(*layout.columns).where(*filters).order_by(*order)
        statement = statement.select_from(joins.from_clause)
    else:
        # LIMIT counts per parent: number each parent's children in order, keep a window.
        rank = func.row_number().over(partition_by=link, order_by=order).label("lf_rank")
        ranked = select(*layout.columns, rank).where(*filters).select_from(joins.from_clause)
        numbered = ranked.subquery()
        position = numbered.c.lf_rank
        start = bound.offset or 0
        window = [position > start]
        if bound.limit is not None:
            window.append(position <= start + min(bound.limit, MAX_SQL_LIMIT - start))
        statement = select(*list(numbered.c)[:-1]).where(*window).order_by(position)
    compiled = CompiledQuery(statement, bound, layout.parent_id_index, slots)
    return ChildQuery(subquery=subquery, compiled=compiled, link_index=link_index)


class _UnionColumns:
    """The output columns of a ROLLUP/CUBE union, for the HAVING and ORDER BY over it."""

    def __init__(self, union: FromClause, bound: BoundQuery) -> None:
        self.columns = list(union.c)
        self.bound = bound
        self.keys = [_group_key(key) for key in bound.group_by]

    def aggregate(self, aggregate: BoundAggregate) -> ColumnElement[Any]:
        return self.columns[self.bound.select.index(aggregate)]

    def expression(
        self, target: BoundPath | BoundDateFunction | BoundDistance
    ) -> ColumnElement[Any]:
        assert not isinstance(target, BoundDistance)  # the binder keeps it out of aggregates
        return self.columns[len(self.bound.select) + self.keys.index(_group_key(target))]

    def grouping_flag(self, index: int) -> ColumnElement[Any]:
        return self.columns[len(self.bound.select) + len(self.keys) + index]

    def grouping(self, grouping: BoundGrouping) -> ColumnElement[Any]:
        return self.grouping_flag(self.keys.index(_group_key(grouping.target)))


def _group_key(target: BoundPath | BoundDateFunction) -> tuple[Any, ...]:
    if isinstance(target, BoundDateFunction):
        return target.key
    return (target.owner.lower(), target.field.name)


def _grouping_sets(kind: str, count: int) -> list[tuple[int, ...]]:
    """ROLLUP(a, b): (a, b), (a), (). CUBE(a, b): every subset, the fullest first."""
    if kind == "ROLLUP":
        return [tuple(range(size)) for size in range(count, -1, -1)]
    subsets = [
        tuple(i for i in range(count) if mask & (1 << i)) for mask in range(2**count - 1, -1, -1)
    ]
    return sorted(subsets, key=len, reverse=True)


def _compile_subtotals(bound: BoundQuery, tables: TableSet, include_deleted: bool) -> CompiledQuery:
    """GROUP BY ROLLUP/CUBE as a UNION ALL of one grouped SELECT per grouping set, so SQLite
    (which has neither) and PostgreSQL give the same rows. Each SELECT gives the selected items,
    then every key (null where rolled up), then a GROUPING flag per key; HAVING, ORDER BY and
    LIMIT apply to the union. Without ORDER BY, each subtotal follows the groups it sums."""
    keys = [_group_key(key) for key in bound.group_by]
    parts = []
    for active in _grouping_sets(bound.group_kind, len(keys)):
        joins = _Joins(tables, bound.sobject.name)
        filters = _filters(joins, bound, include_deleted)
        columns: list[ColumnElement[Any]] = []
        for item in bound.select:
            if isinstance(item, BoundAggregate):
                columns.append(joins.aggregate(item))
            elif isinstance(item, BoundGrouping):
                rolled_up = keys.index(_group_key(item.target)) not in active
                columns.append(literal(int(rolled_up)))
            else:
                key = item.path if isinstance(item, BoundColumn) else item
                assert isinstance(key, BoundPath | BoundDateFunction)
                is_active = keys.index(_group_key(key)) in active
                columns.append(joins.expression(key) if is_active else null())
        for index, key in enumerate(bound.group_by):
            columns.append(joins.expression(key) if index in active else null())
        columns.extend(literal(int(index not in active)) for index in range(len(keys)))
        labelled = [column.label(f"c{position}") for position, column in enumerate(columns)]
        part = select(*labelled).where(*filters).select_from(joins.from_clause)
        parts.append(part.group_by(*(joins.expression(bound.group_by[i]) for i in active)))
    union = union_all(*parts).subquery()
    outputs = _UnionColumns(union, bound)
    statement = select(*outputs.columns[: len(bound.select)])
    if bound.having is not None:
        statement = statement.where(_condition(outputs, bound.having))
    order = _order(outputs, bound)
    for index in range(len(keys)):
        order.append(outputs.grouping_flag(index).asc())
        order.append(outputs.expression(bound.group_by[index]).asc().nulls_first())
    statement = statement.order_by(*order).limit(bound.limit).offset(bound.offset)
    return CompiledQuery(statement, bound, {}, tuple(range(len(bound.select))))
