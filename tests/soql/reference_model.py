"""The reference model of the SOQL property tests: the seeded schema and records as the
generators see them, literals, conditions and record queries, and a plain-Python evaluator of
Salesforce's semantics over the generated records (see test_properties for the rules).

Split out of test_properties so that the aggregate and subquery references (reference_*.py)
can share it without importing a test module.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any, Protocol

from hypothesis import strategies as st

from app.config import REPO_ROOT
from app.metadata.model import ID_TYPES, NUMBER_TYPES, FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.metadata.values import to_json
from app.seeding.pipeline import build_rows
from tests.conftest import API, TEST_SEED
from tests.soql.reference_text import case_key

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
ROWS = build_rows(REGISTRY, "original", TEST_SEED)
BY_ID = {name: {row["Id"]: row for row in rows} for name, rows in ROWS.items()}
OBJECTS = [sobject for sobject in REGISTRY if ROWS[sobject.name]]
BATCH = 2000
Row = dict[str, Any]


# -- the schema, as the generator sees it ----------------------------------------------------------


def kind_of(field: FieldDef) -> str | None:
    """How a field is filtered: text, picklist, number, date, datetime, boolean, id; None when
    it cannot be (long text areas, multi-select picklists, id lists)."""
    if field.type in ID_TYPES:
        return "id"
    if field.type is FieldType.PICKLIST:
        return "picklist"
    if field.type is FieldType.TEXTAREA:
        return "text" if field.length <= 255 else None
    if field.type is FieldType.MULTIPICKLIST:
        return None
    if field.is_text:
        return "text"
    if field.type in NUMBER_TYPES:
        return "number"
    if field.type in (FieldType.DATE, FieldType.DATETIME, FieldType.BOOLEAN):
        return field.type.value
    return None


@dataclass(frozen=True)
class Column:
    """A field of the queried object, or of one parent through a lookup."""

    field: FieldDef
    home: str  # the object the field is on: the queried one, or the parent
    lookup: FieldDef | None = None
    target: SObjectDef | None = None

    @property
    def kind(self) -> str | None:
        return kind_of(self.field)

    @property
    def owner(self) -> str | None:
        """The relationship name the field is nested under in a record, None on the root."""
        return self.lookup.relationship_name if self.lookup else None

    def soql(self, style: str) -> str:
        name = self.field.name if self.owner is None else f"{self.owner}.{self.field.name}"
        return {"lower": name.lower(), "upper": name.upper()}.get(style, name)

    def parent(self, row: Row) -> Row | None:
        assert self.lookup is not None and self.target is not None
        parent_id = row[self.lookup.name]
        return BY_ID[self.target.name].get(parent_id) if parent_id else None

    def value(self, row: Row) -> Any:
        """The stored value (None when there is no parent); a checkbox of a record is never null."""
        if self.lookup is not None:
            parent = self.parent(row)
            if parent is None:
                return None
            row = parent
        value = row[self.field.name]
        if self.field.type is FieldType.BOOLEAN and value is None:
            return False
        return value

    def json(self, row: Row) -> Any:
        value = self.value(row)
        if self.lookup is not None and self.parent(row) is None:
            return None
        return to_json(self.field, value)


def lookup_target(lookup: FieldDef) -> SObjectDef | None:
    """The object a lookup leads to, when the org has exactly one of its targets. A polymorphic
    lookup (Case.Owner: a User or a queue) reads the Name entity, which the corpus covers."""
    targets = [target for name in lookup.reference_to if (target := REGISTRY.get(name))]
    return targets[0] if len(targets) == 1 else None


def columns_of(sobject: SObjectDef) -> list[Column]:
    usable = [f for f in sobject.fields if f.type is not FieldType.JUNCTIONIDLIST]
    columns = [Column(f, sobject.name) for f in usable]
    for lookup in sobject.fields:
        target = lookup_target(lookup) if lookup.relationship_name else None
        if target is None:
            continue
        usable = [f for f in target.fields if f.type is not FieldType.JUNCTIONIDLIST]
        columns += [Column(f, target.name, lookup, target) for f in usable]
    return columns


COLUMNS = {sobject.name: columns_of(sobject) for sobject in OBJECTS}


def _distinct(values: Iterable[Any], limit: int = 150) -> list[Any]:
    found = sorted({v for v in values if v is not None and v != ""}, key=repr)
    step = max(1, len(found) // limit)
    return found[::step]


DATA_VALUES: dict[tuple[str, str], list[Any]] = {}


def data_values(column: Column) -> list[Any]:
    """Some of the column's values in the generated data (for literals that match something)."""
    key = (column.home, column.field.name)
    if key not in DATA_VALUES:
        DATA_VALUES[key] = _distinct(row[column.field.name] for row in ROWS[column.home])
    return DATA_VALUES[key]


ALL_IDS = _distinct((row["Id"] for rows in ROWS.values() for row in rows), limit=400)

# -- literals --------------------------------------------------------------------------------------

_STRING_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def soql_string(value: str) -> str:
    return "'" + "".join(_STRING_ESCAPES.get(char, char) for char in value) + "'"


def soql_number(value: float | int, as_integer: bool) -> str:
    if isinstance(value, int) or (as_integer and float(value).is_integer()):
        return str(int(value))
    return format(Decimal(repr(float(value))), "f")


def soql_datetime(value: datetime, offset_minutes: int, millis: bool) -> str:
    local = value + timedelta(minutes=offset_minutes)
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + (".000" if millis else "")
    if offset_minutes == 0:
        return text + "Z"
    sign = "+" if offset_minutes > 0 else "-"
    hours, minutes = divmod(abs(offset_minutes), 60)
    return f"{text}{sign}{hours:02d}:{minutes:02d}"


@dataclass(frozen=True)
class Literal:
    """A value as the reference compares it (None for null and ''), and its SOQL text."""

    value: Any
    text: str


def _mutate_case(text: str, how: int) -> str:
    return [text, text.upper(), text.lower(), text.swapcase()][how]


@st.composite
def text_literal(draw: st.DrawFn, column: Column) -> Literal:
    values = data_values(column)
    choice = draw(st.integers(0, 5))
    if choice <= 2 and values:
        value = _mutate_case(str(draw(st.sampled_from(values))), draw(st.integers(0, 3)))
    elif choice == 3:
        value = ""
    else:
        value = draw(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=6))
    return Literal(value or None, soql_string(value))


@st.composite
def like_literal(draw: st.DrawFn, column: Column) -> Literal:
    values = data_values(column)
    if draw(st.booleans()) and values:
        base = _mutate_case(str(draw(st.sampled_from(values))), draw(st.integers(0, 3)))
        start = draw(st.integers(0, len(base)))
        end = draw(st.integers(start, len(base)))
        shape = draw(st.integers(0, 4))
        if shape == 0:
            pattern = base[:end] + "%"
        elif shape == 1:
            pattern = "%" + base[start:end] + "%"
        elif shape == 2:
            pattern = "%" + base[start:]
        elif shape == 3:
            pattern = "".join("_" if i in (start, end) else c for i, c in enumerate(base))
        else:
            pattern = base
    else:
        alphabet = st.sampled_from(list("abcdeAEIOU %_-.@ 0123"))
        pattern = draw(st.text(alphabet, min_size=1, max_size=5))
    # A backslash of the text is an escaped one in the pattern: two backslashes there.
    return Literal(pattern.replace("\\", "\\\\"), soql_string(pattern))


@st.composite
def number_literal(draw: st.DrawFn, column: Column) -> Literal:
    values = data_values(column)
    is_int = column.field.type is FieldType.INT
    choice = draw(st.integers(0, 3))
    if choice <= 1 and values:
        value: float | int = draw(st.sampled_from(values))
        if choice == 1:
            value += draw(st.sampled_from([-1, -0.01, 0.01, 1]))
    elif is_int:
        value = draw(st.integers(-5, 1000))
    else:
        value = draw(st.integers(-1000, 100000)) / 100
    text = soql_number(value, as_integer=draw(st.booleans()))
    return Literal(float(Decimal(text)), text)


@st.composite
def date_literal(draw: st.DrawFn, column: Column) -> Literal:
    values = data_values(column)
    if draw(st.booleans()) and values:
        value = draw(st.sampled_from(values)) + timedelta(days=draw(st.integers(-2, 2)))
    else:
        value = draw(st.dates(date(2015, 1, 1), date(2026, 12, 31)))
    return Literal(value, value.isoformat())


@st.composite
def datetime_literal(draw: st.DrawFn, column: Column) -> Literal:
    values = data_values(column)
    if draw(st.booleans()) and values:
        value = draw(st.sampled_from(values)) + timedelta(
            seconds=draw(st.sampled_from([-3600, -1, 0, 0, 1, 86400]))
        )
    else:
        value = draw(st.datetimes(datetime(2015, 1, 1), datetime(2026, 12, 31))).replace(
            microsecond=0
        )
    offset = draw(st.sampled_from([0, 0, 60, -480, 330, -150]))
    return Literal(value, soql_datetime(value, offset, millis=draw(st.booleans())))


@st.composite
def boolean_literal(draw: st.DrawFn, column: Column) -> Literal:
    value = draw(st.booleans())
    text = _mutate_case(str(value).lower(), draw(st.integers(0, 2)))
    return Literal(value, text)


@st.composite
def id_literal(draw: st.DrawFn, column: Column) -> Literal:
    values = data_values(column) or ALL_IDS
    value = draw(st.sampled_from(values if draw(st.integers(0, 3)) else ALL_IDS))
    text = draw(st.sampled_from([value, value[:15], value.lower()]))
    return Literal(value, soql_string(text))


LITERALS: dict[str, Callable[[Column], st.SearchStrategy[Literal]]] = {
    "text": text_literal,
    "picklist": text_literal,
    "number": number_literal,
    "date": date_literal,
    "datetime": datetime_literal,
    "boolean": boolean_literal,
    "id": id_literal,
}
NULL = Literal(None, "null")
OPERATORS = {
    "text": ["=", "!=", "<>", "<", "<=", ">", ">=", "LIKE", "IN", "NOT IN"],
    "picklist": ["=", "!=", "LIKE", "IN", "NOT IN"],
    "number": ["=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN"],
    "date": ["=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN"],
    "datetime": ["=", "!=", "<", "<=", ">", ">=", "IN", "NOT IN"],
    "boolean": ["=", "!="],
    "id": ["=", "!=", "IN", "NOT IN"],
}

# -- conditions, and the reference evaluator -------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    column: Column
    op: str
    literals: tuple[Literal, ...]
    style: str

    def soql(self) -> str:
        left = self.column.soql(self.style)
        if self.op in ("IN", "NOT IN"):
            return f"{left} {self.op} ({', '.join(lit.text for lit in self.literals)})"
        return f"{left} {self.op} {self.literals[0].text}"


@dataclass(frozen=True)
class Junction:
    joiner: str  # AND or OR
    operands: tuple[Condition, ...]

    def soql(self) -> str:
        return f" {self.joiner} ".join(_operand(operand) for operand in self.operands)


@dataclass(frozen=True)
class Negation:
    operand: Condition

    def soql(self) -> str:
        return f"NOT {_operand(self.operand)}"


@dataclass(frozen=True)
class SemiJoin:
    """`left [NOT] IN (SELECT column FROM sobject WHERE where)`: a semi-join or anti-join,
    written only as an operand of the top-level AND (Salesforce refuses it anywhere else)."""

    left: Column
    negated: bool
    sobject: SObjectDef
    column: Column
    where: Condition | None

    def soql(self) -> str:
        inner = f"SELECT {self.column.soql('canonical')} FROM {self.sobject.name}"
        if self.where is not None:
            inner += f" WHERE {self.where.soql()}"
        op = "NOT IN" if self.negated else "IN"
        return f"{self.left.soql('canonical')} {op} ({inner})"

    @cached_property
    def selected(self) -> frozenset[Any]:
        """The sub-select's values: its live rows that match, nulls left out (so that NOT IN
        excludes nothing for them). The seeded data has no deleted rows; IsDeleted is checked
        anyway, as Salesforce's query ignores the recycle bin."""
        return frozenset(
            value
            for row in ROWS[self.sobject.name]
            if not row.get("IsDeleted") and (self.where is None or matches(self.where, row))
            for value in [self.column.value(row)]
            if value is not None
        )

    def accepts(self, row: Row) -> bool:
        value = self.left.value(row)
        if self.negated:
            return value is None or value not in self.selected  # NOT IN matches a null left side
        return value is not None and value in self.selected


Condition = Leaf | Junction | Negation | SemiJoin


def _operand(condition: Condition) -> str:
    """A condition as one operand of AND/OR/NOT: anything but a plain leaf in parentheses (so
    NOT, which only starts a whole condition, is parenthesised there)."""
    if isinstance(condition, Leaf | SemiJoin):
        return condition.soql()
    return f"({condition.soql()})"


def fold(kind: str | None, value: Any) -> Any:
    """The value as compared: text by its case key, numbers as floats."""
    if value is None:
        return None
    if kind in ("text", "picklist"):
        return case_key(str(value))
    if kind == "number":
        return float(value)
    return value


def sort_value(field: FieldDef, folded: Any) -> Any:
    """A folded value as Salesforce sorts it: text by its case key (so `_` comes after
    letters), a picklist by the order of its values, then by text."""
    if not isinstance(folded, str) or not field.is_text:
        return folded  # ids sort as stored
    if field.type is not FieldType.PICKLIST:
        return folded
    order = [case_key(entry.value) for entry in field.picklist]
    return (order.index(folded) if folded in order else len(order), folded)


def like_regex(pattern: str) -> re.Pattern[str]:
    """SOQL LIKE: % any text, _ one character, \\%, \\_ and \\\\ literal, over case keys
    (the pattern's and the value's)."""
    out, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern) and pattern[index + 1] in "%_\\":
            out.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        out.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    return re.compile("".join(out), re.DOTALL)


def leaf_matches(leaf: Leaf, row: Row) -> bool:
    return leaf_matches_value(leaf, leaf.column.value(row))


def leaf_matches_value(leaf: Leaf, stored: Any) -> bool:
    """The leaf on the column's stored value (HAVING tests it on a group's value)."""
    kind = leaf.column.kind
    value = fold(kind, stored)
    op = "!=" if leaf.op == "<>" else leaf.op
    literal = leaf.literals[0].value
    if op in ("IN", "NOT IN"):
        wanted = [fold(kind, lit.value) for lit in leaf.literals]
        has_null = None in wanted
        inside = has_null if value is None else value in wanted
        if op == "IN":
            return inside
        return not inside if has_null else (value is None or not inside)
    if op == "LIKE":
        return (
            value is not None
            and literal is not None
            and bool(like_regex(case_key(literal)).fullmatch(case_key(str(stored))))
        )
    if literal is None:
        if kind == "boolean" and op in ("=", "!="):
            return (stored is True) == (op == "!=")  # a checkbox = null means false
        if op == "=":
            return value is None
        if op == "!=":
            return value is not None
        return False
    target = fold(kind, literal)
    if op == "=":
        return bool(value == target)
    if op == "!=":
        return bool(value != target)  # includes nulls
    if value is None:
        return False
    comparisons: dict[str, Callable[[Any, Any], bool]] = {
        "<": lambda a, b: bool(a < b),
        "<=": lambda a, b: bool(a <= b),
        ">": lambda a, b: bool(a > b),
        ">=": lambda a, b: bool(a >= b),
    }
    return comparisons[op](value, target)


def matches(condition: Condition, row: Row) -> bool:
    if isinstance(condition, Leaf):
        return leaf_matches(condition, row)
    if isinstance(condition, SemiJoin):
        return condition.accepts(row)
    if isinstance(condition, Negation):
        return not matches(condition.operand, row)
    results = (matches(operand, row) for operand in condition.operands)
    return all(results) if condition.joiner == "AND" else any(results)


# -- queries ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OrderKey:
    column: Column
    descending: bool
    nulls: str | None  # FIRST, LAST or unwritten
    style: str

    def soql(self) -> str:
        text = self.column.soql(self.style) + (" DESC" if self.descending else "")
        return text + (f" NULLS {self.nulls}" if self.nulls else "")


class Nested(Protocol):
    """A parent-to-child subquery in a SELECT list (see reference_subqueries)."""

    @property
    def name(self) -> str:
        """The relationship name: the record's key."""
        ...

    def soql(self) -> str: ...

    def expected(self, parent: Row) -> Any:
        """The JSON value a parent record holds: a query result, or null."""
        ...

    def comparable(self, value: Any) -> Any:
        """The value with what Salesforce leaves unspecified (order of unsorted children)
        made canonical."""
        ...


SelectItem = Column | Nested


@dataclass(frozen=True, repr=False)
class QuerySpec:
    sobject: SObjectDef
    select: tuple[SelectItem, ...]
    where: Condition | None
    order_by: tuple[OrderKey, ...]
    limit: int | None
    offset: int | None
    count_only: bool
    style: str

    def __repr__(self) -> str:
        return self.soql()  # what Hypothesis shows of a failing example

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.soql())  # Hypothesis's printer would spell out the dataclass

    def soql(self) -> str:
        kw = str.lower if self.style == "lower" else str.upper
        if self.count_only:
            fields = "COUNT()"
        else:
            fields = ", ".join(
                item.soql(self.style) if isinstance(item, Column) else f"({item.soql()})"
                for item in self.select
            )
        parts = [f"{kw('SELECT')} {fields} {kw('FROM')} {self.sobject.name}"]
        if self.where is not None:
            parts.append(f"{kw('WHERE')} {self.where.soql()}")
        if self.order_by:
            parts.append(f"{kw('ORDER BY')} " + ", ".join(k.soql() for k in self.order_by))
        if self.limit is not None:
            parts.append(f"{kw('LIMIT')} {self.limit}")
        if self.offset is not None:
            parts.append(f"{kw('OFFSET')} {self.offset}")
        return " ".join(parts)

    @property
    def total_order(self) -> bool:
        return any(
            key.column.owner is None and key.column.field.name == "Id" for key in self.order_by
        )


def filterable(sobject: SObjectDef) -> list[Column]:
    """The columns a WHERE may compare, as describe says (a field's filterable)."""
    return [c for c in COLUMNS[sobject.name] if c.kind is not None and c.field.filterable]


def has_nulls(column: Column, sobject: SObjectDef) -> bool:
    """Whether some rows read null and others not: where null semantics show."""
    values = [column.value(row) for row in ROWS[sobject.name][:3000]]
    return None in values and any(value is not None for value in values)


# Columns that mix nulls and values, by object: most fields of the data are never null, and null
# handling is where SOQL differs most from SQL, so leaves and objects favour these.
NULLABLE = {
    sobject.name: [column for column in filterable(sobject) if has_nulls(column, sobject)]
    for sobject in OBJECTS
}
NULLABLE_OBJECTS = [sobject for sobject in OBJECTS if NULLABLE[sobject.name]]


def _by_kind(columns: list[Column]) -> dict[str, list[Column]]:
    grouped: dict[str, list[Column]] = {}
    for column in columns:
        grouped.setdefault(str(column.kind), []).append(column)
    return grouped


# Filterable columns by (object, own field or not) and kind.
COLUMN_KINDS = {
    (sobject.name, own): _by_kind(
        [c for c in filterable(sobject) if (c.lookup is None) == own] or filterable(sobject)
    )
    for sobject in OBJECTS
    for own in (True, False)
}


def orderable(sobject: SObjectDef) -> list[Column]:
    """The columns an ORDER BY may take: sortable in describe (a profile's permissions are
    not), picklists aside."""
    return [c for c in filterable(sobject) if c.kind != "picklist" and c.field.sortable]


STYLES = st.sampled_from(["canonical", "canonical", "lower", "upper"])


@st.composite
def leaves(draw: st.DrawFn, sobject: SObjectDef) -> Leaf:
    favoured = NULLABLE[sobject.name]
    chance = draw(st.randoms(use_true_random=True))
    if favoured and chance.random() < 0.2:
        column = chance.choice(favoured)
    else:
        # Own field or a parent's, then a kind of field, then one of those: every kind shows up.
        by_kind = COLUMN_KINDS[sobject.name, chance.random() < 0.6]
        column = chance.choice(by_kind[chance.choice(sorted(by_kind))])
    kind = column.kind
    assert kind is not None
    operators = OPERATORS[kind]
    if column in favoured and kind != "boolean":
        operators = [*operators, "!=", "NOT IN", "NOT IN"]  # where nulls count
    op = chance.choice(operators)
    literal = LITERALS[kind](column)
    # `= null` on a parent checkbox is left out: whether a missing parent counts is unspecified.
    null_allowed = not (kind == "boolean" and column.lookup is not None)
    kind_bonus = 3 if kind == "boolean" else -1  # `checkbox = null` is a case of its own
    if op in ("IN", "NOT IN"):
        values = tuple(draw(st.lists(literal, min_size=1, max_size=4)))
        if null_allowed and kind != "boolean" and draw(st.integers(0, 3)) == 2:
            values += (NULL,)
    elif op == "LIKE":
        values = (draw(like_literal(column)),)
    elif op in ("=", "!=", "<>") and null_allowed and draw(st.integers(0, 4)) in (2, kind_bonus):
        values = (NULL,)
    else:
        values = (draw(literal),)
    return Leaf(column, op, values, draw(STYLES))


def conditions(sobject: SObjectDef) -> st.SearchStrategy[Condition]:
    def extend(inner: st.SearchStrategy[Condition]) -> st.SearchStrategy[Condition]:
        junctions = st.builds(
            Junction,
            st.sampled_from(["AND", "OR"]),
            st.tuples(inner, inner) | st.tuples(inner, inner, inner),
        )
        return junctions | st.builds(Negation, inner)

    return st.recursive(leaves(sobject), extend, max_leaves=6)


@st.composite
def queries(draw: st.DrawFn, objects: Sequence[SObjectDef] = ()) -> QuerySpec:
    """A record query, on one of `objects` when given."""
    # Hypothesis favours the first of a sampled_from and boundary integers; a seeded Random
    # spreads the choices of objects, fields and clauses evenly.
    chance = draw(st.randoms(use_true_random=True))
    if objects:
        sobject = chance.choice(list(objects))
    else:
        sobject = chance.choice(NULLABLE_OBJECTS if chance.random() < 0.4 else OBJECTS)
    id_field = sobject.field("Id")
    assert id_field is not None
    id_column = Column(id_field, sobject.name)
    extra = chance.sample(COLUMNS[sobject.name], chance.randint(0, 4))
    select = [column for column in extra if column != id_column]
    select.insert(chance.randint(0, len(select)), id_column)
    where = None if chance.random() < 0.2 else draw(conditions(sobject))
    sortable = orderable(sobject)
    favoured = [column for column in NULLABLE[sobject.name] if column in sortable]
    key_columns = favoured if favoured and chance.random() < 0.5 else sortable
    keys = chance.sample(key_columns, min(len(key_columns), chance.choice([0, 1, 1, 2])))
    order_by = [
        OrderKey(
            column,
            draw(st.booleans()),
            draw(st.sampled_from([None, "FIRST", "LAST"])),
            draw(STYLES),
        )
        for column in keys
    ]
    limit = offset = None
    count_only = chance.random() < 0.15
    if count_only:
        order_by, limit = [], draw(st.none() | st.integers(0, 300))
    elif draw(st.booleans()):
        # A LIMIT or OFFSET is only checked against a total order, so Id ends the keys.
        order_by.append(OrderKey(id_column, draw(st.booleans()), None, "canonical"))
        limit = draw(st.integers(0, 300)) if draw(st.integers(0, 3)) != 2 else None
        offset = draw(st.integers(0, 60)) if draw(st.booleans()) else None
    return QuerySpec(
        sobject=sobject,
        select=tuple(select),
        where=where,
        order_by=tuple(order_by),
        limit=limit,
        offset=offset,
        count_only=count_only,
        style=draw(st.sampled_from(["upper", "lower"])),
    )


def sort_rows(rows: list[Row], keys: Sequence[OrderKey]) -> list[Row]:
    """Sort as Salesforce does: each key ascending or descending, nulls first unless NULLS LAST,
    text ignoring case; ties keep the incoming order (by Id)."""
    result = sorted(rows, key=lambda row: row["Id"])
    for key in reversed(keys):
        nulls_first = key.nulls != "LAST"
        # With reverse=True the larger flag comes first, so the flags swap with the direction.
        null_flag = 0 if nulls_first != key.descending else 2

        def sort_key(row: Row, key: OrderKey = key, null_flag: int = null_flag) -> Any:
            value = fold(key.column.kind, key.column.value(row))
            return (null_flag, 0) if value is None else (1, sort_value(key.column.field, value))

        result.sort(key=sort_key, reverse=key.descending)
    return result


def reference(spec: QuerySpec) -> list[Row]:
    """The rows the query returns, in order when the order is total."""
    rows = [
        row for row in ROWS[spec.sobject.name] if spec.where is None or matches(spec.where, row)
    ]
    if spec.order_by:
        rows = sort_rows(rows, spec.order_by)
    start = spec.offset or 0
    end = None if spec.limit is None else start + spec.limit
    return rows[start:end]


# -- comparing API records with reference rows -----------------------------------------------------


def expected_record(sobject: SObjectDef, select: Sequence[SelectItem], row: Row) -> dict[str, Any]:
    """The record a real org returns for a row: attributes, fields in SELECT order, parents
    nested, child subqueries as query results."""
    url = f"{API}/sobjects/{sobject.name}/{row['Id']}"
    record: dict[str, Any] = {"attributes": {"type": sobject.name, "url": url}}
    for column in select:
        if not isinstance(column, Column):
            record[column.name] = column.expected(row)
            continue
        if column.owner is None:
            record[column.field.name] = column.json(row)
            continue
        if column.owner not in record:
            parent = column.parent(row)
            assert column.target is not None
            record[column.owner] = (
                None
                if parent is None
                else {
                    "attributes": {
                        "type": column.target.name,
                        "url": f"{API}/sobjects/{column.target.name}/{parent['Id']}",
                    }
                }
            )
        if record[column.owner] is not None:
            record[column.owner][column.field.name] = column.json(row)
    return record


def check_records(spec: QuerySpec, body: dict[str, Any], expected: list[Row]) -> None:
    assert body["totalSize"] == len(expected)
    assert body["done"] is (len(expected) <= BATCH)
    records = body["records"]
    assert len(records) == min(len(expected), BATCH)
    by_id = {row["Id"]: row for row in expected}
    if spec.total_order:
        assert [r["Id"] for r in records] == [row["Id"] for row in expected[:BATCH]]
    elif len(expected) <= BATCH:
        assert Counter(r["Id"] for r in records) == Counter(row["Id"] for row in expected)
    else:
        assert {r["Id"] for r in records} <= set(by_id)
    for record in records:
        # The whole record: key order, parent nesting and attributes, and every value.
        wanted = expected_record(spec.sobject, spec.select, by_id[record["Id"]])
        assert list(record) == list(wanted)
        assert canonical(spec.select, record) == canonical(spec.select, wanted)
    if spec.order_by and not spec.total_order:
        # Ties may come in any order, but the keys must be sorted.
        rows = [by_id[r["Id"]] for r in records]
        assert sort_keys(sort_rows(rows, spec.order_by), spec.order_by) == sort_keys(
            rows, spec.order_by
        )


def canonical(select: Sequence[SelectItem], record: dict[str, Any]) -> dict[str, Any]:
    """The record with its child results in a canonical order where theirs is unspecified."""
    nested = [item for item in select if not isinstance(item, Column)]
    return {**record, **{item.name: item.comparable(record[item.name]) for item in nested}}


def sort_keys(rows: list[Row], keys: Sequence[OrderKey]) -> list[tuple[Any, ...]]:
    return [tuple(fold(k.column.kind, k.column.value(row)) for k in keys) for row in rows]
