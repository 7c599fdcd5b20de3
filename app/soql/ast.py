"""The SOQL syntax tree: frozen nodes, exactly as written (names unresolved, literals untyped).

Every node keeps the position of its first token so that later stages (the binder) can report
errors where Salesforce reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum


@dataclass(frozen=True)
class Position:
    """1-based row and column in the query text, as Salesforce's `ERROR at Row:r:Column:c`."""

    line: int
    column: int


@dataclass(frozen=True)
class FieldPath:
    """A field, maybe through parent relationships, as written: `Account.Owner.Name`."""

    parts: tuple[str, ...]
    pos: Position

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True)
class FunctionCall:
    """`COUNT()`, `COUNT(Id)`, `SUM(Amount)`, `CALENDAR_YEAR(CreatedDate)`, `toLabel(Status)`.

    `name` is as written; `args` are field paths (nested calls for convertTimezone).
    """

    name: str
    args: tuple[FieldPath | FunctionCall, ...]
    pos: Position
    # Literal arguments: DISTANCE(Loc__c, GEOLOCATION(lat, lon), 'mi') has (lat, lon, 'mi').
    literals: tuple[Literal, ...] = ()


class LiteralKind(StrEnum):
    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    BOOLEAN = "boolean"
    NULL = "null"
    DATE = "date"
    DATETIME = "datetime"
    # TODAY, LAST_N_DAYS:5 ...: value is (upper-cased name, n or None)
    DATE_LITERAL = "date_literal"


@dataclass(frozen=True)
class Literal:
    """A value as written. `value` is str (escapes resolved), int, Decimal, bool, None, date,
    datetime (aware, as written), or (name, n) for a date literal. `text` is the source text."""

    kind: LiteralKind
    value: str | int | Decimal | bool | date | datetime | tuple[str, int | None] | None
    text: str
    pos: Position


@dataclass(frozen=True)
class SelectField:
    """One SELECT item: a field path or function call, with its alias if any."""

    expr: FieldPath | FunctionCall
    alias: str | None
    pos: Position


@dataclass(frozen=True)
class SelectSubquery:
    """A parent-to-child subquery in SELECT: `(SELECT Id FROM Contacts)`."""

    query: Query
    pos: Position


@dataclass(frozen=True)
class TypeOfBranch:
    """`WHEN Account THEN Phone, NumberOfEmployees` inside TYPEOF."""

    sobject: str
    fields: tuple[FieldPath, ...]
    pos: Position


@dataclass(frozen=True)
class SelectTypeOf:
    """`TYPEOF What WHEN Account THEN Phone ... ELSE Name END` on a polymorphic lookup."""

    relationship: FieldPath
    branches: tuple[TypeOfBranch, ...]
    else_fields: tuple[FieldPath, ...]
    pos: Position


SelectItem = SelectField | SelectSubquery | SelectTypeOf


class Operator(StrEnum):
    EQ = "="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    LIKE = "LIKE"


@dataclass(frozen=True)
class Comparison:
    """`left op literal`. `<>` is parsed as NE."""

    left: FieldPath | FunctionCall
    op: Operator
    right: Literal
    pos: Position


@dataclass(frozen=True)
class InCondition:
    """`left [NOT] IN (literals)` or `left [NOT] IN (SELECT ...)` (semi/anti-join)."""

    left: FieldPath | FunctionCall
    values: tuple[Literal, ...] | Query
    negated: bool
    pos: Position


@dataclass(frozen=True)
class IncludesCondition:
    """`left INCLUDES ('a;b', 'c')` or EXCLUDES, on multi-select picklists."""

    left: FieldPath
    values: tuple[Literal, ...]
    excludes: bool
    pos: Position


@dataclass(frozen=True)
class And:
    operands: tuple[Condition, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Condition, ...]


@dataclass(frozen=True)
class Not:
    operand: Condition
    pos: Position


Condition = Comparison | InCondition | IncludesCondition | And | Or | Not


@dataclass(frozen=True)
class OrderKey:
    expr: FieldPath | FunctionCall
    descending: bool
    # None: not written (Salesforce's default applies)
    nulls_first: bool | None
    pos: Position


@dataclass(frozen=True)
class DataCategoryFilter:
    """`Geography__c BELOW (usa__c, uk__c)` of WITH DATA CATEGORY (SOQL and SOSL)."""

    group: str
    operator: str  # AT, ABOVE, BELOW, ABOVE_OR_BELOW
    categories: tuple[str, ...]
    pos: Position | None = None


@dataclass(frozen=True)
class Query:
    select: tuple[SelectItem, ...]
    sobject: str
    sobject_pos: Position
    alias: str | None = None
    where: Condition | None = None
    group_by: tuple[FieldPath | FunctionCall, ...] = ()
    having: Condition | None = None
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None
    # USING SCOPE's value, as written.
    scope: str | None = None
    # WITH DATA CATEGORY's filters, joined by AND.
    data_categories: tuple[DataCategoryFilter, ...] = ()
