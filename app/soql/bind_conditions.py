"""Binding WHERE and HAVING: comparisons, IN lists, INCLUDES/EXCLUDES, toLabel() filters, and
semi-joins and anti-joins (`Id [NOT] IN (SELECT AccountId FROM Contact ...)`) with Salesforce's
restrictions: at most 2, not nested, not under OR or NOT, one id field selected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.metadata.model import ID_TYPES, FieldDef, FieldType, SObjectDef
from app.soql import ast
from app.soql.bind_core import (
    MAX_SEMI_JOINS,
    AggregateMap,
    BinderCore,
    target_field,
)
from app.soql.bind_expression import bind_expression
from app.soql.bind_rules import has_aggregate
from app.soql.bound import (
    BoundAggregate,
    BoundAnd,
    BoundCondition,
    BoundExpr,
    BoundFunction,
    BoundNot,
    BoundOr,
    BoundPath,
    BoundSemiJoin,
    ConditionKind,
    Target,
)
from app.soql.errors import SoqlError, malformed
from app.soql.function_spec import AggregateFunction, Clause, Transform

_EQUALITY = frozenset({ast.Operator.EQ, ast.Operator.NE})


class ConditionBinder(BinderCore):
    # -- conditions -----------------------------------------------------------------------

    def condition(
        self,
        root: SObjectDef,
        alias: str | None,
        node: ast.Condition,
        aggregates: AggregateMap,
        scope: str = "",
        clause: Clause = Clause.WHERE,
    ) -> BoundExpr:
        """A WHERE (or HAVING) condition. `scope` is "OR" or "NOT" under those operators (where
        semi-joins are refused)."""
        if isinstance(node, ast.And):
            return BoundAnd(
                tuple(
                    self.condition(root, alias, o, aggregates, scope, clause) for o in node.operands
                )
            )
        if isinstance(node, ast.Or):
            return BoundOr(
                tuple(
                    self.condition(root, alias, o, aggregates, "OR", clause) for o in node.operands
                )
            )
        if isinstance(node, ast.Not):
            return BoundNot(
                self.condition(root, alias, node.operand, aggregates, scope or "NOT", clause)
            )
        if self._is_label_filter(node.left, clause):
            return self._label_condition(root, alias, node)
        target = bind_expression(self, root, alias, node.left, clause, aggregates)
        field = target_field(target)
        if field.type is FieldType.LOCATION:
            raise self.error(
                "INVALID_FIELD",
                f"A location field is filtered through DISTANCE(): {field.name}",
                node.pos,
            )
        if isinstance(node, ast.Comparison):
            return self._comparison(node, field, target)
        if isinstance(node, ast.InCondition):
            return self._membership(root, node, field, target, scope)
        return self._includes(node, field, target)

    def _is_label_filter(self, left: ast.FieldPath | ast.FunctionCall, clause: Clause) -> bool:
        """`toLabel(Status) = 'Closed'`: a filter on labels, not on stored values."""
        if isinstance(left, ast.FieldPath):
            return False
        spec = self.functions.get(left.name)
        return spec is not None and spec.transform is Transform.LABEL and spec.allowed_in(clause)

    def _comparison(self, node: ast.Comparison, field: FieldDef, target: Target) -> BoundExpr:
        if node.op is ast.Operator.LIKE:
            if field.type in ID_TYPES:
                raise self.error(
                    "INVALID_QUERY_FILTER_OPERATOR", "invalid operator on id field", node.pos
                )
            if not field.is_text:
                raise self.error(
                    "INVALID_FIELD",
                    f"Invalid operator on field '{field.name}'. LIKE can only be used on "
                    "string fields.",
                    node.pos,
                )
        if field.type is FieldType.BOOLEAN and node.op not in _EQUALITY:
            # A checkbox is only equal or not: `IsActive < true` has no meaning.
            raise self.error(
                "INVALID_QUERY_FILTER_OPERATOR", "invalid operator on boolean field", node.pos
            )
        value = self._typed(field, target, node.right)
        if node.op is ast.Operator.LIKE and _too_long_for_like(value):
            raise self.error(
                "MALFORMED_QUERY",
                f"LIKE pattern too long: at most {MAX_LIKE_PATTERN_BYTES} bytes",
                node.pos,
            )
        return BoundCondition(ConditionKind.COMPARE, target, node.op, value)

    def _membership(
        self,
        root: SObjectDef,
        node: ast.InCondition,
        field: FieldDef,
        target: Target,
        scope: str,
    ) -> BoundExpr:
        """`IN (...)` / `NOT IN (...)`: literals, or a semi-join sub-select."""
        kind = ConditionKind.NOT_IN if node.negated else ConditionKind.IN
        if not isinstance(node.values, ast.Query):
            values = tuple(self._typed(field, target, literal) for literal in node.values)
            return BoundCondition(kind, target, None, values)
        if not isinstance(target, BoundPath) or field.type not in ID_TYPES:
            raise self.error(
                "INVALID_FIELD",
                "Semi join sub-selects can only be used with an Id or reference field on the left",
                node.pos,
            )
        semi_join = self.semi_join(root, node.values, scope, node.pos)
        return BoundCondition(kind, target, None, semi_join)

    def _includes(self, node: ast.IncludesCondition, field: FieldDef, target: Target) -> BoundExpr:
        """`INCLUDES (...)` / `EXCLUDES (...)`, on multi-select picklists only."""
        if field.type is not FieldType.MULTIPICKLIST:
            raise self.error(
                "INVALID_FIELD",
                f"Invalid operator on field '{field.name}'. INCLUDES and EXCLUDES can only be "
                "used on multi-select picklist fields.",
                node.pos,
            )
        values = tuple(self._typed(field, target, literal) for literal in node.values)
        kind = ConditionKind.EXCLUDES if node.excludes else ConditionKind.INCLUDES
        return BoundCondition(kind, target, None, values)

    def _label_condition(
        self,
        root: SObjectDef,
        alias: str | None,
        node: ast.Comparison | ast.InCondition | ast.IncludesCondition,
    ) -> BoundCondition:
        """`toLabel(Status) = 'Closed'` compares labels: it becomes a test of the values whose
        label matches (a value the picklist does not list is its own label)."""
        call = node.left
        assert isinstance(call, ast.FunctionCall)
        if len(call.args) != 1 or not isinstance(call.args[0], ast.FieldPath):
            raise malformed("TOLABEL() takes exactly one field", query=self.text, pos=call.pos)
        path = self.path(root, alias, call.args[0])
        field = path.field
        if isinstance(node, ast.Comparison):
            literals: tuple[ast.Literal, ...] = (node.right,)
            negated = node.op is ast.Operator.NE
            if node.op not in (ast.Operator.EQ, ast.Operator.NE, ast.Operator.LIKE):
                raise self.error(
                    "INVALID_QUERY_FILTER_OPERATOR",
                    "toLabel() can only be compared with =, !=, IN, NOT IN or LIKE",
                    node.pos,
                )
            like = node.op is ast.Operator.LIKE
        elif isinstance(node, ast.InCondition) and not isinstance(node.values, ast.Query):
            literals, negated, like = node.values, node.negated, False
        else:
            raise malformed(
                "toLabel() cannot be used with INCLUDES, EXCLUDES or a sub-select",
                query=self.text,
                pos=node.pos,
            )
        values: list[Any] = []
        for literal in literals:
            if literal.kind is ast.LiteralKind.NULL:
                values.append(None)
                continue
            if literal.kind is not ast.LiteralKind.STRING or not field.is_text:
                raise self._mismatch(field, literal)
            values.extend(_values_labelled(field, str(literal.value), like))
        kind = ConditionKind.NOT_IN if negated else ConditionKind.IN
        return BoundCondition(kind, path, None, tuple(values))

    def semi_join(
        self, root: SObjectDef, query: ast.Query, scope: str, pos: ast.Position
    ) -> BoundSemiJoin:
        """The sub-select of a semi-join or anti-join, with Salesforce's restrictions."""

        def refuse(message: str, at: ast.Position | None = pos) -> SoqlError:
            return malformed(message, query=self.text, pos=at)

        self._count_semi_join(scope, refuse)
        sobject = self.sobject_named(query.sobject, query.sobject_pos)
        if sobject.name == root.name:
            raise self.error(
                "INVALID_TYPE",
                "The inner and outer selects should not be on the same object type",
                query.sobject_pos,
            )
        item = _semi_join_item(query, refuse)
        column = self.path(sobject, query.alias, item.expr)
        if column.field.type not in ID_TYPES:
            raise self.error(
                "INVALID_FIELD",
                f"Semi join sub-selects can only select an Id or reference field: "
                f"{column.field.name}",
                item.pos,
            )
        where = None
        if query.where is not None:
            self.in_semi_join = True
            try:
                where = self.condition(sobject, query.alias, query.where, AggregateMap())
            finally:
                self.in_semi_join = False
            if has_aggregate(where):
                raise refuse("Cannot use an aggregate function in the WHERE clause", None)
        return BoundSemiJoin(sobject=sobject, column=column, where=where)

    def _count_semi_join(self, scope: str, refuse: Callable[[str], SoqlError]) -> None:
        """A semi-join sits at the top level of WHERE (under AND only), two at most."""
        if self.in_semi_join:
            raise refuse("Nesting of semi join sub-selects is not supported")
        if scope == "OR":
            raise refuse("Semi join sub-selects are not allowed with the 'OR' operator")
        if scope:
            raise refuse(
                "Semi join sub-selects are only allowed at the top level WHERE expressions and "
                "not in nested WHERE expressions."
            )
        self.semi_joins += 1
        if self.semi_joins > MAX_SEMI_JOINS:
            raise refuse("Maximum 2 semi join sub-selects are allowed")

    def _typed(self, field: FieldDef, target: Target, literal: ast.Literal) -> Any:
        if isinstance(target, BoundAggregate) and target.function in {
            AggregateFunction.COUNT,
            AggregateFunction.COUNT_DISTINCT,
        }:
            if literal.kind is not ast.LiteralKind.INTEGER:
                raise self.error(
                    "INVALID_FIELD",
                    f"value of filter criterion for field '{target.name}' must be of type "
                    "integer and should not be enclosed in quotes",
                    literal.pos,
                )
            return literal.value
        if isinstance(target, BoundFunction) and literal.kind is ast.LiteralKind.DATE_LITERAL:
            raise self.error(
                "INVALID_FIELD",
                f"Date literal {literal.text} cannot be compared with the date function "
                f"{target.function}",
                literal.pos,
            )
        return self.value(field, literal)


def _like_regex(pattern: str) -> re.Pattern[str]:
    r"""A SOQL LIKE pattern as a regular expression: `%` any run, `_` one character, `\%` and
    `\_` literal; case-insensitive like the database's."""
    parts = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern) and pattern[index + 1] in "%_":
            parts.append(re.escape(pattern[index + 1]))
            index += 2
            continue
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
        index += 1
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def _semi_join_item(query: ast.Query, refuse: Callable[[str], SoqlError]) -> SemiJoinItem:
    """The one field a semi-join selects; it has no GROUP BY, HAVING, ORDER BY, LIMIT or
    OFFSET."""
    item = query.select[0]
    if (
        len(query.select) != 1
        or not isinstance(item, ast.SelectField)
        or not isinstance(item.expr, ast.FieldPath)
        or item.alias is not None
    ):
        raise refuse("Semi join sub-selects can only select one Id or reference field")
    if query.group_by or query.having or query.order_by:
        raise refuse("Semi join sub-selects can not have GROUP BY, HAVING or ORDER BY")
    if query.limit is not None or query.offset is not None:
        raise refuse("Semi join sub-selects can not have LIMIT or OFFSET")
    return SemiJoinItem(item.expr, item.pos)


@dataclass(frozen=True)
class SemiJoinItem:
    expr: ast.FieldPath
    pos: ast.Position


def _values_labelled(field: FieldDef, text: str, like: bool) -> list[str]:
    """The stored values whose label is `text` (or matches it as a LIKE pattern)."""
    if like:
        regex = _like_regex(text)
        return [entry.value for entry in field.picklist if regex.fullmatch(entry.label)]
    matches = [entry.value for entry in field.picklist if entry.label.lower() == text.lower()]
    if not any(entry.value.lower() == text.lower() for entry in field.picklist):
        matches.append(text)
    return matches


# SQLite's bound on a LIKE pattern (SQLITE_MAX_LIKE_PATTERN_LENGTH), applied on every back end
# so that a query means the same everywhere.
MAX_LIKE_PATTERN_BYTES = 50_000


def _too_long_for_like(value: object) -> bool:
    if not isinstance(value, str):
        return False
    # Escaping for SQL doubles a backslash at most: count each one twice.
    size = len(value.encode("utf-8", "surrogatepass")) + value.count("\\")
    return size > MAX_LIKE_PATTERN_BYTES
