"""The SOQL parser: recursive descent from tokens to the frozen AST of `app.soql.ast`.

Syntax only: names are not resolved and literals are not checked against field types; the binder
does both. A syntax error is Salesforce's MALFORMED_QUERY `unexpected token: 'x'` at the offending
token, with no position when that token is the first of the query.

LIMITATIONS vs real Salesforce: currency-prefixed numbers (`USD5000`) and relationship aliases
in FROM (`FROM Contact c, c.Account a`) are not parsed; `AND NOT x` is accepted (Salesforce
rejects it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar

from app.metadata.categories import OPERATORS as CATEGORY_OPERATORS
from app.metadata.number_bounds import INT64_MAX
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
    Query,
    SelectField,
    SelectItem,
    SelectSubquery,
    SelectTypeOf,
    TypeOfBranch,
)
from app.soql.errors import SoqlError, malformed
from app.soql.literals import DATE_LITERALS, N_DATE_LITERALS
from app.soql.relationship_aliases import expand_paths, full_path
from app.soql.tokens import Token, TokenType, lexical_error, scan

# Salesforce's reserved words ("Alias Notation"): never an alias, and no field path starts with one.
# fmt: off
RESERVED = frozenset({
    "AND", "ASC", "DESC", "EXCLUDES", "FIRST", "FROM", "GROUP", "HAVING", "IN", "INCLUDES", "LAST",
    "LIKE", "LIMIT", "NOT", "NULL", "NULLS", "OR", "SELECT", "USING", "WHERE", "WITH",
})
# SQL words agents try: rejected where they appear instead of being read as a name or an alias.
SQL_ONLY = frozenset({
    "AS", "BETWEEN", "CROSS", "DISTINCT", "FULL", "INNER", "IS", "JOIN", "LEFT", "ON", "OUTER",
    "RIGHT", "TOP", "UNION",
})
# fmt: on
# Words that start a later clause (or Apex's ALL ROWS) cannot be an alias either.
_NOT_ALIAS = RESERVED | SQL_ONLY | {"ALL", "FOR", "OFFSET", "ORDER", "TYPEOF", "UPDATE"}
# `FROM Group` is a real object although GROUP is reserved.
_NOT_OBJECT = (RESERVED | SQL_ONLY) - {"GROUP"}

_COMPARISONS = {op.value: op for op in Operator if op is not Operator.LIKE} | {"<>": Operator.NE}
# Literal token types have the names of their literal kinds.
_LITERAL_TYPES = ("STRING", "INTEGER", "DECIMAL", "DATE", "DATETIME")
_LITERAL_TOKENS = {TokenType[name]: LiteralKind[name] for name in _LITERAL_TYPES}
_KEYWORD_LITERALS: dict[str, tuple[LiteralKind, bool | None]] = {
    "TRUE": (LiteralKind.BOOLEAN, True),
    "FALSE": (LiteralKind.BOOLEAN, False),
    "NULL": (LiteralKind.NULL, None),
}
# Accepted and ignored: sharing modes, view tracking and Knowledge statistics.
_WITH_MODES = ("SECURITY_ENFORCED", "USER_MODE", "SYSTEM_MODE")
# FOR UPDATE is Apex-only: through the REST API Salesforce rejects it, and so does localforce.
_FOR_MODES = ("VIEW", "REFERENCE")
_UPDATE_MODES = ("TRACKING", "VIEWSTAT")

# Parentheses, NOT chains and subqueries nest the recursion; stop well before Python's limit.
MAX_DEPTH = 100

Expr = FieldPath | FunctionCall


def parse(query: str) -> Query:
    """The syntax tree of one SOQL query; raises SoqlError (MALFORMED_QUERY) when malformed.

    >>> parse("SELECT Name FROM Account WHERE Name LIKE 'Acme%' LIMIT 5").limit
    5
    """
    return _Parser(query).parse()


@dataclass
class _Clauses:
    """The optional clauses after FROM, filled in as they are read."""

    scope: str | None = None
    where: Condition | None = None
    group_by: tuple[Expr, ...] = ()
    having: Condition | None = None
    order_by: tuple[OrderKey, ...] = ()
    limit: int | None = None
    offset: int | None = None
    data_categories: tuple[DataCategoryFilter, ...] = ()


class _Parser:
    def __init__(self, query: str) -> None:
        self._query = query
        self._tokens = scan(query)
        self._index = 0
        self._depth = 0

    def parse(self) -> Query:
        query = self._parse_query()
        if self._tok.type is not TokenType.EOF:
            raise self._unexpected()
        return query

    # -- cursor ----------------------------------------------------------------------------

    @property
    def _tok(self) -> Token:
        return self._tokens[self._index]

    def _peek(self) -> Token:
        return self._tokens[min(self._index + 1, len(self._tokens) - 1)]

    def _advance(self) -> Token:
        token = self._tokens[self._index]
        if token.type is not TokenType.EOF:
            self._index += 1
        return token

    def _at(self, *keywords: str) -> bool:
        token = self._tokens[self._index]
        return token.type is TokenType.IDENT and token.value in keywords

    def _accept(self, keyword: str) -> bool:
        if self._at(keyword):
            self._index += 1
            return True
        return False

    def _expect(self, *keywords: str) -> Token:
        if not self._at(*keywords):
            raise self._unexpected()
        return self._advance()

    def _expect_type(self, type_: TokenType) -> Token:
        if self._tok.type is not type_:
            raise self._unexpected()
        return self._advance()

    def _unexpected(self, token: Token | None = None) -> SoqlError:
        token = token or self._tok
        if token.type is TokenType.ERROR:
            return lexical_error(self._query, token)
        text = "<EOF>" if token.type is TokenType.EOF else token.text
        # Salesforce gives no position for an error at the very first token.
        pos = None if token is self._tokens[0] else token.pos
        return malformed(f"unexpected token: '{text}'", query=self._query, pos=pos)

    @contextmanager
    def _nested(self) -> Iterator[None]:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise malformed("query is nested too deeply", query=self._query, pos=self._tok.pos)
        yield
        self._depth -= 1

    # -- query -----------------------------------------------------------------------------

    def _parse_query(self) -> Query:
        self._expect("SELECT")
        select = self._parse_select_list()
        self._expect("FROM")
        sobject = self._tok
        if sobject.type is not TokenType.IDENT or sobject.value in _NOT_OBJECT:
            raise self._unexpected()
        self._advance()
        # A subquery may name its relationship through the parent: `FROM Account.Contacts`.
        name = sobject.text
        while self._tok.type is TokenType.DOT:
            self._advance()
            name += "." + self._expect_type(TokenType.IDENT).text
        alias = self._parse_alias()
        relationship_aliases = self._parse_relationship_aliases()
        clauses = _Clauses()
        # Clauses come in this fixed order; one out of order is left for the caller to reject.
        for keyword, parse_clause in self._CLAUSES:
            if self._at(keyword):
                parse_clause(self, clauses)
        query = Query(
            select=select,
            sobject=name,
            sobject_pos=sobject.pos,
            alias=alias,
            where=clauses.where,
            group_by=clauses.group_by,
            having=clauses.having,
            order_by=clauses.order_by,
            limit=clauses.limit,
            offset=clauses.offset,
            scope=clauses.scope,
            data_categories=clauses.data_categories,
        )
        return expand_paths(query, relationship_aliases)

    def _parse_relationship_aliases(self) -> dict[str, tuple[str, ...]]:
        """`, c.Account a, a.Owner o` after `FROM Contact c`: each alias (lower-cased) and the
        whole path it names."""
        aliases: dict[str, tuple[str, ...]] = {}
        while self._tok.type is TokenType.COMMA:
            self._advance()
            path = self._parse_path()
            if len(path.parts) < 2:
                raise self._unexpected()
            alias = self._parse_alias()
            if alias is None:
                raise self._unexpected()
            aliases[alias.lower()] = full_path(path.parts, aliases)
        return aliases

    def _parse_select_list(self) -> tuple[SelectItem, ...]:
        items = [self._parse_select_item()]
        while self._tok.type is TokenType.COMMA:
            self._advance()
            items.append(self._parse_select_item())
        return tuple(items)

    def _parse_select_item(self) -> SelectItem:
        token = self._tok
        if token.type is TokenType.LPAREN:
            self._advance()
            with self._nested():
                query = self._parse_query()
            self._expect_type(TokenType.RPAREN)
            return SelectSubquery(query, token.pos)
        if self._at("TYPEOF") and self._peek().type is TokenType.IDENT:
            return self._parse_typeof()
        expr = self._parse_expr()
        return SelectField(expr, self._parse_alias(), expr.pos)

    def _parse_typeof(self) -> SelectTypeOf:
        """`TYPEOF What WHEN Account THEN Phone, Name [WHEN ...] [ELSE Name] END`."""
        start = self._advance()
        relationship = self._parse_path()
        branches = []
        while self._at("WHEN"):
            self._advance()
            sobject = self._expect_type(TokenType.IDENT)
            self._expect("THEN")
            branches.append(TypeOfBranch(sobject.text, self._parse_path_list(), sobject.pos))
        if not branches:
            raise self._unexpected()
        else_fields: tuple[FieldPath, ...] = ()
        if self._accept("ELSE"):
            else_fields = self._parse_path_list()
        self._expect("END")
        return SelectTypeOf(relationship, tuple(branches), else_fields, start.pos)

    def _parse_path_list(self) -> tuple[FieldPath, ...]:
        paths = [self._parse_path_item()]
        while self._tok.type is TokenType.COMMA:
            self._advance()
            paths.append(self._parse_path_item())
        return tuple(paths)

    def _parse_path_item(self) -> FieldPath:
        if self._tok.type is not TokenType.IDENT or self._peek().type is TokenType.LPAREN:
            raise self._unexpected()
        return self._parse_path()

    def _parse_alias(self) -> str | None:
        token = self._tok
        if token.type is TokenType.IDENT and token.value not in _NOT_ALIAS:
            self._advance()
            return token.text
        return None

    def _parse_expr(self) -> Expr:
        """A field path or a function call."""
        token = self._tok
        after = self._peek().type
        if (
            token.type is not TokenType.IDENT
            or token.value in SQL_ONLY
            # `Group.Name` is a path through the Group relationship; a bare reserved word is not.
            or (token.value in RESERVED and after is not TokenType.DOT)
        ):
            raise self._unexpected()
        if after is TokenType.LPAREN:
            return self._parse_call()
        return self._parse_path()

    def _parse_path(self) -> FieldPath:
        first = self._advance()
        parts = [first.text]
        while self._tok.type is TokenType.DOT:
            self._advance()
            parts.append(self._expect_type(TokenType.IDENT).text)
        return FieldPath(tuple(parts), first.pos)

    def _parse_call(self) -> FunctionCall:
        name = self._advance()
        if name.value == "GEOLOCATION":
            raise self._unexpected(name)  # only as DISTANCE's second argument
        self._advance()  # the "(" seen by _parse_expr
        if name.value == "DISTANCE":
            return self._parse_distance(name)
        args: list[Expr] = []
        if self._tok.type is not TokenType.RPAREN:
            with self._nested():
                args.append(self._parse_expr())
                while self._tok.type is TokenType.COMMA:
                    self._advance()
                    args.append(self._parse_expr())
        self._expect_type(TokenType.RPAREN)
        return FunctionCall(name.text, tuple(args), name.pos)

    def _parse_distance(self, name: Token) -> FunctionCall:
        """`DISTANCE(Location__c, GEOLOCATION(37.77, -122.42), 'mi')` after its "("."""
        field = self._parse_path()
        self._expect_type(TokenType.COMMA)
        self._expect("GEOLOCATION")
        self._expect_type(TokenType.LPAREN)
        latitude = self._parse_number()
        self._expect_type(TokenType.COMMA)
        longitude = self._parse_number()
        self._expect_type(TokenType.RPAREN)
        self._expect_type(TokenType.COMMA)
        unit = self._tok
        if unit.type is not TokenType.STRING:
            raise self._unexpected()
        self._advance()
        self._expect_type(TokenType.RPAREN)
        unit_literal = Literal(LiteralKind.STRING, unit.value, unit.text, unit.pos)
        return FunctionCall(name.text, (field,), name.pos, (latitude, longitude, unit_literal))

    def _parse_number(self) -> Literal:
        token = self._tok
        if token.type not in (TokenType.INTEGER, TokenType.DECIMAL):
            raise self._unexpected()
        self._advance()
        return Literal(_LITERAL_TOKENS[token.type], token.value, token.text, token.pos)

    # -- clauses ---------------------------------------------------------------------------

    def _parse_using(self, clauses: _Clauses) -> None:
        self._advance()
        self._expect("SCOPE")
        clauses.scope = self._expect_type(TokenType.IDENT).text

    def _parse_where(self, clauses: _Clauses) -> None:
        self._advance()
        clauses.where = self._parse_condition()

    def _parse_with(self, clauses: _Clauses) -> None:
        """One or more WITH clauses: DATA CATEGORY filters (once), and the modes and contexts
        that change nothing in an org of one administrator (see the README)."""
        while self._accept("WITH"):
            if self._at("DATA") and not clauses.data_categories:
                self._parse_data_category(clauses)
            elif self._accept("RECORDVISIBILITYCONTEXT"):
                self._parse_settings()
            elif self._accept("USERID"):
                self._expect_equals()
                self._expect_type(TokenType.STRING)
            else:
                self._expect(*_WITH_MODES)

    def _parse_data_category(self, clauses: _Clauses) -> None:
        self._expect("DATA")
        self._expect("CATEGORY")
        filters = [self._parse_category_filter()]
        while self._accept("AND"):
            filters.append(self._parse_category_filter())
        clauses.data_categories = tuple(filters)

    def _expect_equals(self) -> None:
        if self._tok.type is not TokenType.OP or self._tok.text != "=":
            raise self._unexpected()
        self._advance()

    def _parse_settings(self) -> None:
        """`(name=value, ...)`, as RecordVisibilityContext takes."""
        self._expect_type(TokenType.LPAREN)
        while True:
            self._expect_type(TokenType.IDENT)
            self._expect_equals()
            self._parse_value()
            if self._tok.type is not TokenType.COMMA:
                break
            self._advance()
        self._expect_type(TokenType.RPAREN)

    def _parse_category_filter(self) -> DataCategoryFilter:
        """`Geography__c AT usa__c` or `Geography__c BELOW (usa__c, uk__c)`."""
        group = self._expect_type(TokenType.IDENT)
        operator = self._expect(*CATEGORY_OPERATORS)
        if self._tok.type is TokenType.LPAREN:
            self._advance()
            names = self._parse_name_list()
            self._expect_type(TokenType.RPAREN)
        else:
            names = (self._expect_type(TokenType.IDENT).text,)
        return DataCategoryFilter(group.text, str(operator.value), names, group.pos)

    def _parse_name_list(self) -> tuple[str, ...]:
        names = [self._expect_type(TokenType.IDENT).text]
        while self._tok.type is TokenType.COMMA:
            self._advance()
            names.append(self._expect_type(TokenType.IDENT).text)
        return tuple(names)

    def _parse_group_by(self, clauses: _Clauses) -> None:
        self._advance()
        self._expect("BY")
        # ROLLUP(a, b) and CUBE(a) read as function calls; the binder tells them apart.
        exprs = [self._parse_expr()]
        while self._tok.type is TokenType.COMMA:
            self._advance()
            exprs.append(self._parse_expr())
        clauses.group_by = tuple(exprs)

    def _parse_having(self, clauses: _Clauses) -> None:
        self._advance()
        clauses.having = self._parse_condition()

    def _parse_order_by(self, clauses: _Clauses) -> None:
        self._advance()
        self._expect("BY")
        keys = [self._parse_order_key()]
        while self._tok.type is TokenType.COMMA:
            self._advance()
            keys.append(self._parse_order_key())
        clauses.order_by = tuple(keys)

    def _parse_order_key(self) -> OrderKey:
        expr = self._parse_expr()
        descending = self._accept("DESC")
        if not descending:
            self._accept("ASC")
        nulls_first = None
        if self._accept("NULLS"):
            nulls_first = self._expect("FIRST", "LAST").value == "FIRST"
        return OrderKey(expr, descending, nulls_first, expr.pos)

    def _parse_limit(self, clauses: _Clauses) -> None:
        self._advance()
        clauses.limit = self._parse_count()

    def _parse_offset(self, clauses: _Clauses) -> None:
        self._advance()
        clauses.offset = self._parse_count()

    def _parse_count(self) -> int:
        """LIMIT's or OFFSET's whole number. One too long for Python's int (the tokenizer reads
        it as a decimal) is past every bound, and only that matters: it stands as INT64_MAX + 1,
        so that LIMIT means no limit and OFFSET is out of range, as with shorter ones."""
        token = self._tok
        whole_decimal = token.type is TokenType.DECIMAL and token.text.isdigit()
        if not (token.type is TokenType.INTEGER or whole_decimal) or token.text.startswith("-"):
            raise self._unexpected()
        self._advance()
        return INT64_MAX + 1 if whole_decimal else int(token.text)

    def _parse_for(self, clauses: _Clauses) -> None:
        self._advance()
        self._expect(*_FOR_MODES)

    def _parse_update(self, clauses: _Clauses) -> None:
        self._advance()
        self._expect(*_UPDATE_MODES)

    _CLAUSES: ClassVar[tuple[tuple[str, Callable[[_Parser, _Clauses], None]], ...]] = (
        ("USING", _parse_using),
        ("WHERE", _parse_where),
        ("WITH", _parse_with),
        ("GROUP", _parse_group_by),
        ("HAVING", _parse_having),
        ("ORDER", _parse_order_by),
        ("LIMIT", _parse_limit),
        ("OFFSET", _parse_offset),
        ("FOR", _parse_for),
        ("UPDATE", _parse_update),
    )

    # -- conditions ------------------------------------------------------------------------

    def _parse_condition(self) -> Condition:
        """A whole condition: `NOT operand` alone, or operands joined by one of AND and OR. SOQL
        has no precedence between AND and OR, so a second kind of joiner at the same level is an
        error; NOT only starts a whole condition (`a = 1 AND NOT b = 2` is refused, `a = 1 AND
        (NOT b = 2)` is not)."""
        token = self._tok
        if self._accept("NOT"):
            with self._nested():
                negated = Not(self._parse_operand(), token.pos)
            if self._at("AND", "OR"):
                raise self._unexpected()
            return negated
        first = self._parse_operand()
        if not self._at("AND", "OR"):
            return first
        joiner = str(self._tok.value)
        operands = [first]
        while self._accept(joiner):
            operands.append(self._parse_operand())
        if self._at("AND", "OR"):
            raise self._unexpected()
        return And(tuple(operands)) if joiner == "AND" else Or(tuple(operands))

    def _parse_operand(self) -> Condition:
        """A predicate, or a whole condition in parentheses."""
        if self._tok.type is TokenType.LPAREN:
            self._advance()
            with self._nested():
                condition = self._parse_condition()
            self._expect_type(TokenType.RPAREN)
            return condition
        return self._parse_predicate()

    def _parse_predicate(self) -> Condition:
        left = self._parse_expr()
        token = self._tok
        if token.type is TokenType.OP:
            self._advance()
            return Comparison(left, _COMPARISONS[token.text], self._parse_value(), left.pos)
        parse_rest = (
            self._PREDICATES.get(str(token.value)) if token.type is TokenType.IDENT else None
        )
        if parse_rest is None:
            raise self._unexpected()
        return parse_rest(self, left)

    def _parse_like(self, left: Expr) -> Condition:
        self._advance()
        return Comparison(left, Operator.LIKE, self._parse_value(), left.pos)

    def _parse_in(self, left: Expr) -> Condition:
        self._advance()
        return self._parse_in_values(left, negated=False)

    def _parse_not_in(self, left: Expr) -> Condition:
        self._advance()
        self._expect("IN")
        return self._parse_in_values(left, negated=True)

    def _parse_in_values(self, left: Expr, *, negated: bool) -> InCondition:
        self._expect_type(TokenType.LPAREN)
        if not self._at("SELECT"):
            return InCondition(left, self._parse_value_list(), negated, left.pos)
        with self._nested():
            subquery = self._parse_query()
        self._expect_type(TokenType.RPAREN)
        return InCondition(left, subquery, negated, left.pos)

    def _parse_includes(self, left: Expr) -> Condition:
        keyword = self._advance()
        if not isinstance(left, FieldPath):
            raise self._unexpected(keyword)
        self._expect_type(TokenType.LPAREN)
        values = self._parse_value_list()
        return IncludesCondition(left, values, keyword.value == "EXCLUDES", left.pos)

    _PREDICATES: ClassVar[dict[str, Callable[[_Parser, Expr], Condition]]] = {
        "LIKE": _parse_like,
        "IN": _parse_in,
        "NOT": _parse_not_in,
        "INCLUDES": _parse_includes,
        "EXCLUDES": _parse_includes,
    }

    # -- literals --------------------------------------------------------------------------

    def _parse_value_list(self) -> tuple[Literal, ...]:
        """`lit, lit, ...)` after an opening parenthesis."""
        values = [self._parse_value()]
        while self._tok.type is TokenType.COMMA:
            self._advance()
            values.append(self._parse_value())
        self._expect_type(TokenType.RPAREN)
        return tuple(values)

    def _parse_value(self) -> Literal:
        token = self._tok
        kind = _LITERAL_TOKENS.get(token.type)
        if kind is not None:
            self._advance()
            return Literal(kind, token.value, token.text, token.pos)
        name = str(token.value) if token.type is TokenType.IDENT else ""
        if name in _KEYWORD_LITERALS:
            self._advance()
            kind, value = _KEYWORD_LITERALS[name]
            return Literal(kind, value, token.text, token.pos)
        if name in DATE_LITERALS:
            self._advance()
            return Literal(LiteralKind.DATE_LITERAL, (name, None), token.text, token.pos)
        if name in N_DATE_LITERALS:
            self._advance()
            self._expect_type(TokenType.COLON)
            count = self._expect_type(TokenType.INTEGER)
            text = f"{token.text}:{count.text}"
            return Literal(LiteralKind.DATE_LITERAL, (name, int(count.text)), text, token.pos)
        raise self._unexpected()
