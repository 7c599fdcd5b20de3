from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from app.errors import SalesforceError
from app.soql.ast import (
    And,
    Comparison,
    Condition,
    DataCategoryFilter,
    FieldPath,
    FunctionCall,
    IncludesCondition,
    InCondition,
    Literal,
    LiteralKind,
    Not,
    Operator,
    Or,
    OrderKey,
    Position,
    Query,
    SelectField,
    SelectItem,
    SelectSubquery,
    SelectTypeOf,
)
from app.soql.errors import SoqlError
from app.soql.parser import parse
from app.soql.tokens import TokenType, tokenize

FIXTURES = Path(__file__).parent / "fixtures"

# -- a canonical printer, so that fixtures can state what was understood ------------------------

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f", "'": "\\'"}


def render(query: Query) -> str:
    """One-line SOQL for the tree: keywords upper-cased, names as written, values normalised."""
    parts = ["SELECT " + ", ".join(_item(item) for item in query.select), "FROM " + query.sobject]
    if query.alias:
        parts.append(query.alias)
    if query.scope:
        parts.append("USING SCOPE " + query.scope)
    if query.where:
        parts.append("WHERE " + _condition(query.where))
    if query.data_categories:
        filters = [_category(item) for item in query.data_categories]
        parts.append("WITH DATA CATEGORY " + " AND ".join(filters))
    if query.group_by:
        parts.append("GROUP BY " + ", ".join(_expr(e) for e in query.group_by))
    if query.having:
        parts.append("HAVING " + _condition(query.having))
    if query.order_by:
        parts.append("ORDER BY " + ", ".join(_order_key(key) for key in query.order_by))
    if query.limit is not None:
        parts.append(f"LIMIT {query.limit}")
    if query.offset is not None:
        parts.append(f"OFFSET {query.offset}")
    return " ".join(parts)


def _item(item: SelectItem) -> str:
    if isinstance(item, SelectSubquery):
        return f"({render(item.query)})"
    if isinstance(item, SelectTypeOf):
        text = f"TYPEOF {item.relationship.text}"
        for branch in item.branches:
            fields = ", ".join(path.text for path in branch.fields)
            text += f" WHEN {branch.sobject} THEN {fields}"
        if item.else_fields:
            text += " ELSE " + ", ".join(path.text for path in item.else_fields)
        return text + " END"
    return _expr(item.expr) + (f" {item.alias}" if item.alias else "")


def _expr(expr: FieldPath | FunctionCall) -> str:
    if isinstance(expr, FieldPath):
        return expr.text
    if expr.literals:  # DISTANCE(field, GEOLOCATION(lat, lon), 'unit')
        latitude, longitude, unit = expr.literals
        point = f"GEOLOCATION({latitude.text}, {longitude.text})"
        return f"{expr.name}({_expr(expr.args[0])}, {point}, {unit.text})"
    return f"{expr.name}({', '.join(_expr(arg) for arg in expr.args)})"


def _category(item: DataCategoryFilter) -> str:
    names = item.categories[0] if len(item.categories) == 1 else f"({', '.join(item.categories)})"
    return f"{item.group} {item.operator} {names}"


def _order_key(key: OrderKey) -> str:
    text = _expr(key.expr) + (" DESC" if key.descending else "")
    if key.nulls_first is not None:
        text += " NULLS FIRST" if key.nulls_first else " NULLS LAST"
    return text


def _condition(condition: Condition, *, nested: bool = False) -> str:
    match condition:
        case And(operands) | Or(operands):
            joiner = " AND " if isinstance(condition, And) else " OR "
            text = joiner.join(_condition(operand, nested=True) for operand in operands)
            return f"({text})" if nested else text
        case Not(operand):
            # NOT only starts a whole condition: as an operand of AND or OR it is parenthesised.
            text = "NOT " + _condition(operand, nested=True)
            return f"({text})" if nested else text
        case Comparison(left, op, right):
            return f"{_expr(left)} {op.value} {_literal(right)}"
        case InCondition(left, values, negated):
            inside = render(values) if isinstance(values, Query) else _literals(values)
            return f"{_expr(left)} {'NOT IN' if negated else 'IN'} ({inside})"
        case IncludesCondition(left, values, excludes):
            return f"{left.text} {'EXCLUDES' if excludes else 'INCLUDES'} ({_literals(values)})"
    raise AssertionError(condition)


def _literals(values: tuple[Literal, ...]) -> str:
    return ", ".join(_literal(value) for value in values)


def _literal(literal: Literal) -> str:
    value = literal.value
    match literal.kind:
        case LiteralKind.STRING:
            assert isinstance(value, str)
            # Backslash escapes, but `\%` and `\_` are kept as written by the tokenizer.
            escaped = re.sub(r"\\(?![%_])", r"\\\\", value)
            return "'" + "".join(_ESCAPES.get(char, char) for char in escaped) + "'"
        case LiteralKind.BOOLEAN | LiteralKind.NULL:
            assert value == {"true": True, "false": False, "null": None}[literal.text.lower()]
            return literal.text
        case LiteralKind.DATETIME:
            assert isinstance(value, datetime)
            return _datetime(value)
        case LiteralKind.DATE:
            assert isinstance(value, date)
            return value.isoformat()
        case LiteralKind.DATE_LITERAL:
            assert isinstance(value, tuple)
            name, count = value
            return name if count is None else f"{name}:{count}"
    assert isinstance(value, int | Decimal)
    return str(value)


def _datetime(value: datetime) -> str:
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    offset = value.utcoffset()
    assert offset is not None
    if not offset:
        return text + "Z"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


# -- fixture files --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    query: str
    expected: str
    line: int


def load_blocks(name: str) -> list[Case]:
    """Blocks separated by blank lines: the query's lines, then an optional `=> expected` line.
    Lines starting with `#` are comments."""
    cases: list[Case] = []
    lines: list[str] = []
    start = 0
    text = (FIXTURES / name).read_text(encoding="utf-8")
    for number, line in enumerate([*text.splitlines(), ""], start=1):
        if line.startswith("#"):
            continue
        if line.strip():
            start = start or number
            lines.append(line)
            continue
        if lines:
            expected = lines.pop()[3:] if lines[-1].startswith("=> ") else ""
            cases.append(Case("\n".join(lines), expected, start))
        lines, start = [], 0
    return cases


def _ids(cases: list[Case]) -> list[str]:
    return [f"line{case.line}" for case in cases]


OK_CASES = load_blocks("parse_ok.txt")
ERROR_CASES = load_blocks("parse_errors.txt")


def test_fixture_files_are_big_enough() -> None:
    assert len(OK_CASES) >= 60
    assert len(ERROR_CASES) >= 40
    assert all(case.expected for case in ERROR_CASES)


@pytest.mark.parametrize("case", OK_CASES, ids=_ids(OK_CASES))
def test_valid_queries_parse_to_the_expected_tree(case: Case) -> None:
    expected = case.expected or " ".join(case.query.split())
    assert render(parse(case.query)) == expected


@pytest.mark.parametrize("case", ERROR_CASES, ids=_ids(ERROR_CASES))
def test_invalid_queries_give_salesforce_errors(case: Case) -> None:
    with pytest.raises(SalesforceError) as raised:
        parse(case.query)
    error = raised.value
    if isinstance(error, SoqlError):
        where = f" @ {error.pos.line}:{error.pos.column}" if error.pos else ""
        assert f"{error.error_code}: {error.reason}{where}" == case.expected
    else:
        assert f"{error.error_code}: {error.message}" == case.expected


# -- the tree in detail ---------------------------------------------------------------------


def test_select_items_keep_names_positions_and_aliases() -> None:
    query = parse("SELECT Id, Account.Owner.Name, COUNT() cnt, toLabel(Status) FROM Case c")
    assert query.sobject == "Case"
    assert query.sobject_pos == Position(1, 66)
    assert query.alias == "c"
    assert query.select == (
        SelectField(FieldPath(("Id",), Position(1, 8)), None, Position(1, 8)),
        SelectField(
            FieldPath(("Account", "Owner", "Name"), Position(1, 12)), None, Position(1, 12)
        ),
        SelectField(FunctionCall("COUNT", (), Position(1, 32)), "cnt", Position(1, 32)),
        SelectField(
            FunctionCall("toLabel", (FieldPath(("Status",), Position(1, 53)),), Position(1, 45)),
            None,
            Position(1, 45),
        ),
    )


def test_nested_function_calls() -> None:
    query = parse("SELECT HOUR_IN_DAY(convertTimezone(CreatedDate)) h, COUNT(Id) FROM Case")
    select = query.select[0]
    assert isinstance(select, SelectField)
    assert select.expr == FunctionCall(
        "HOUR_IN_DAY",
        (
            FunctionCall(
                "convertTimezone", (FieldPath(("CreatedDate",), Position(1, 36)),), Position(1, 20)
            ),
        ),
        Position(1, 8),
    )
    assert select.alias == "h"


def test_subquery_in_select() -> None:
    query = parse("SELECT Name, (SELECT LastName FROM Contacts LIMIT 3) FROM Account")
    subquery = query.select[1]
    assert isinstance(subquery, SelectSubquery)
    assert subquery.pos == Position(1, 14)
    assert subquery.query.sobject == "Contacts"
    assert subquery.query.limit == 3


def test_semi_join_keeps_the_subquery() -> None:
    query = parse("SELECT Id FROM Case WHERE Id NOT IN (SELECT CaseId__c FROM CaseHistory__c)")
    assert isinstance(query.where, InCondition)
    assert query.where.negated
    assert isinstance(query.where.values, Query)
    assert query.where.values.sobject == "CaseHistory__c"


def test_and_or_groups_are_flat_and_keep_parentheses_as_nesting() -> None:
    query = parse("SELECT Id FROM A WHERE a = 1 AND b = 2 AND (c = 3 OR (NOT d = 4))")
    where = query.where
    assert isinstance(where, And)
    assert len(where.operands) == 3
    group = where.operands[2]
    assert isinstance(group, Or)
    assert isinstance(group.operands[1], Not)
    assert group.operands[1].pos == Position(1, 55)


def test_comparison_literals_are_typed() -> None:
    query = parse(
        "SELECT Id FROM Opportunity WHERE Amount > -5 AND Probability = .5 AND IsWon = TRUE"
        " AND CloseDate = 2020-09-10 AND LastModifiedDate < 2024-01-31T10:00:00.25-0800"
        " AND Name != null AND Owner.Alias <> 'x\\u00e9\\N'"
    )
    assert isinstance(query.where, And)
    values = []
    for operand in query.where.operands:
        assert isinstance(operand, Comparison)
        values.append((operand.op, operand.right.kind, operand.right.value))
    assert values == [
        (Operator.GT, LiteralKind.INTEGER, -5),
        (Operator.EQ, LiteralKind.DECIMAL, Decimal("0.5")),
        (Operator.EQ, LiteralKind.BOOLEAN, True),
        (Operator.EQ, LiteralKind.DATE, date(2020, 9, 10)),
        (
            Operator.LT,
            LiteralKind.DATETIME,
            datetime(2024, 1, 31, 10, 0, 0, 250000, tzinfo=timezone(-timedelta(hours=8))),
        ),
        (Operator.NE, LiteralKind.NULL, None),
        (Operator.NE, LiteralKind.STRING, "x\u00e9\n"),
    ]


def test_date_literals() -> None:
    query = parse("SELECT Id FROM Case WHERE CreatedDate IN (today, LAST_N_DAYS:4, N_WEEKS_AGO:-2)")
    assert isinstance(query.where, InCondition)
    assert isinstance(query.where.values, tuple)
    assert [(v.value, v.text) for v in query.where.values] == [
        (("TODAY", None), "today"),
        (("LAST_N_DAYS", 4), "LAST_N_DAYS:4"),
        (("N_WEEKS_AGO", -2), "N_WEEKS_AGO:-2"),
    ]


def test_like_escapes_stay_for_the_compiler() -> None:
    query = parse(r"SELECT Id FROM Account WHERE Name LIKE '50\% off\_%' AND Name = 'a\\b'")
    assert isinstance(query.where, And)
    like, equal = query.where.operands
    assert isinstance(like, Comparison)
    assert isinstance(equal, Comparison)
    assert like.right.value == "50\\% off\\_%"
    assert like.right.text == r"'50\% off\_%'"
    assert equal.right.value == "a\\b"


def test_order_by_defaults_and_nulls() -> None:
    query = parse("SELECT Id FROM A ORDER BY a, b ASC, c DESC NULLS FIRST, COUNT(Id) NULLS LAST")
    assert [(k.descending, k.nulls_first) for k in query.order_by] == [
        (False, None),
        (False, None),
        (True, True),
        (False, False),
    ]


def test_ignored_clauses_are_accepted() -> None:
    query = parse(
        "SELECT Id FROM Account USING SCOPE mine WHERE Name = 'x' WITH SECURITY_ENFORCED"
        " LIMIT 1 FOR VIEW UPDATE TRACKING"
    )
    assert query.scope == "mine"
    assert query.limit == 1


def test_an_error_message_echoes_the_line_with_a_caret() -> None:
    with pytest.raises(SoqlError) as raised:
        parse("SELECT Id\nFROM Account\nWHERE a = 1 OR b = 2 AND c = 3")
    assert raised.value.error_code == "MALFORMED_QUERY"
    assert raised.value.message == (
        "\nWHERE a = 1 OR b = 2 AND c = 3\n                     ^\n"
        "ERROR at Row:3:Column:22\nunexpected token: 'AND'"
    )


def test_a_long_line_is_echoed_as_a_window() -> None:
    query = "SELECT " + ", ".join(f"Field{i}__c" for i in range(20)) + " FROM Account LIMIT x"
    with pytest.raises(SoqlError) as raised:
        parse(query)
    column = query.index("LIMIT x") + 7
    assert raised.value.pos == Position(1, column)
    echo, caret = raised.value.message.split("\n")[1:3]
    assert len(echo) <= 80
    assert echo[caret.index("^")] == "x"


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_an_empty_query_is_unexpected_eof_without_position(query: str) -> None:
    with pytest.raises(SoqlError) as raised:
        parse(query)
    assert raised.value.message == "unexpected token: '<EOF>'"
    assert raised.value.pos is None


def test_adjacent_strings_are_not_an_sql_quote_escape() -> None:
    with pytest.raises(SoqlError) as raised:
        parse("SELECT Id FROM Case WHERE Subject = 'It''s'")
    assert raised.value.reason == "unexpected token: ''s''"


def test_deep_nesting_is_refused_cleanly() -> None:
    query = "SELECT Id FROM A WHERE " + "(" * 500 + "a = 1" + ")" * 500
    with pytest.raises(SoqlError) as raised:
        parse(query)
    assert raised.value.reason == "query is nested too deeply"


# -- tokens -----------------------------------------------------------------------------------


def test_tokens_have_types_values_and_positions() -> None:
    tokens = tokenize("SELECT Id\n  FROM Case WHERE x >= -1.50 AND d = 2024-01-31T10:00:00Z")
    assert [(t.type, t.text, t.pos.line, t.pos.column) for t in tokens] == [
        (TokenType.IDENT, "SELECT", 1, 1),
        (TokenType.IDENT, "Id", 1, 8),
        (TokenType.IDENT, "FROM", 2, 3),
        (TokenType.IDENT, "Case", 2, 8),
        (TokenType.IDENT, "WHERE", 2, 13),
        (TokenType.IDENT, "x", 2, 19),
        (TokenType.OP, ">=", 2, 21),
        (TokenType.DECIMAL, "-1.50", 2, 24),
        (TokenType.IDENT, "AND", 2, 30),
        (TokenType.IDENT, "d", 2, 34),
        (TokenType.OP, "=", 2, 36),
        (TokenType.DATETIME, "2024-01-31T10:00:00Z", 2, 38),
        (TokenType.EOF, "", 2, 58),
    ]
    assert tokens[0].value == "SELECT"
    assert tokens[1].value == "ID"
    assert tokens[7].value == Decimal("-1.50")
    assert tokens[11].value == datetime(2024, 1, 31, 10, tzinfo=UTC)


def test_tokens_after_a_multi_line_string_count_lines() -> None:
    tokens = tokenize("SELECT Id FROM A WHERE b = 'x\ny' AND c = 1")
    and_token = tokens[8]
    assert (and_token.text, and_token.pos) == ("AND", Position(2, 4))
    assert tokens[7].value == "x\ny"


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("x = 'abc", "line 1:8 mismatched character '<EOF>' expecting '''"),
        ("x = 2016-07-31T04:17:54", "line 1:23 no viable alternative at character '<EOF>'"),
        (
            "x = 'a\\q'",
            "Invalid string literal 'a\\q'. Illegal character sequence '\\q' in string literal.",
        ),
        ("x = 2024-13-01", "Invalid date: 2024-13-01"),
        ("x # y", "line 1:2 no viable alternative at character '#'"),
    ],
)
def test_tokenize_raises_lexical_errors(query: str, reason: str) -> None:
    with pytest.raises(SoqlError) as raised:
        tokenize(query)
    assert raised.value.error_code == "MALFORMED_QUERY"
    assert raised.value.reason == reason
