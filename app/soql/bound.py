"""The bound query: names resolved against the schema, literals typed against their fields.

The compiler and the result shaper read only this, never the raw syntax tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.metadata.model import FieldDef, SObjectDef
from app.soql.ast import Operator
from app.soql.data_categories import BoundCategories
from app.soql.function_spec import AggregateFunction, FunctionSpec, Transform


@dataclass(frozen=True)
class Hop:
    """One child-to-parent step: the lookup field followed and the object it leads to. Through a
    polymorphic lookup (Task.What) the step leads to any of `alternatives`, which then stand for
    the Name entity: the last step of a path."""

    lookup: FieldDef
    target: SObjectDef
    alternatives: tuple[SObjectDef, ...] = ()

    @property
    def name(self) -> str:
        return self.lookup.relationship_name or self.lookup.name

    def type_of(self, record_id: str) -> str:
        """The object a parent record of this step is: by its Id's key prefix if polymorphic."""
        for alternative in self.alternatives:
            if record_id.startswith(alternative.key_prefix):
                return alternative.name
        return self.target.name


@dataclass(frozen=True)
class BoundPath:
    """A resolved field path: the hops from the root object, then the field on the last one."""

    hops: tuple[Hop, ...]
    field: FieldDef

    @property
    def owner(self) -> str:
        """A key for the object the field lives on (the chain of relationship names)."""
        return ".".join(hop.name for hop in self.hops)


@dataclass(frozen=True)
class BoundAggregate:
    function: AggregateFunction
    path: BoundPath | None  # None only for COUNT() with no argument inside HAVING/ORDER BY
    name: str  # the output key: the alias, or exprN
    # FORMAT(MIN(CloseDate)): the aggregate written in the user's locale
    formatted: bool = False


@dataclass(frozen=True)
class BoundColumn:
    """A selected plain field, maybe through toLabel(), FORMAT() or convertCurrency()."""

    path: BoundPath
    transform: Transform | None = None
    # The key the value is written under when aliased: `toLabel(Status) statusLabel`.
    alias: str | None = None


@dataclass(frozen=True)
class TypeOfBranch:
    """The fields TYPEOF selects when the polymorphic lookup points at `target`."""

    target: SObjectDef
    fields: tuple[FieldDef, ...]


@dataclass(frozen=True)
class BoundTypeOf:
    """`TYPEOF What WHEN Account THEN ... ELSE ... END`: one branch per target type of the
    lookup that the org has (the ELSE fields for types with no WHEN)."""

    lookup: FieldDef
    branches: tuple[TypeOfBranch, ...]

    @property
    def name(self) -> str:
        return self.lookup.relationship_name or self.lookup.name


@dataclass(frozen=True)
class BoundGrouping:
    """`GROUPING(Field)`: 1 on the subtotal rows of ROLLUP or CUBE where Field is rolled up."""

    target: BoundPath | BoundFunction
    name: str


@dataclass(frozen=True)
class BoundFunction:
    """A row function of one field: a date function (CALENDAR_YEAR, DAY_ONLY, ...) or any
    SQL-backed function of the registry. Evaluated in UTC, or in `zone` when the field is
    wrapped in convertTimezone()."""

    spec: FunctionSpec
    path: BoundPath
    zone: str | None
    fiscal_start_month: int
    name: str = ""  # the output key in SELECT: the alias, or exprN

    @property
    def function(self) -> str:
        return self.spec.name

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        """What makes two uses the same expression (GROUP BY against SELECT, ORDER BY...)."""
        return (self.spec.name, self.path.owner, self.path.field.name, self.zone)


@dataclass(frozen=True)
class BoundSubquery:
    """A parent-to-child subquery, `(SELECT Subject FROM Cases WHERE ...)`: the child rows whose
    `link` lookup points at each parent row."""

    relationship: str  # the child relationship's name as describe gives it
    link: FieldDef
    query: BoundQuery
    # Whether the child is an activity view (ActivityHistory, OpenActivity), whose rows are
    # the tasks' and events' (app.storage.activity_views), not a table's.
    activity_view: bool = False


@dataclass(frozen=True)
class BoundDistance:
    """DISTANCE(Location__c, GEOLOCATION(lat, lon), 'mi'): how far the record's location is from
    a fixed point, in miles or kilometres; null when the record has no location."""

    latitude: BoundPath
    longitude: BoundPath
    point: tuple[float, float]
    unit: str  # "mi" or "km"
    name: str = ""  # the output key in SELECT: the alias, or exprN


SelectExpr = (
    BoundColumn
    | BoundAggregate
    | BoundFunction
    | BoundTypeOf
    | BoundGrouping
    | BoundSubquery
    | BoundDistance
)
Target = BoundPath | BoundAggregate | BoundFunction | BoundDistance | BoundGrouping


class ConditionKind(StrEnum):
    COMPARE = "compare"
    IN = "in"
    NOT_IN = "not_in"
    INCLUDES = "includes"
    EXCLUDES = "excludes"


@dataclass(frozen=True)
class DateSpan:
    """A resolved date literal: `start` included, `end` excluded (dates, or naive UTC datetimes
    for datetime fields)."""

    start: Any
    end: Any


@dataclass(frozen=True)
class BoundSemiJoin:
    """The sub-select of `Id IN (SELECT AccountId FROM Contact WHERE ...)`: one id or reference
    field of `sobject`, from its live rows that match `where`."""

    sobject: SObjectDef
    column: BoundPath
    where: BoundExpr | None


@dataclass(frozen=True)
class BoundCondition:
    """A leaf condition with its value typed for the field (ids canonical, datetimes UTC)."""

    kind: ConditionKind
    target: Target
    op: Operator | None
    value: Any  # one value for COMPARE; a tuple of values otherwise


@dataclass(frozen=True)
class BoundAnd:
    operands: tuple[BoundExpr, ...]


@dataclass(frozen=True)
class BoundOr:
    operands: tuple[BoundExpr, ...]


@dataclass(frozen=True)
class BoundNot:
    operand: BoundExpr


BoundExpr = BoundCondition | BoundAnd | BoundOr | BoundNot


@dataclass(frozen=True)
class BoundOrder:
    target: Target
    descending: bool
    nulls_first: bool


@dataclass(frozen=True)
class BoundQuery:
    sobject: SObjectDef
    select: tuple[SelectExpr, ...]
    count_only: bool
    where: BoundExpr | None
    group_by: tuple[BoundPath | BoundFunction, ...]
    having: BoundExpr | None
    order_by: tuple[BoundOrder, ...]
    limit: int | None
    offset: int | None
    # "ROLLUP" or "CUBE" when GROUP BY adds subtotal rows, else "".
    group_kind: str = ""
    # USING SCOPE mine: only records owned by the querying user.
    owned_by_user: bool = False
    # WITH DATA CATEGORY: only the articles classified in those categories.
    data_categories: BoundCategories | None = None

    @property
    def is_aggregate(self) -> bool:
        return bool(self.group_by) or any(isinstance(s, BoundAggregate) for s in self.select)
