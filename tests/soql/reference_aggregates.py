"""Random aggregate queries and their reference results, for test_properties.

Generated: COUNT(Id), COUNT(f), COUNT_DISTINCT(f), SUM/AVG of numbers, MIN/MAX of numbers, dates,
datetimes and text, over own and parent fields; no GROUP BY, GROUP BY one or two fields (own or
parent, like Account.ShippingState), or GROUP BY ROLLUP(a[, b]) with GROUPING(); aliases; HAVING
on aggregates and grouped fields; ORDER BY aggregates and grouped fields, with LIMIT when the
order is total.

Salesforce's rules, as the reference applies them:
- aggregates ignore nulls, except COUNT(Id) (Id is never null); COUNT and COUNT_DISTINCT are
  integers, SUM and AVG doubles (null over no values), MIN and MAX the field's own JSON value;
- text groups, COUNT_DISTINCT, MIN and MAX ignore letter case, like text comparisons, so a
  value may come back spelt as any row of its group spells it;
- unaliased aggregates and GROUPING() are expr0, expr1, ... in SELECT order; grouped fields are
  keyed by their own name (the last segment of a parent path) and take no exprN;
- without GROUP BY there is exactly one row, also when no record matches; ROLLUP adds a subtotal
  row per prefix of its fields with the rolled-up keys null and GROUPING() 1, and a grand total
  (always there, as in SQL, even over no rows); HAVING and ORDER BY see those rows too;
- more than 2000 rows is EXCEEDED_ID_LIMIT; nulls sort first unless NULLS LAST.
Only groupable fields are grouped (Salesforce's describe: not numbers, dateTimes or text areas).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from itertools import pairwise
from random import Random
from typing import Any

from hypothesis import strategies as st

from app.metadata.model import FieldType, SObjectDef
from app.metadata.values import to_json
from tests.soql.reference_model import (
    BATCH,
    LITERALS,
    OBJECTS,
    ROWS,
    Column,
    Condition,
    Leaf,
    Literal,
    Row,
    conditions,
    data_values,
    filterable,
    fold,
    leaf_matches_value,
    matches,
    soql_number,
    sort_value,
)

COUNTS = ("COUNT", "COUNT_DISTINCT")
SUMS = ("SUM", "AVG")

# -- aggregates --------------------------------------------------------------------------------


def integral(column: Column) -> bool:
    """Whether the column's data holds whole numbers only: sums and averages of those are exact
    in every back end, so they can be ordered and compared at their boundaries."""
    return all(float(v).is_integer() for v in data_values(column))


@dataclass(frozen=True)
class Aggregate:
    function: str
    column: Column

    def soql(self) -> str:
        return f"{self.function}({self.column.soql('canonical')})"

    @property
    def exact(self) -> bool:
        """Whether the database computes the very value of the reference (no float rounding)."""
        return self.function not in SUMS or integral(self.column)

    def present(self, rows: Sequence[Row]) -> list[Any]:
        return [v for v in (self.column.value(row) for row in rows) if v is not None]

    def compute(self, rows: Sequence[Row]) -> Any:
        """The value as the reference compares and sorts it: an int for counts, an exact
        Fraction for SUM/AVG, the folded extreme for MIN/MAX; None over no values."""
        values = self.present(rows)
        kind = self.column.kind
        if self.function == "COUNT":
            return len(values)
        if self.function == "COUNT_DISTINCT":
            return len({fold(kind, v) for v in values})
        if not values:
            return None
        if self.function in SUMS:
            total = sum(Fraction(Decimal(repr(float(v)))) for v in values)
            return total if self.function == "SUM" else total / len(values)
        folded = [fold(kind, v) for v in values]
        return min(folded) if self.function == "MIN" else max(folded)

    def check(self, actual: Any, group: Group) -> bool:
        """Whether `actual` (from the JSON) is the aggregate over the group's rows."""
        value = group.aggregate(self)
        if self.function in COUNTS:
            return type(actual) is int and actual == value
        if value is None:
            return actual is None
        if self.function in SUMS:
            return type(actual) is float and math.isclose(
                actual, float(value), rel_tol=1e-9, abs_tol=1e-6
            )
        kind = self.column.kind
        # MIN/MAX of text: any spelling of the extreme among the rows.
        spellings = [v for v in self.present(group.members) if fold(kind, v) == value]
        return any(actual == to_json(self.column.field, v) for v in spellings)


# -- the SELECT list -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Grouped:
    """A grouped field in SELECT: keyed by its own name, even through a parent."""

    column: Column

    def soql(self) -> str:
        return self.column.soql("canonical")


@dataclass(frozen=True)
class Measure:
    aggregate: Aggregate
    alias: str | None

    def soql(self) -> str:
        return self.aggregate.soql() + (f" {self.alias}" if self.alias else "")


@dataclass(frozen=True)
class Grouping:
    """GROUPING(f) of a ROLLUP field: 1 on the rows where f is rolled up."""

    column: Column
    alias: str | None

    def soql(self) -> str:
        return f"GROUPING({self.column.soql('canonical')})" + (
            f" {self.alias}" if self.alias else ""
        )


Item = Grouped | Measure | Grouping

# -- result rows ---------------------------------------------------------------------------------


@dataclass
class Group:
    """One result row: its records, and per group field the stored value (None rolled up)."""

    members: list[Row]
    keys: tuple[Any, ...]
    rolled: tuple[bool, ...]
    computed: dict[Aggregate, Any] = field(default_factory=dict)

    def aggregate(self, aggregate: Aggregate) -> Any:
        if aggregate not in self.computed:
            self.computed[aggregate] = aggregate.compute(self.members)
        return self.computed[aggregate]


def group_rows(rows: list[Row], group: Sequence[Column], rollup: bool) -> list[Group]:
    """GROUP BY (or ROLLUP) over the rows; without GROUP BY, one row over all of them."""
    sizes = range(len(group), -1, -1) if rollup else [len(group)]
    result: list[Group] = []
    for size in sizes:
        buckets: dict[tuple[Any, ...], Group] = {}
        for row in rows:
            values = tuple(column.value(row) for column in group[:size])
            folded = tuple(fold(c.kind, v) for c, v in zip(group, values, strict=False))
            if folded not in buckets:
                rolled = tuple(i >= size for i in range(len(group)))
                padded = values + (None,) * (len(group) - size)
                buckets[folded] = Group([], padded, rolled)
            buckets[folded].members.append(row)
        if size == 0 and not buckets:
            buckets[()] = Group([], (None,) * len(group), (True,) * len(group))
        result.extend(buckets.values())
    return result


# -- HAVING and ORDER BY -------------------------------------------------------------------------

Target = Aggregate | Column


@dataclass(frozen=True)
class HavingLeaf:
    """A comparison of an aggregate with a literal."""

    target: Aggregate
    op: str
    literal: Literal

    def soql(self) -> str:
        return f"{self.target.soql()} {self.op} {self.literal.text}"


@dataclass(frozen=True)
class Having:
    """One or two leaves: on aggregates, or (as in WHERE) on grouped fields."""

    joiner: str
    leaves: tuple[HavingLeaf | Leaf, ...]

    def soql(self) -> str:
        return f" {self.joiner} ".join(leaf.soql() for leaf in self.leaves)


@dataclass(frozen=True)
class OrderKey:
    target: Target
    descending: bool
    nulls: str | None

    def soql(self) -> str:
        target = self.target
        text = target.soql() if isinstance(target, Aggregate) else target.soql("canonical")
        text += " DESC" if self.descending else ""
        return text + (f" NULLS {self.nulls}" if self.nulls else "")


_COMPARE = {
    "=": lambda a, b: a == b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@dataclass(frozen=True, repr=False)
class AggregateSpec:
    sobject: SObjectDef
    where: Condition | None
    group: tuple[Column, ...]
    rollup: bool
    select: tuple[Item, ...]
    having: Having | None
    order_by: tuple[OrderKey, ...]
    limit: int | None
    total_order: bool

    def soql(self) -> str:
        parts = [f"SELECT {', '.join(i.soql() for i in self.select)} FROM {self.sobject.name}"]
        if self.where is not None:
            parts.append(f"WHERE {self.where.soql()}")
        if self.group:
            fields = ", ".join(column.soql("canonical") for column in self.group)
            parts.append(f"GROUP BY ROLLUP({fields})" if self.rollup else f"GROUP BY {fields}")
        if self.having is not None:
            parts.append(f"HAVING {self.having.soql()}")
        if self.order_by:
            parts.append("ORDER BY " + ", ".join(key.soql() for key in self.order_by))
        if self.limit is not None:
            parts.append(f"LIMIT {self.limit}")
        return " ".join(parts)

    def __repr__(self) -> str:
        return self.soql()  # what Hypothesis shows of a failing example

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.soql())  # Hypothesis's printer would spell out the dataclass

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Each item's key in a result: the alias, exprN, or the grouped field's name."""
        names, index = [], 0
        for item in self.select:
            if isinstance(item, Grouped):
                names.append(item.column.field.name)
            elif item.alias:
                names.append(item.alias)
            else:
                names.append(f"expr{index}")
                index += 1
        return tuple(names)

    # -- the reference --

    def stored(self, group: Group, column: Column) -> Any:
        return group.keys[self.group.index(column)]

    def value(self, group: Group, target: Target) -> Any:
        if isinstance(target, Aggregate):
            return group.aggregate(target)
        return fold(target.kind, self.stored(group, target))

    def keeps(self, group: Group) -> bool:
        if self.having is None:
            return True
        results = [self.leaf_holds(leaf, group) for leaf in self.having.leaves]
        return all(results) if self.having.joiner == "AND" else any(results)

    def leaf_holds(self, leaf: HavingLeaf | Leaf, group: Group) -> bool:
        if isinstance(leaf, Leaf):
            # A rolled-up field reads null, as in SQL.
            return leaf_matches_value(leaf, self.stored(group, leaf.column))
        value = group.aggregate(leaf.target)
        if value is None:
            return False  # a null aggregate is compared with nothing
        return bool(_COMPARE[leaf.op](value, _comparable_literal(leaf)))

    def rows(self) -> list[Group]:
        records = [
            row for row in ROWS[self.sobject.name] if self.where is None or matches(self.where, row)
        ]
        groups = [g for g in group_rows(records, self.group, self.rollup) if self.keeps(g)]
        if self.order_by:
            groups = sort_groups(self, groups)
        return groups[: self.limit] if self.limit is not None else groups

    def matches_record(self, record: dict[str, Any], group: Group) -> bool:
        """Whether a JSON record is exactly the row of `group`: keys, order, types and values."""
        if record.get("attributes") != {"type": "AggregateResult"}:
            return False
        if list(record) != ["attributes", *self.names]:
            return False
        for item, name in zip(self.select, self.names, strict=True):
            actual = record[name]
            if isinstance(item, Measure):
                if not item.aggregate.check(actual, group):
                    return False
            elif isinstance(item, Grouping):
                if (
                    actual != int(group.rolled[self.group.index(item.column)])
                    or type(actual) is not int
                ):
                    return False
            elif not self.key_matches(item.column, group, actual):
                return False
        return True

    def key_matches(self, column: Column, group: Group, actual: Any) -> bool:
        if group.rolled[self.group.index(column)]:
            return actual is None
        value = fold(column.kind, self.stored(group, column))
        if value is None:
            return actual is None
        # A text group is spelt as any of its rows spells it.
        spellings = {
            column.json(row)
            for row in group.members
            if fold(column.kind, column.value(row)) == value
        }
        return actual in spellings


def _comparable_literal(leaf: HavingLeaf) -> Any:
    target = leaf.target
    if target.function in COUNTS:
        return int(leaf.literal.text)
    if target.function in SUMS:
        return Fraction(Decimal(leaf.literal.text))
    return fold(target.column.kind, leaf.literal.value)


def sort_groups(spec: AggregateSpec, groups: list[Group]) -> list[Group]:
    """ORDER BY as Salesforce sorts: nulls first unless NULLS LAST, in both directions."""
    result = list(groups)
    for key in reversed(spec.order_by):
        null_flag = 0 if (key.nulls != "LAST") != key.descending else 2

        def sort_key(group: Group, key: OrderKey = key, null_flag: int = null_flag) -> Any:
            value = spec.value(group, key.target)
            return (null_flag, 0) if value is None else (1, sortable(key.target, value))

        result.sort(key=sort_key, reverse=key.descending)
    return result


def sorted_by(spec: AggregateSpec, groups: list[Group]) -> bool:
    """Whether the groups are in ORDER BY's order (ties in any order). Inexact sums and averages
    compare with a tolerance: the database adds in its own order."""
    return all(_not_after(spec, a, b) for a, b in pairwise(groups))


def _not_after(spec: AggregateSpec, first: Group, second: Group) -> bool:
    for key in spec.order_by:
        a, b = spec.value(first, key.target), spec.value(second, key.target)
        if a is None or b is None:
            if (a is None) == (b is None):
                continue
            null_first = key.nulls != "LAST"
            return (a is None) == null_first
        if isinstance(a, Fraction) and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6):
            continue
        a, b = sortable(key.target, a), sortable(key.target, b)
        if a == b:
            continue
        return bool(a < b) != key.descending
    return True


def sortable(target: Target, value: Any) -> Any:
    """A value as ORDER BY sorts it: text by its case key (MIN and MAX are keys already); a
    grouped picklist by its values' order (MIN and MAX of a picklist sort as text)."""
    if isinstance(target, Aggregate):
        return value
    return sort_value(target.field, value)


def group_json(spec: AggregateSpec, group: Group) -> dict[str, Any]:
    """The grouped fields of a reference row as the JSON writes them (one spelling of each)."""
    values = {}
    for item, name in zip(spec.select, spec.names, strict=True):
        if isinstance(item, Grouped):
            rolled = group.rolled[spec.group.index(item.column)]
            values[name] = (
                None if rolled or not group.members else item.column.json(group.members[0])
            )
    return values


def identity(spec: AggregateSpec, record: dict[str, Any]) -> tuple[Any, ...]:
    """A row's grouped values, text lower-cased: equal for a record and its reference row."""
    return tuple(
        fold(item.column.kind, record[name])
        if item.column.kind in ("text", "picklist")
        else record[name]
        for item, name in zip(spec.select, spec.names, strict=True)
        if isinstance(item, Grouped)
    )


def check_aggregate(spec: AggregateSpec, status: int, body: Any) -> None:
    expected = spec.rows()
    if len(expected) > BATCH:
        assert status == 400, body
        assert body[0]["errorCode"] == "EXCEEDED_ID_LIMIT"
        return
    assert status == 200, body
    assert body["totalSize"] == len(expected) and body["done"] is True
    records = body["records"]
    assert len(records) == len(expected)
    if spec.total_order:
        for record, group in zip(records, expected, strict=True):
            assert spec.matches_record(record, group), (record, group.keys, group.rolled)
        return
    # Otherwise match each record with a row of the reference, as a multiset: first by the
    # grouped values, then by content (a rolled-up key and a null one look alike).
    buckets: dict[tuple[Any, ...], list[Group]] = {}
    for group in expected:
        buckets.setdefault(identity(spec, group_json(spec, group)), []).append(group)
    matched = []
    for record in records:
        candidates = buckets.get(identity(spec, record), [])
        found = next((g for g in candidates if spec.matches_record(record, g)), None)
        assert found is not None, (record, [(g.keys, g.rolled) for g in candidates[:5]])
        candidates.remove(found)
        matched.append(found)
    if spec.order_by:
        assert sorted_by(spec, matched)


# -- generation ----------------------------------------------------------------------------------

_ALIASES = [
    "total",
    "n",
    "cnt",
    "lo",
    "hi",
    "avgValue",
    "Amount",
    "sumOf",
    "howMany",
    "x1",
    "Result",
]
_AUDIT = {"CreatedById", "LastModifiedById"}
_GROUPABLE_KINDS = ("text", "picklist", "id", "boolean", "date")


def groupable(column: Column) -> bool:
    return (
        column.kind in _GROUPABLE_KINDS
        and column.field.groupable
        and column.field.type is not FieldType.TEXTAREA
        and column.field.name != "Id"
    )


def coarse(column: Column) -> bool:
    """Whether grouping by it makes few groups (so aggregates see several rows each)."""
    return len(data_values(column)) <= 60


def aggregatable(column: Column, function: str) -> bool:
    kind = column.kind
    if function in SUMS:
        return kind == "number"
    if function in ("MIN", "MAX"):
        return kind in ("number", "date", "datetime", "text")
    return kind in ("number", "date", "datetime", "text", "picklist", "id")


def _pick_group(chance: Random, sobject: SObjectDef) -> tuple[Column, ...]:
    candidates = [c for c in filterable(sobject) if groupable(c)]
    # Audit lookups (CreatedBy...) lead to one user in the data: favour the other parents.
    telling = [c for c in candidates if c.lookup is None or c.lookup.name not in _AUDIT]
    few = [c for c in telling if coarse(c)] or telling
    count = chance.choice([0, 1, 1, 1, 2, 2])
    picked: list[Column] = []
    for _ in range(count):
        pool = few if few and chance.random() < 0.8 else candidates
        column = chance.choice(pool)
        # Two grouped fields of one name would share a key: Salesforce wants an alias then.
        if all(c.field.name.lower() != column.field.name.lower() for c in picked):
            picked.append(column)
    return tuple(picked)


def _pick_aggregate(chance: Random, sobject: SObjectDef) -> Aggregate:
    columns = filterable(sobject)
    own = [c for c in columns if c.lookup is None]
    function = chance.choice(["COUNT", "COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX"])
    if function == "COUNT" and chance.random() < 0.4:
        return Aggregate("COUNT", next(c for c in own if c.field.name == "Id"))
    pool = own if chance.random() < 0.7 else columns
    usable = [c for c in pool if aggregatable(c, function)] or [
        c for c in columns if aggregatable(c, function)
    ]
    if not usable:
        return Aggregate("COUNT", next(c for c in own if c.field.name == "Id"))
    return Aggregate(function, chance.choice(usable))


@st.composite
def having_leaves(
    draw: st.DrawFn, chance: Random, spec: AggregateSpec, target: Target
) -> HavingLeaf | Leaf:
    """A HAVING leaf whose literal splits the groups: one of their values, or near one."""
    if isinstance(target, Column):
        op = chance.choice(["=", "!=", "IN", "NOT IN"])
        kind = target.kind
        assert kind is not None
        literals = draw(
            st.lists(LITERALS[kind](target), min_size=1, max_size=3 if "IN" in op else 1)
        )
        return Leaf(target, op, tuple(literals), "canonical")
    op = chance.choice(list(_COMPARE))
    groups = group_rows(ROWS[spec.sobject.name], spec.group, False)
    values = [v for v in (g.aggregate(target) for g in groups) if v is not None]
    # No group has a value (a date never set): any literal of the column's kind will do.
    value = chance.choice(values) if values else _ANY_VALUE.get(target.column.kind, 0)
    if target.function in COUNTS:
        return HavingLeaf(target, op, Literal(value, str(value + chance.choice([-1, 0, 0, 1]))))
    if target.function in SUMS:
        number = float(value)
        text = soql_number(number, as_integer=True)
        if not target.exact or Fraction(Decimal(text)) != value:
            # Away from the value: the database's float sum may differ in its last digits, and
            # an average like 4/3 has no exact literal.
            number = round(number + chance.choice([-0.005, 0.005]), 3)
            text = soql_number(number, as_integer=True)
        return HavingLeaf(target, op, Literal(float(Decimal(text)), text))
    kind = target.column.kind
    if kind == "number":
        text = soql_number(float(value), as_integer=True)
        return HavingLeaf(target, op, Literal(float(Decimal(text)), text))
    if kind == "date":
        return HavingLeaf(target, op, Literal(value, value.isoformat()))
    return HavingLeaf(target, op, Literal(value, value.strftime("%Y-%m-%dT%H:%M:%SZ")))


_ANY_VALUE: dict[str | None, Any] = {"date": date(2020, 1, 1), "datetime": datetime(2020, 1, 1)}


def _having_targets(spec: AggregateSpec, chance: Random) -> list[Target]:
    """Aggregates of numbers, dates and counts (text MIN/MAX is left out), and grouped fields."""
    aggregates = [i.aggregate for i in spec.select if isinstance(i, Measure)]
    aggregates.append(_pick_aggregate(chance, spec.sobject))
    usable: list[Target] = [
        a
        for a in aggregates
        if a.function in COUNTS + SUMS or a.column.kind in ("number", "date", "datetime")
    ]
    usable += [c for c in spec.group if c.kind in ("text", "picklist", "boolean", "date")]
    return usable


@st.composite
def aggregate_queries(draw: st.DrawFn) -> AggregateSpec:
    chance = draw(st.randoms(use_true_random=True))
    sobject = chance.choice(MEASURED if chance.random() < 0.5 else OBJECTS)
    group = _pick_group(chance, sobject)
    rollup = bool(group) and chance.random() < 0.35
    measures: list[Aggregate] = []
    for _ in range(chance.randint(1, 3)):
        aggregate = _pick_aggregate(chance, sobject)
        if aggregate not in measures:
            measures.append(aggregate)
    names = {c.field.name.lower() for c in group}
    aliases = [a for a in _ALIASES if a.lower() not in names]
    chance.shuffle(aliases)
    items: list[Item] = [
        Measure(a, aliases.pop() if chance.random() < 0.4 else None) for a in measures
    ]
    items += [Grouped(c) for c in group if chance.random() < 0.9]
    if rollup:
        items += [
            Grouping(c, aliases.pop() if chance.random() < 0.5 else None)
            for c in group
            if chance.random() < 0.6
        ]
    chance.shuffle(items)
    where = draw(conditions(sobject)) if chance.random() < 0.5 else None
    spec = AggregateSpec(sobject, where, group, rollup, tuple(items), None, (), None, False)
    # No HAVING when nothing can stand in one (only text MIN/MAX measured, nothing grouped).
    if chance.random() < 0.35 and (targets := _having_targets(spec, chance)):
        leaves = tuple(
            draw(having_leaves(chance, spec, chance.choice(targets)))
            for _ in range(chance.randint(1, 2))
        )
        spec = replace(spec, having=Having(chance.choice(["AND", "OR"]), leaves))
    if chance.random() < 0.45:
        spec = _order(spec, chance)
    return spec


def _order(spec: AggregateSpec, chance: Random) -> AggregateSpec:
    """ORDER BY an aggregate, then maybe the grouped fields: with all of them (and no ROLLUP, no
    picklist, no inexact aggregate) the order is total, and a LIMIT can be checked."""
    aggregate = chance.choice(
        [i.aggregate for i in spec.select if isinstance(i, Measure)]
        + [_pick_aggregate(chance, spec.sobject)]
    )
    keys = [OrderKey(aggregate, chance.random() < 0.5, chance.choice([None, "FIRST", "LAST"]))]
    orderable = [c for c in spec.group if c.kind != "picklist"]
    if orderable and chance.random() < 0.7:
        keys += [
            OrderKey(c, chance.random() < 0.5, chance.choice([None, "FIRST", "LAST"]))
            for c in orderable
        ]
    total = (
        not spec.rollup
        and len(orderable) == len(spec.group)
        and len(keys) == 1 + len(orderable)
        and aggregate.exact
    )
    limit = chance.randint(1, 30) if total and chance.random() < 0.7 else None
    return replace(spec, order_by=tuple(keys), limit=limit, total_order=total)


# Objects with a number field whose values vary.
MEASURED = [
    sobject
    for sobject in OBJECTS
    if any(
        c.kind == "number" and c.lookup is None and len(data_values(c)) > 1
        for c in filterable(sobject)
    )
]
