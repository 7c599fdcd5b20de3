"""GROUP BY ROLLUP and CUBE as a UNION ALL of one grouped SELECT per grouping set, so SQLite
(which has neither) and PostgreSQL give the same rows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    literal,
    null,
    select,
    union_all,
)
from sqlalchemy.sql.expression import FromClause

from app.soql.bound import (
    BoundAggregate,
    BoundColumn,
    BoundDistance,
    BoundFunction,
    BoundGrouping,
    BoundPath,
    BoundQuery,
)
from app.soql.sql_conditions import condition_sql, record_filters
from app.soql.sql_joins import Joins, is_text_target, order_keys
from app.storage.tables import TableSet
from app.storage.text import text_key


class UnionColumns:
    """The output columns of a ROLLUP/CUBE union, for the HAVING and ORDER BY over it."""

    def __init__(self, union: FromClause, bound: BoundQuery) -> None:
        self.columns = list(union.c)
        self.bound = bound
        self.keys = [group_key(key) for key in bound.group_by]

    def aggregate(self, aggregate: BoundAggregate) -> ColumnElement[Any]:
        return self.columns[self.bound.select.index(aggregate)]

    def expression(self, target: BoundPath | BoundFunction | BoundDistance) -> ColumnElement[Any]:
        assert not isinstance(target, BoundDistance)  # the binder keeps it out of aggregates
        return self.columns[len(self.bound.select) + self.keys.index(group_key(target))]

    def grouping_flag(self, index: int) -> ColumnElement[Any]:
        return self.columns[len(self.bound.select) + len(self.keys) + index]

    def grouping(self, grouping: BoundGrouping) -> ColumnElement[Any]:
        return self.grouping_flag(self.keys.index(group_key(grouping.target)))


def group_key(target: BoundPath | BoundFunction) -> tuple[Any, ...]:
    if isinstance(target, BoundFunction):
        return target.key
    return (target.owner.lower(), target.field.name)


def grouping_sets(kind: str, count: int) -> list[tuple[int, ...]]:
    """ROLLUP(a, b): (a, b), (a), (). CUBE(a, b): every subset, the fullest first."""
    if kind == "ROLLUP":
        return [tuple(range(size)) for size in range(count, -1, -1)]
    subsets = [
        tuple(i for i in range(count) if mask & (1 << i)) for mask in range(2**count - 1, -1, -1)
    ]
    return sorted(subsets, key=len, reverse=True)


def subtotals_statement(bound: BoundQuery, tables: TableSet, include_deleted: bool) -> Select[Any]:
    """GROUP BY ROLLUP/CUBE as a UNION ALL of one grouped SELECT per grouping set, so SQLite
    (which has neither) and PostgreSQL give the same rows. Each SELECT gives the selected items,
    then every key (null where rolled up), then a GROUPING flag per key; HAVING, ORDER BY and
    LIMIT apply to the union. Without ORDER BY, each subtotal follows the groups it sums."""
    keys = [group_key(key) for key in bound.group_by]
    parts = [
        _grouping_set_select(bound, tables, include_deleted, keys, active)
        for active in grouping_sets(bound.group_kind, len(keys))
    ]
    union = union_all(*parts).subquery()
    outputs = UnionColumns(union, bound)
    statement = select(*outputs.columns[: len(bound.select)])
    if bound.having is not None:
        statement = statement.where(condition_sql(outputs, bound.having))
    order = order_keys(outputs, bound)
    for index in range(len(keys)):
        order.append(outputs.grouping_flag(index).asc())
        key = bound.group_by[index]
        value = outputs.expression(key)
        order.append((text_key(value) if is_text_target(key) else value).asc().nulls_first())
    statement = statement.order_by(*order).limit(bound.limit).offset(bound.offset)
    return statement


def _grouping_set_select(
    bound: BoundQuery,
    tables: TableSet,
    include_deleted: bool,
    keys: list[tuple[Any, ...]],
    active: tuple[int, ...],
) -> Select[Any]:
    """One part of the union: grouped by the `active` keys, the others null (rolled up)."""
    joins = Joins(tables, bound.sobject.name)
    filters = record_filters(joins, bound, include_deleted)
    columns: list[ColumnElement[Any]] = []
    for item in bound.select:
        if isinstance(item, BoundAggregate):
            columns.append(joins.aggregate(item))
        elif isinstance(item, BoundGrouping):
            rolled_up = keys.index(group_key(item.target)) not in active
            columns.append(literal(int(rolled_up)))
        else:
            key = item.path if isinstance(item, BoundColumn) else item
            assert isinstance(key, BoundPath | BoundFunction)
            is_active = keys.index(group_key(key)) in active
            columns.append(joins.group_value(key) if is_active else null())
    for index, key in enumerate(bound.group_by):
        columns.append(joins.group_value(key) if index in active else null())
    columns.extend(literal(int(index not in active)) for index in range(len(keys)))
    labelled = [column.label(f"c{position}") for position, column in enumerate(columns)]
    part = select(*labelled).where(*filters).select_from(joins.from_clause)
    return part.group_by(*(joins.group_key(bound.group_by[i]) for i in active))
