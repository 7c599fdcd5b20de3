"""The search term language (fixtures/terms.txt), and the statement parser's structure."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.errors import SalesforceError
from app.soql.function_registry import FUNCTIONS
from app.sosl.ast import And, AndNot, Or, SearchGroup, Term, TermExpr
from app.sosl.parser import parse
from app.sosl.terms import NOTHING_FOUND_AFTER, OPERATORS_DROPPED_AFTER, parse_term

FIXTURES = Path(__file__).parent / "fixtures"


def render(expr: TermExpr | None) -> str:
    if expr is None:
        return "<nothing>"
    if isinstance(expr, Term):
        joined = " ".join(expr.words)
        return f'"{joined}"' if expr.quoted or len(expr.words) > 1 else joined
    if isinstance(expr, AndNot):
        return f"({render(expr.left)} AND NOT {render(expr.right)})"
    joiner = " AND " if isinstance(expr, And) else " OR "
    return "(" + joiner.join(render(operand) for operand in expr.operands) + ")"


def load_terms() -> list[tuple[str, str]]:
    cases = []
    text = (FIXTURES / "terms.txt").read_text(encoding="utf-8")
    for block in text.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith("#")]
        if not lines:
            continue
        assert len(lines) == 2 and lines[1].startswith("=> "), block
        cases.append((lines[0], lines[1][3:]))
    return cases


TERMS = load_terms()


@pytest.mark.parametrize(("term", "expected"), TERMS, ids=[t for t, _ in TERMS])
def test_term(term: str, expected: str) -> None:
    try:
        got = render(parse_term(term).expr)
    except SalesforceError as error:
        got = f"{error.error_code}: {error.message}"
    assert got == expected


def test_long_terms_drop_operators_then_find_nothing() -> None:
    words = " AND ".join(["rope"] * (OPERATORS_DROPPED_AFTER // 8 + 1))
    expr = parse_term(words).expr
    assert isinstance(expr, Or) and len(expr.operands) > 400
    assert parse_term("rope " * (NOTHING_FOUND_AFTER // 5 + 1)).expr is None


def test_deep_nesting_is_refused_not_recursed() -> None:
    with pytest.raises(SalesforceError) as nested:
        parse_term("(" * 500 + "rope" + ")" * 500)
    assert nested.value.error_code == "MALFORMED_SEARCH"
    alternating = " ".join(f"w{i} OR w{i}x" for i in range(200))
    with pytest.raises(SalesforceError):
        parse_term(alternating)


def test_statement_structure() -> None:
    query = parse(
        "find {Acme} in email fields returning Account(Name where Name != null "
        "order by Name limit 5 offset 1), Contact "
        "with snippet(target_length=120) with metadata='LABELS' with highlight "
        "with spell_correction=false with division='Global' with PricebookId='01s' "
        "with network in ('0DB1') with data category Geo__c above_or_below (usa__c, uk__c) "
        "limit 7 update viewstat",
        FUNCTIONS,
    )
    assert query.group is SearchGroup.EMAIL
    assert [r.sobject for r in query.returning] == ["Account", "Contact"]
    account = query.returning[0].query
    assert (account.limit, account.offset, len(account.order_by)) == (5, 1, 1)
    assert query.returning[1].query.select[0].expr.text == "Id"  # type: ignore[union-attr]
    options = query.options
    assert options.snippet and options.snippet_length == 120
    assert options.metadata_labels and options.highlight and options.spell_correction is False
    assert (options.division, options.pricebook_id, options.network_ids) == (
        "Global",
        "01s",
        ("0DB1",),
    )
    assert options.data_categories[0].categories == ("usa__c", "uk__c")
    assert query.limit == 7


def test_braces_inside_the_term_are_escaped() -> None:
    query = parse(r"FIND {a\}b\{c rope} RETURNING Product2", FUNCTIONS)
    assert render(query.term.expr) == '("b c" AND rope)'
    assert query.term.text == r"a\}b\{c rope"


def test_statements_past_100000_characters_are_refused() -> None:
    with pytest.raises(SalesforceError) as long:
        parse("FIND {rope} " + " " * 100_000, FUNCTIONS)
    assert long.value.error_code == "MALFORMED_SEARCH"
    with pytest.raises(SalesforceError) as nul:
        parse("FIND {rope} RETURNING Product2(Name WHERE Name = 'a\x00')", FUNCTIONS)
    assert nul.value.error_code == "MALFORMED_SEARCH"
