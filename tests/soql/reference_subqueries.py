"""Random parent-to-child subqueries and semi-/anti-joins, for test_properties.

Parent-to-child: a record query on a parent object (random WHERE, ORDER BY ... Id, LIMIT) with one
or two `(SELECT ... FROM <relationship> WHERE ... ORDER BY ... LIMIT n)` over its child
relationships (SObjectDef.child_relationships). Salesforce's rules:
- each parent holds `{totalSize, done: true, records}` of its matching children, or null when
  none match; LIMIT applies per parent; without ORDER BY the children's order is unspecified;
- child records are shaped as top-level ones (attributes, SELECT order, parents nested).

Semi-joins and anti-joins: `Id IN (SELECT <reference> FROM <child> WHERE ...)`,
`<reference> [NOT] IN (SELECT Id FROM <parent> WHERE ...)` (or another object's reference to the
same parent), one or two, ANDed with a random condition at the top level, where Salesforce allows
them. The sub-select ignores deleted rows and nulls; NOT IN matches a null left side
(reference_model.SemiJoin).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from random import Random
from typing import Any

from hypothesis import strategies as st

from app.metadata.model import ChildRelationship, FieldType, SObjectDef
from tests.soql.reference_model import (
    COLUMNS,
    OBJECTS,
    REGISTRY,
    ROWS,
    Column,
    Condition,
    Junction,
    OrderKey,
    QuerySpec,
    Row,
    SemiJoin,
    conditions,
    expected_record,
    lookup_target,
    matches,
    orderable,
    queries,
    sort_rows,
)

# -- parent-to-child subqueries --------------------------------------------------------------------


@dataclass(frozen=True)
class ChildSpec:
    """`(SELECT ... FROM <relationship> ...)` in a parent's SELECT list."""

    relationship: ChildRelationship
    child: SObjectDef
    select: tuple[Column, ...]
    where: Condition | None
    order_by: tuple[OrderKey, ...]
    limit: int | None

    @property
    def name(self) -> str:
        assert self.relationship.relationship_name is not None
        return self.relationship.relationship_name

    @property
    def total_order(self) -> bool:
        return any(k.column.owner is None and k.column.field.name == "Id" for k in self.order_by)

    def soql(self) -> str:
        fields = ", ".join(column.soql("canonical") for column in self.select)
        parts = [f"SELECT {fields} FROM {self.name}"]
        if self.where is not None:
            parts.append(f"WHERE {self.where.soql()}")
        if self.order_by:
            parts.append("ORDER BY " + ", ".join(key.soql() for key in self.order_by))
        if self.limit is not None:
            parts.append(f"LIMIT {self.limit}")
        return " ".join(parts)

    def expected(self, parent: Row) -> Any:
        rows = [
            row
            for row in children_of(self.child.name, self.relationship.field).get(parent["Id"], [])
            if self.where is None or matches(self.where, row)
        ]
        rows = sort_rows(rows, self.order_by)[: self.limit]
        if not rows:
            return None  # no children: null, not an empty result
        records = [expected_record(self.child, self.select, row) for row in rows]
        return {"totalSize": len(records), "done": True, "records": records}

    def comparable(self, value: Any) -> Any:
        if value is None or self.total_order:
            return value
        # No total order: the children in any order (each holds its Id).
        return {**value, "records": sorted(value["records"], key=lambda r: r["Id"])}


@cache
def children_of(child: str, field: str) -> dict[str, list[Row]]:
    """The child rows by the parent Id in their link field."""
    found: dict[str, list[Row]] = {}
    for row in ROWS[child]:
        if row[field]:
            found.setdefault(row[field], []).append(row)
    return found


def relationships(parent: SObjectDef) -> list[tuple[ChildRelationship, SObjectDef]]:
    found = []
    for relationship in parent.child_relationships:
        child = REGISTRY.get(relationship.child_sobject)
        if relationship.relationship_name and child is not None and ROWS[child.name]:
            found.append((relationship, child))
    return found


PARENTS = [sobject for sobject in OBJECTS if relationships(sobject)]


def _id_column(sobject: SObjectDef) -> Column:
    return next(c for c in COLUMNS[sobject.name] if c.lookup is None and c.field.name == "Id")


@st.composite
def child_specs(
    draw: st.DrawFn, chance: Random, relationship: ChildRelationship, child: SObjectDef
) -> ChildSpec:
    id_column = _id_column(child)
    extra = [c for c in chance.sample(COLUMNS[child.name], chance.randint(0, 3)) if c != id_column]
    select = [*extra]
    select.insert(chance.randint(0, len(select)), id_column)  # Id orders unsorted children
    where = draw(conditions(child)) if chance.random() < 0.6 else None
    order_by: list[OrderKey] = []
    limit = None
    if chance.random() < 0.6:
        keys = chance.sample(orderable(child), chance.choice([0, 1, 1, 2]))
        order_by = [
            OrderKey(c, chance.random() < 0.5, chance.choice([None, "FIRST", "LAST"]), "canonical")
            for c in keys
        ]
        # The order is only checked when total, so Id ends the keys.
        order_by.append(OrderKey(id_column, chance.random() < 0.5, None, "canonical"))
        limit = chance.choice([None, 1, 2, 3, 5, 20])
    return ChildSpec(relationship, child, tuple(select), where, tuple(order_by), limit)


@st.composite
def parent_child_queries(draw: st.DrawFn) -> QuerySpec:
    """A record query on a parent object with one or two child subqueries. The parents are few
    (a LIMIT on a total order), so a query stays small whatever its children."""
    chance = draw(st.randoms(use_true_random=True))
    base = draw(queries(PARENTS))
    sobject = base.sobject
    options = relationships(sobject)
    picked = chance.sample(options, min(len(options), chance.choice([1, 1, 2])))
    select: list[Any] = list(base.select)
    for relationship, child in picked:
        select.insert(
            chance.randint(0, len(select)), draw(child_specs(chance, relationship, child))
        )
    order_by = list(base.order_by)
    if not base.total_order:
        order_by.append(OrderKey(_id_column(sobject), chance.random() < 0.5, None, "canonical"))
    return replace(
        base,
        select=tuple(select),
        order_by=tuple(order_by),
        limit=chance.randint(1, 40),
        offset=None,
        count_only=False,
    )


# -- semi-joins and anti-joins ---------------------------------------------------------------------


def _single_target(column: Column) -> SObjectDef | None:
    """The object a reference field leads to, when it leads to one only (a polymorphic one would
    compare Ids of several types)."""
    field = column.field
    if field.type is not FieldType.REFERENCE or len(field.reference_to) != 1:
        return None
    if field.name in ("CreatedById", "LastModifiedById"):
        return None  # one user in the data: such joins keep all or nothing
    return lookup_target(field)


def sub_selects(outer: SObjectDef, target: SObjectDef) -> list[tuple[SObjectDef, Column]]:
    """What may select Ids of `target` in a sub-select of `outer`: target's Id, or a reference
    field to it on another object (never `outer` itself: Salesforce refuses the same type)."""
    found = []
    for inner in OBJECTS:
        if inner.name == outer.name:
            continue
        for column in COLUMNS[inner.name]:
            if column.lookup is not None:
                continue
            if _leads_to(inner, column) == target.name:
                found.append((inner, column))
    return found


def _leads_to(sobject: SObjectDef, column: Column) -> str | None:
    """The object whose Ids an own Id or reference field holds."""
    if column.field.name == "Id":
        return sobject.name
    target = _single_target(column)
    return target.name if target else None


def semi_join_lefts(outer: SObjectDef) -> list[tuple[Column, list[tuple[SObjectDef, Column]]]]:
    """The outer object's Id and reference fields, with what each may be compared with."""
    lefts = []
    for column in COLUMNS[outer.name]:
        if column.lookup is not None:
            continue
        target = outer if column.field.name == "Id" else _single_target(column)
        if target is None:
            continue
        inners = sub_selects(outer, target)
        if inners:
            lefts.append((column, inners))
    return lefts


SEMI_JOINS = {sobject.name: semi_join_lefts(sobject) for sobject in OBJECTS}
SEMI_OUTERS = [sobject for sobject in OBJECTS if SEMI_JOINS[sobject.name]]


@st.composite
def semi_joins(draw: st.DrawFn, chance: Random, outer: SObjectDef) -> SemiJoin:
    options = SEMI_JOINS[outer.name]
    # Id IN (SELECT <reference> FROM <child> ...) half the time, when the object has children.
    on_id = [o for o in options if o[0].field.name == "Id"]
    left, inners = chance.choice(on_id if on_id and chance.random() < 0.5 else options)
    inner, column = chance.choice(inners)
    where = draw(conditions(inner)) if chance.random() < 0.85 else None
    return SemiJoin(left, chance.random() < 0.4, inner, column, where)


@st.composite
def semi_join_queries(draw: st.DrawFn) -> QuerySpec:
    """A record query whose WHERE is one or two semi-/anti-joins ANDed with its condition."""
    chance = draw(st.randoms(use_true_random=True))
    base = draw(queries(SEMI_OUTERS))
    joins: list[Condition] = [
        draw(semi_joins(chance, base.sobject)) for _ in range(chance.choice([1, 1, 2]))
    ]
    if base.where is not None:
        joins.insert(chance.randint(0, len(joins)), base.where)
    where = joins[0] if len(joins) == 1 else Junction("AND", tuple(joins))
    return replace(base, where=where)
