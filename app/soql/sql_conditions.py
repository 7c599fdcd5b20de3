"""WHERE and HAVING as SQL, with Salesforce's semantics rather than SQL's: text compares by its
key, letter case ignored (app.storage.text); `!=` and NOT IN match nulls, an empty string is
null, `= null` on a checkbox means false, NOT of an unknown is true.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    bindparam,
    false,
    literal,
    not_,
    or_,
    select,
    true,
)

from app.metadata.model import FieldType
from app.soql.ast import Operator
from app.soql.bound import (
    BoundAnd,
    BoundCondition,
    BoundExpr,
    BoundNot,
    BoundOr,
    BoundPath,
    BoundQuery,
    BoundSemiJoin,
    ConditionKind,
    DateSpan,
)
from app.soql.data_categories import category_condition
from app.soql.sql_joins import Columns, Joins, target_column, text_field
from app.storage.tables import is_key_indexed
from app.storage.text import key_of, keys_among, text_is_null, text_key

# The bound parameter of the querying user (USING SCOPE mine).
USER_PARAM = "lf_user_id"


def like_pattern(value: str) -> str:
    """A SOQL LIKE pattern (literals.like_pattern_text) for SQL LIKE with ESCAPE '\\': `\\\\`,
    `\\%` and `\\_` stay escaped; any other backslash is a literal one."""
    out = []
    index = 0
    while index < len(value):
        char = value[index]
        if char == "\\" and index + 1 < len(value) and value[index + 1] in "%_\\":
            out.append(value[index : index + 2])
            index += 2
            continue
        out.append("\\\\" if char == "\\" else char)
        index += 1
    return "".join(out)


def _like_literal(value: str) -> str:
    """`value` as a LIKE pattern (ESCAPE '\\') that matches exactly that text."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _is_null_value(condition: BoundCondition, value: Any) -> bool:
    """Salesforce stores no empty text: `''` means null."""
    return value is None or (value == "" and isinstance(condition.target, BoundPath))


def _compare(condition: BoundCondition, column: ColumnElement[Any]) -> ColumnElement[Any]:
    value = condition.value
    op = condition.op
    is_checkbox = (
        isinstance(condition.target, BoundPath) and condition.target.field.type is FieldType.BOOLEAN
    )
    if isinstance(value, DateSpan):
        return _compare_span(op, value, column)
    if _is_null_value(condition, value):
        if is_checkbox and op in (Operator.EQ, Operator.NE):
            # Checkboxes are never null: `= null` matches false and `!= null` true.
            return column.is_(op is Operator.NE)
        if op is Operator.EQ:
            return column.is_(None)
        if op is Operator.NE:
            return column.is_not(None)
        return false()
    comparisons: dict[Operator, Any] = {
        Operator.EQ: lambda: column == value,
        Operator.NE: lambda: or_(column != value, column.is_(None)),
        Operator.LT: lambda: column < value,
        Operator.LE: lambda: column <= value,
        Operator.GT: lambda: column > value,
        Operator.GE: lambda: column >= value,
        Operator.LIKE: lambda: column.like(like_pattern(str(value)), escape="\\"),
    }
    if op in comparisons:
        result: ColumnElement[Any] = comparisons[op]()
        return result
    raise AssertionError(op)


def _compare_span(
    op: Operator | None, span: DateSpan, column: ColumnElement[Any]
) -> ColumnElement[Any]:
    """A date literal: `=` is membership of the half-open range, `<` and `>=` compare with its
    start, `<=` and `>` with its end; `!=` also matches nulls."""
    comparisons: dict[Operator | None, Any] = {
        Operator.EQ: lambda: _within(span, column),
        Operator.NE: lambda: or_(column < span.start, column >= span.end, column.is_(None)),
        Operator.LT: lambda: column < span.start,
        Operator.LE: lambda: column < span.end,
        Operator.GT: lambda: column >= span.end,
        Operator.GE: lambda: column >= span.start,
    }
    if op not in comparisons:
        raise AssertionError(op)
    result: ColumnElement[Any] = comparisons[op]()
    return result


def _within(span: DateSpan, column: ColumnElement[Any]) -> ColumnElement[bool]:
    return and_(column >= span.start, column < span.end)


def _membership(condition: BoundCondition, column: ColumnElement[Any]) -> ColumnElement[bool]:
    """`[NOT] IN (...)` over values, date literals (spans) and null. NOT IN matches nulls, like
    !=, unless null is one of the excluded values."""
    spans = [v for v in condition.value if isinstance(v, DateSpan)]
    values = [
        v
        for v in condition.value
        if not isinstance(v, DateSpan) and not _is_null_value(condition, v)
    ]
    has_null = len(values) + len(spans) != len(condition.value)
    inside: ColumnElement[bool] = column.in_(values) if values else false()
    if spans:
        inside = or_(inside, *(_within(span, column) for span in spans))
    if condition.kind is ConditionKind.IN:
        return or_(inside, column.is_(None)) if has_null else inside
    outside: ColumnElement[bool] = column.not_in(values) if values else true()
    if spans:
        outside = inside.is_not(True)  # a null column is outside every span
    return and_(outside, column.is_not(None)) if has_null else or_(outside, column.is_(None))


def _semi_join(
    joins: Joins, condition: BoundCondition, column: ColumnElement[Any]
) -> ColumnElement[bool]:
    """`column [NOT] IN (SELECT ...)` over the sub-select's live rows. Nulls in the sub-select
    are left out, so that NOT IN excludes nothing for them; NOT IN matches a null column."""
    semi_join: BoundSemiJoin = condition.value
    joins.sub_selects += 1
    inner = Joins(joins.tables, semi_join.sobject.name, prefix=f"s{joins.sub_selects}_")
    selected = inner.column(semi_join.column)
    filters: list[ColumnElement[bool]] = [inner.root.c.IsDeleted.is_(False), selected.is_not(None)]
    if semi_join.where is not None:
        filters.append(condition_sql(inner, semi_join.where))
    sub = select(selected).select_from(inner.from_clause).where(*filters)
    if condition.kind is ConditionKind.IN:
        return column.in_(sub)
    return or_(column.is_(None), column.not_in(sub))


def _includes(condition: BoundCondition, column: ColumnElement[Any]) -> ColumnElement[bool]:
    wrapped = text_key(literal(";") + column + literal(";"))
    alternatives = []
    for value in condition.value:
        parts = [key_of(part.strip()) for part in str(value).split(";") if part.strip()]
        # A value is matched whole: `%` and `_` in it are literal, not LIKE wildcards.
        alternatives.append(
            and_(*(wrapped.like(f"%;{_like_literal(part)};%", escape="\\") for part in parts))
        )
    matched = or_(*alternatives) if alternatives else false()
    if condition.kind is ConditionKind.INCLUDES:
        return matched
    return or_(not_(matched), column.is_(None))


# The conditions that compare a text target's key with the keys of values (INCLUDES and
# EXCLUDES key the parts of a multi-select value themselves).
_KEYED = (ConditionKind.COMPARE, ConditionKind.IN, ConditionKind.NOT_IN)


def _compares_text(condition: BoundCondition) -> bool:
    return (
        condition.kind in _KEYED
        and not isinstance(condition.value, BoundSemiJoin)
        and text_field(condition.target) is not None
    )


def _text_leaf(
    condition: BoundCondition, column: ColumnElement[Any], grouped: bool
) -> ColumnElement[bool]:
    """A condition on text, by keys: `=`, `!=`, IN and NOT IN through keys_among (which a back
    end may spell as its index is, or test cheaply first), the others on the column's key.
    `grouped` (HAVING): the rows are groups, which GROUP BY keys on the computed key
    (Joins.group_key), so a keyed field's stored key is not read: PostgreSQL would refuse it."""
    if condition.kind is ConditionKind.COMPARE and condition.op not in (Operator.EQ, Operator.NE):
        value = condition.value
        keyed = replace(condition, value=key_of(value) if isinstance(value, str) else value)
        return _compare(keyed, text_key(column))
    values = (condition.value,) if condition.kind is ConditionKind.COMPARE else condition.value
    present = [str(value) for value in values if not _is_null_value(condition, value)]
    has_null = len(present) != len(values)
    target = condition.target
    indexed = not grouped and isinstance(target, BoundPath) and is_key_indexed(target.field)
    is_null = text_is_null(column)  # also where GROUP BY groups on the key (HAVING)
    positive = condition.op is Operator.EQ or condition.kind is ConditionKind.IN
    if not present:  # `= null`, `!= null`
        return is_null if positive else not_(is_null)
    inside = keys_among(column, present, indexed=indexed)
    if positive:
        return or_(inside, is_null) if has_null else inside
    # `!=` and NOT IN match nulls, unless null is what they leave out.
    outside = inside.is_not(True)
    return and_(outside, not_(is_null)) if has_null else outside


# SQLite parses `a AND b AND ...` as a chain and refuses one deeper than 1000; longer AND/OR
# lists are split into parenthesised halves, which keeps the depth logarithmic.
_FLAT_OPERANDS = 64


def _joined(keyword: str, clauses: list[ColumnElement[bool]]) -> ColumnElement[bool]:
    if len(clauses) <= _FLAT_OPERANDS:
        return and_(*clauses) if keyword == "AND" else or_(*clauses)
    middle = len(clauses) // 2
    # A high-precedence operator makes SQLAlchemy parenthesise both halves (and_ would flatten).
    joiner = _joined(keyword, clauses[:middle]).bool_op(keyword, precedence=100)
    return joiner(_joined(keyword, clauses[middle:]))


def condition_sql(
    joins: Columns, expr: BoundExpr, negated: bool = False, *, grouped: bool = False
) -> ColumnElement[bool]:
    """The SQL of a condition. Salesforce's NOT is two-valued (NOT of "no match" is a match), so
    negations are pushed down to the leaves (De Morgan), where `IS NOT TRUE` also matches SQL's
    unknown: the SQL then nests no deeper than the parentheses, whereas one NOT(...) per level
    overflows SQLite's parser and SQLAlchemy's recursion well within the parser's depth limit.
    `grouped`: the condition is HAVING's, over the groups of the statement's GROUP BY."""
    if isinstance(expr, BoundNot):
        return condition_sql(joins, expr.operand, not negated, grouped=grouped)
    if isinstance(expr, BoundAnd | BoundOr):
        operands = [
            condition_sql(joins, operand, negated, grouped=grouped) for operand in expr.operands
        ]
        return _joined("AND" if isinstance(expr, BoundAnd) != negated else "OR", operands)
    column = target_column(joins, expr.target)
    if _compares_text(expr):
        leaf = _text_leaf(expr, column, grouped)
    elif isinstance(expr.value, BoundSemiJoin):
        assert isinstance(joins, Joins)  # HAVING, the only union condition, has no sub-selects
        leaf = _semi_join(joins, expr, column)
    elif expr.kind is ConditionKind.COMPARE:
        leaf = _compare(expr, column)
    elif expr.kind in (ConditionKind.IN, ConditionKind.NOT_IN):
        leaf = _membership(expr, column)
    else:
        leaf = _includes(expr, column)
    return leaf.is_not(True) if negated else leaf


def record_filters(
    joins: Joins, bound: BoundQuery, include_deleted: bool
) -> list[ColumnElement[bool]]:
    """What every row of the query must satisfy: live (unless queryAll), owned by the user
    (USING SCOPE mine), in the data categories, and WHERE."""
    root = joins.root
    filters: list[ColumnElement[bool]] = []
    if not include_deleted:
        filters.append(root.c.IsDeleted.is_(False))
    if bound.owned_by_user:
        filters.append(root.c.OwnerId == bindparam(USER_PARAM))
    if bound.data_categories is not None:
        filters.append(category_condition(bound.data_categories, root, joins.tables))
    if bound.where is not None:
        filters.append(condition_sql(joins, bound.where))
    return filters
