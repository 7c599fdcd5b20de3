"""Compiles a bound query to one SQLAlchemy Core SELECT with bound parameters only (and one per
child subquery, run per batch of parent rows).

The parts: sql_joins (FROM and expressions), sql_conditions (WHERE and HAVING with Salesforce's
semantics), subtotals (ROLLUP and CUBE). Text compares, groups and sorts by its key, letter case
ignored (app.storage.text).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    bindparam,
    func,
    select,
)

from app.metadata.number_bounds import INT64_MAX
from app.soql.bound import (
    BoundAggregate,
    BoundColumn,
    BoundDistance,
    BoundFunction,
    BoundQuery,
    BoundSubquery,
    BoundTypeOf,
    SelectExpr,
    TypeOfBranch,
)
from app.soql.sql_conditions import USER_PARAM, condition_sql, record_filters
from app.soql.sql_joins import Joins, order_keys
from app.soql.subtotals import subtotals_statement
from app.storage.activity_views import activity_view_rows
from app.storage.tables import TableSet

__all__ = ["PARENT_IDS_PARAM", "USER_PARAM", "ChildQuery", "CompiledQuery", "TypeOfColumns"]

# The bound parameter of a child subquery: the Ids of the batch of parent rows it is run for.
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


# The largest LIMIT the databases take (a BIGINT); no org holds more rows than that.
MAX_SQL_LIMIT = INT64_MAX


def compile_query(bound: BoundQuery, tables: TableSet, *, include_deleted: bool) -> CompiledQuery:
    """The SELECT for `bound`; `include_deleted` is queryAll's view of the recycle bin."""
    if bound.limit is not None and bound.limit > MAX_SQL_LIMIT:
        # `LIMIT 99999999999999999999` means "no limit"; passed on, it overflows the driver.
        bound = replace(bound, limit=MAX_SQL_LIMIT)
    if bound.group_kind:
        statement = subtotals_statement(bound, tables, include_deleted)
        return CompiledQuery(statement, bound, {}, tuple(range(len(bound.select))))
    joins = Joins(tables, bound.sobject.name)
    filters = record_filters(joins, bound, include_deleted)

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
        statement = statement.group_by(*(joins.group_key(key) for key in bound.group_by))
        if bound.having is not None:
            statement = statement.having(condition_sql(joins, bound.having, grouped=True))
        statement = statement.order_by(*order_keys(joins, bound))
        statement = statement.limit(bound.limit).offset(bound.offset)
        statement = statement.select_from(joins.from_clause)
        return CompiledQuery(statement, bound, {}, tuple(range(len(columns))))

    layout = _RowLayout(joins, tables, include_deleted, bound.sobject.key_field)
    slots = layout.place_all(bound)
    statement = select(*layout.columns).where(*filters)
    # The root Id last makes the order total, so batches of a cursor never shift.
    statement = statement.order_by(*order_keys(joins, bound), joins.root.c[bound.sobject.key_field])
    statement = statement.limit(bound.limit).offset(bound.offset)
    statement = statement.select_from(joins.from_clause)
    return CompiledQuery(statement, bound, layout.parent_id_index, slots)


def _aggregate_columns(joins: Joins, bound: BoundQuery) -> list[ColumnElement[Any]]:
    columns = []
    for item in bound.select:
        if isinstance(item, BoundAggregate):
            columns.append(joins.aggregate(item))
        elif isinstance(item, BoundColumn):
            columns.append(joins.group_value(item.path))
        else:
            assert isinstance(item, BoundFunction)
            columns.append(joins.expression(item))
    return columns


class _RowLayout:
    """The columns of a record query's rows, and where each selected item lands in them."""

    def __init__(
        self, joins: Joins, tables: TableSet, include_deleted: bool, key_field: str
    ) -> None:
        """`key_field`: the root's field each row starts with (its Id, or a Tooling entity's
        DurableId): what its URL names and its children's lookups hold."""
        self.joins = joins
        self.tables = tables
        self.include_deleted = include_deleted
        self.columns: list[ColumnElement[Any]] = [joins.root.c[key_field]]
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
        if isinstance(item, BoundDistance | BoundFunction):
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
    view = activity_view_rows(tables, bound.sobject) if subquery.activity_view else None
    joins = Joins(tables, bound.sobject.name, rows=view)
    link = joins.root.c[subquery.link.name]
    filters = record_filters(joins, bound, include_deleted)
    filters.append(link.in_(bindparam(PARENT_IDS_PARAM, expanding=True)))
    layout = _RowLayout(joins, tables, include_deleted, bound.sobject.key_field)
    slots = layout.place_all(bound)
    link_index = layout.add(link)
    order = [*order_keys(joins, bound), joins.root.c[bound.sobject.key_field]]
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
