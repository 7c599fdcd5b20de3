"""Binding WHERE and HAVING: comparisons, IN lists, INCLUDES/EXCLUDES, toLabel() filters, and
semi-joins and anti-joins (`Id [NOT] IN (SELECT AccountId FROM Contact ...)`) with Salesforce's
restrictions: at most 2, not nested, not under OR or NOT, one id field selected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

from app.metadata.model import COMPOUND_TYPES, ID_TYPES, FieldDef, FieldType, SObjectDef
from app.metadata.number_bounds import comparable
from app.soql import ast
from app.soql.bind_context import BindContext
from app.soql.bind_expression import bind_expression
from app.soql.bind_functions import AggregateMap, target_field
from app.soql.bind_literals import bind_value, matchable, mismatch
from app.soql.bind_paths import bind_path, refuse_unless
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
from app.soql.errors import SoqlError
from app.soql.function_spec import AggregateFunction, Clause, Transform
from app.soql.literals import like_pattern_text

_EQUALITY = frozenset({ast.Operator.EQ, ast.Operator.NE})


def bind_condition(
    ctx: BindContext,
    root: SObjectDef,
    alias: str | None,
    node: ast.Condition,
    aggregates: AggregateMap,
    clause: Clause = Clause.WHERE,
) -> BoundExpr:
    """A WHERE or HAVING condition on `root`. HAVING takes no sub-selects: it binds as if under
    NOT, which refuses them."""
    scope = "NOT" if clause is Clause.HAVING else ""
    return Conditions(ctx, root, alias, aggregates, clause).condition(node, scope)


@dataclass(frozen=True)
class Conditions:
    """The conditions of one clause of one query: on `root` (aliased `alias`), with the query's
    aggregates, in `clause`; inside a semi-join's sub-select when `in_semi_join`."""

    ctx: BindContext
    root: SObjectDef
    alias: str | None
    aggregates: AggregateMap
    clause: Clause
    in_semi_join: bool = False

    def condition(self, node: ast.Condition, scope: str) -> BoundExpr:
        """`scope` is "OR" or "NOT" under those operators (where semi-joins are refused)."""
        if isinstance(node, ast.And):
            return BoundAnd(tuple(self.condition(o, scope) for o in node.operands))
        if isinstance(node, ast.Or):
            return BoundOr(tuple(self.condition(o, "OR") for o in node.operands))
        if isinstance(node, ast.Not):
            return BoundNot(self.condition(node.operand, scope or "NOT"))
        if self._is_label_filter(node.left):
            return self._label_condition(node)
        target = bind_expression(
            self.ctx, self.root, self.alias, node.left, self.clause, self.aggregates
        )
        field = target_field(target)
        if isinstance(target, BoundPath):
            # A compound is filtered through DISTANCE() or its parts, never compared itself.
            filterable = field.filterable and field.type not in COMPOUND_TYPES
            refuse_unless(self.ctx, filterable, target, "filtered", node.left.pos)
        if isinstance(node, ast.Comparison):
            return self._comparison(node, field, target)
        if isinstance(node, ast.InCondition):
            return self._membership(node, field, target, scope)
        return self._includes(node, field, target)

    def _is_label_filter(self, left: ast.FieldPath | ast.FunctionCall) -> bool:
        """`toLabel(Status) = 'Closed'`: a filter on labels, not on stored values."""
        if isinstance(left, ast.FieldPath):
            return False
        spec = self.ctx.functions.get(left.name)
        return (
            spec is not None and spec.transform is Transform.LABEL and spec.allowed_in(self.clause)
        )

    def _comparison(self, node: ast.Comparison, field: FieldDef, target: Target) -> BoundExpr:
        ctx = self.ctx
        if node.op is ast.Operator.LIKE:
            if field.type in ID_TYPES:
                raise ctx.error(
                    "INVALID_QUERY_FILTER_OPERATOR", "invalid operator on id field", node.pos
                )
            if field.type is FieldType.MULTIPICKLIST:
                # A multi-select picklist is matched by INCLUDES and EXCLUDES, never by pattern.
                raise ctx.error(
                    "INVALID_QUERY_FILTER_OPERATOR",
                    "invalid operator on multipicklist field",
                    node.pos,
                )
            if not field.is_text:
                raise ctx.error(
                    "INVALID_FIELD",
                    f"Invalid operator on field '{field.name}'. LIKE can only be used on "
                    "string fields.",
                    node.pos,
                )
        if field.type is FieldType.BOOLEAN and node.op not in _EQUALITY:
            # A checkbox is only equal or not: `IsActive < true` has no meaning.
            raise ctx.error(
                "INVALID_QUERY_FILTER_OPERATOR", "invalid operator on boolean field", node.pos
            )
        value = self._typed(field, target, node.right)
        if node.op is ast.Operator.LIKE and isinstance(value, str):
            value = like_pattern_text(node.right.text[1:-1])
        if node.op is ast.Operator.LIKE and _too_long_for_like(value):
            raise ctx.error(
                "MALFORMED_QUERY",
                f"LIKE pattern too long: at most {MAX_LIKE_PATTERN_BYTES} bytes",
                node.pos,
            )
        return BoundCondition(ConditionKind.COMPARE, target, node.op, value)

    def _membership(
        self, node: ast.InCondition, field: FieldDef, target: Target, scope: str
    ) -> BoundExpr:
        """`IN (...)` / `NOT IN (...)`: literals, or a semi-join sub-select."""
        kind = ConditionKind.NOT_IN if node.negated else ConditionKind.IN
        if not isinstance(node.values, ast.Query):
            values = tuple(self._typed(field, target, literal) for literal in node.values)
            int_column = field.type is FieldType.INT or _is_count(target)
            return BoundCondition(kind, target, None, matchable(values, int_column=int_column))
        if not isinstance(target, BoundPath) or field.type not in ID_TYPES:
            raise self.ctx.error(
                "INVALID_FIELD",
                "Semi join sub-selects can only be used with an Id or reference field on the left",
                node.pos,
            )
        return BoundCondition(kind, target, None, self._semi_join(node, scope))

    def _includes(self, node: ast.IncludesCondition, field: FieldDef, target: Target) -> BoundExpr:
        """`INCLUDES (...)` / `EXCLUDES (...)`, on multi-select picklists only."""
        if field.type is not FieldType.MULTIPICKLIST:
            raise self.ctx.error(
                "INVALID_FIELD",
                f"Invalid operator on field '{field.name}'. INCLUDES and EXCLUDES can only be "
                "used on multi-select picklist fields.",
                node.pos,
            )
        values = tuple(self._typed(field, target, literal) for literal in node.values)
        kind = ConditionKind.EXCLUDES if node.excludes else ConditionKind.INCLUDES
        return BoundCondition(kind, target, None, values)

    def _label_condition(
        self, node: ast.Comparison | ast.InCondition | ast.IncludesCondition
    ) -> BoundCondition:
        """`toLabel(Status) = 'Closed'` compares labels: it becomes a test of the values whose
        label matches (a value the picklist does not list is its own label)."""
        ctx = self.ctx
        call = node.left
        assert isinstance(call, ast.FunctionCall)
        if len(call.args) != 1 or not isinstance(call.args[0], ast.FieldPath):
            raise ctx.malformed("TOLABEL() takes exactly one field", call.pos)
        path = bind_path(ctx, self.root, self.alias, call.args[0])
        refuse_unless(ctx, path.field.filterable, path, "filtered", call.args[0].pos)
        literals, negated, like = self._label_operands(node)
        field = path.field
        values: list[Any] = []
        for literal in literals:
            if literal.kind is ast.LiteralKind.NULL:
                values.append(None)
                continue
            if literal.kind is not ast.LiteralKind.STRING or not field.is_text:
                raise mismatch(ctx, field, literal)
            text = like_pattern_text(literal.text[1:-1]) if like else str(literal.value)
            values.extend(_values_labelled(field, text, like))
        kind = ConditionKind.NOT_IN if negated else ConditionKind.IN
        return BoundCondition(kind, path, None, tuple(values))

    def _label_operands(
        self, node: ast.Comparison | ast.InCondition | ast.IncludesCondition
    ) -> tuple[tuple[ast.Literal, ...], bool, bool]:
        """The labels a toLabel() filter compares with, whether it is negated, whether LIKE."""
        if isinstance(node, ast.Comparison):
            if node.op not in (ast.Operator.EQ, ast.Operator.NE, ast.Operator.LIKE):
                raise self.ctx.error(
                    "INVALID_QUERY_FILTER_OPERATOR",
                    "toLabel() can only be compared with =, !=, IN, NOT IN or LIKE",
                    node.pos,
                )
            return (node.right,), node.op is ast.Operator.NE, node.op is ast.Operator.LIKE
        if isinstance(node, ast.InCondition) and not isinstance(node.values, ast.Query):
            return node.values, node.negated, False
        raise self.ctx.malformed(
            "toLabel() cannot be used with INCLUDES, EXCLUDES or a sub-select", node.pos
        )

    def _semi_join(self, node: ast.InCondition, scope: str) -> BoundSemiJoin:
        """The sub-select of a semi-join or anti-join, with Salesforce's restrictions."""
        ctx, pos, query = self.ctx, node.pos, node.values
        assert isinstance(query, ast.Query)

        def refuse(message: str, at: ast.Position | None = pos) -> SoqlError:
            return ctx.malformed(message, at)

        self._check_semi_join_place(node, scope, refuse)
        sobject = ctx.sobject_named(query.sobject, query.sobject_pos)
        if sobject.name == self.root.name:
            raise ctx.error(
                "INVALID_TYPE",
                "The inner and outer selects should not be on the same object type",
                query.sobject_pos,
            )
        item = _semi_join_item(query, refuse)
        column = bind_path(ctx, sobject, query.alias, item.expr)
        if column.field.type not in ID_TYPES:
            raise ctx.error(
                "INVALID_FIELD",
                f"Semi join sub-selects can only select an Id or reference field: "
                f"{column.field.name}",
                item.pos,
            )
        where = None
        if query.where is not None:
            inner = replace(
                self, root=sobject, alias=query.alias, aggregates=AggregateMap(), in_semi_join=True
            )
            where = inner.condition(query.where, "")
            if has_aggregate(where):
                raise refuse("Cannot use an aggregate function in the WHERE clause", None)
        return BoundSemiJoin(sobject=sobject, column=column, where=where)

    def _check_semi_join_place(
        self, node: ast.InCondition, scope: str, refuse: Callable[[str], SoqlError]
    ) -> None:
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
        if self.ctx.semi_join_order[id(node)] >= self.ctx.limits.semi_joins:
            raise refuse("Maximum 2 semi join sub-selects are allowed")

    def _typed(self, field: FieldDef, target: Target, literal: ast.Literal) -> Any:
        if _is_count(target):
            if literal.kind is not ast.LiteralKind.INTEGER:
                raise self.ctx.error(
                    "INVALID_FIELD",
                    f"value of filter criterion for field '{target.name}' must be of type "
                    "integer and should not be enclosed in quotes",
                    literal.pos,
                )
            assert isinstance(literal.value, int)
            return comparable(literal.value)  # a count is a BIGINT
        if isinstance(target, BoundFunction) and literal.kind is ast.LiteralKind.DATE_LITERAL:
            raise self.ctx.error(
                "INVALID_FIELD",
                f"Date literal {literal.text} cannot be compared with the date function "
                f"{target.function}",
                literal.pos,
            )
        return bind_value(self.ctx, field, literal)


def _is_count(target: Target) -> TypeGuard[BoundAggregate]:
    counts = (AggregateFunction.COUNT, AggregateFunction.COUNT_DISTINCT)
    return isinstance(target, BoundAggregate) and target.function in counts


def _like_regex(pattern: str) -> re.Pattern[str]:
    r"""A SOQL LIKE pattern as a regular expression: `%` any run, `_` one character, `\%`, `\_`
    and `\\` literal; case-insensitive like the database's."""
    parts = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern) and pattern[index + 1] in "%_\\":
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
    # A pattern's backslashes are escaped already (literals.like_pattern_text).
    return len(value.encode("utf-8", "surrogatepass")) > MAX_LIKE_PATTERN_BYTES
