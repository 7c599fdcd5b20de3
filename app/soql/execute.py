"""The execute step, between the compiler and the shaping of records: a query's rows and, for
each parent-to-child subquery, the rows of its children, all read when the query runs.

So a query answers from one moment: a cursor keeps its later batches' children with their
parents (`window`), and a record written after the first batch appears in no later one, as a
child no more than as a parent. Shaping (`results.shape_rows`) then reads no database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select

from app.soql.compiler import PARENT_IDS_PARAM, ChildQuery, CompiledQuery

# Runs a statement with extra bound parameters and returns its rows.
Fetch = Callable[[Select[Any], dict[str, Any]], Sequence[Sequence[Any]]]

# Parent Ids bound into one child statement: well inside SQLite's bound on parameters (32,766)
# and PostgreSQL's (65,535), and Salesforce's largest batch.
PARENT_IDS_PER_FETCH = 2000


@dataclass(frozen=True)
class Children:
    """The rows of one child subquery for a set of parent rows: `slot` is the subquery's place
    in its parent's select list, `link_index` where a child row holds its parent's Id."""

    slot: int
    link_index: int
    rows: ResultRows


@dataclass(frozen=True)
class ResultRows:
    """A query's rows (the root Id first in each) and its child subqueries' rows."""

    rows: Sequence[Sequence[Any]]
    children: tuple[Children, ...] = ()

    def __len__(self) -> int:
        return len(self.rows)

    def as_tuples(self) -> ResultRows:
        """The same rows as plain tuples, children too: what a cursor stores (a driver's row
        objects pickle with their result's metadata)."""
        return ResultRows(
            [tuple(row) for row in self.rows],
            tuple(
                Children(child.slot, child.link_index, child.rows.as_tuples())
                for child in self.children
            ),
        )

    def window(self, start: int, stop: int) -> ResultRows:
        """The rows from `start` to `stop`, with their children only (down every level)."""
        return self._with_rows(self.rows[start:stop])

    def _with_rows(self, rows: Sequence[Sequence[Any]]) -> ResultRows:
        if not self.children:
            return ResultRows(rows)
        ids = {row[0] for row in rows}
        children = tuple(
            Children(
                child.slot,
                child.link_index,
                child.rows._with_rows(
                    [row for row in child.rows.rows if row[child.link_index] in ids]
                ),
            )
            for child in self.children
        )
        return ResultRows(rows, children)


def joined(parts: Sequence[ResultRows]) -> ResultRows:
    """Consecutive windows of one result as one (their children side by side)."""
    if len(parts) == 1:
        return parts[0]
    rows = [row for part in parts for row in part.rows]
    if not parts or not parts[0].children:
        return ResultRows(rows)
    children = tuple(
        Children(first.slot, first.link_index, joined([part.children[i].rows for part in parts]))
        for i, first in enumerate(parts[0].children)
    )
    return ResultRows(rows, children)


def execute(compiled: CompiledQuery, rows: Sequence[Sequence[Any]], fetch: Fetch) -> ResultRows:
    """`rows` (the statement's, already read: the driver's row objects, left as they are until
    a cursor stores them) with the rows of every child subquery below."""
    result = list(rows)
    if not result:
        return ResultRows(result)
    children = tuple(
        _children(slot, index, [row[0] for row in result], fetch)
        for index, slot in enumerate(compiled.value_index)
        if isinstance(slot, ChildQuery)
    )
    return ResultRows(result, children)


def _children(child: ChildQuery, slot: int, parent_ids: list[Any], fetch: Fetch) -> Children:
    rows: list[Sequence[Any]] = []
    for at in range(0, len(parent_ids), PARENT_IDS_PER_FETCH):
        chunk = parent_ids[at : at + PARENT_IDS_PER_FETCH]
        rows.extend(fetch(child.compiled.statement, {PARENT_IDS_PARAM: chunk}))
    return Children(slot, child.link_index, execute(child.compiled, rows, fetch))
