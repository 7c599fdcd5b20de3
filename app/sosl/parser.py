"""The SOSL statement parser: `FIND {term} [IN ...] [RETURNING ...] [WITH ...] [LIMIT n]
[UPDATE ...]` to the syntax tree of `app.sosl.ast`.

The term between the braces goes to the term language parser (`app.sosl.terms`). The rest of
the statement is read with the SOQL tokenizer (the term blanked out, so every token keeps its
row and column). Each RETURNING object's field list and clauses are handed to the SOQL parser
as the query `SELECT <fields> FROM <object> <clauses>`, and its errors are moved back to where
the offending token is in the statement.

LIMITATIONS: `USING LISTVIEW` answers FUNCTIONALITY_NOT_ENABLED; a top-level OFFSET is rejected
as in Salesforce (OFFSET belongs to a RETURNING object).
"""

from __future__ import annotations

from dataclasses import replace

from app.errors import UnsupportedQueryFeature
from app.soql import ast as soql_ast
from app.soql.ast import DataCategoryFilter, Position
from app.soql.errors import SoqlError
from app.soql.function_registry import FunctionRegistry
from app.soql.function_spec import FunctionKind
from app.soql.parser import parse as parse_soql
from app.soql.tokens import Token, TokenType, scan
from app.sosl.ast import (
    Returning,
    SearchGroup,
    SearchTerm,
    SoqlSource,
    SoslQuery,
    WithOptions,
)
from app.sosl.errors import (
    SoslError,
    from_soql,
    malformed_search,
    no_search_term,
    offset_of,
    position_at,
)
from app.sosl.terms import parse_term

MAX_STATEMENT_LENGTH = 100_000
# Clauses a RETURNING object's parentheses may hold after its field list.
_OBJECT_CLAUSES = frozenset({"WHERE", "ORDER", "LIMIT", "OFFSET", "USING"})
# SOQL clauses that SOSL does not have.
_NOT_IN_SOSL = frozenset({"GROUP", "HAVING", "WITH", "FOR", "UPDATE"})
# Words that end a RETURNING list or start a clause: never an object name.
_NOT_OBJECT = frozenset({"RETURNING", "WITH", "LIMIT", "UPDATE", "IN", "OFFSET", "FIND"})
_CATEGORY_OPERATORS = ("AT", "ABOVE", "BELOW", "ABOVE_OR_BELOW")
_UPDATE_MODES = ("TRACKING", "VIEWSTAT")


def _term_bounds(statement: str) -> tuple[int, int]:
    """Offsets of the `{` and `}` around the search term, escapes honoured."""
    stripped = statement.lstrip()
    start = len(statement) - len(stripped)
    if stripped[:4].upper() != "FIND":
        raise no_search_term()
    index = start + 4
    while index < len(statement) and statement[index].isspace():
        index += 1
    if index >= len(statement) or statement[index] != "{":
        raise no_search_term()
    opening = index
    index += 1
    while index < len(statement):
        char = statement[index]
        if char == "\\":
            index += 2
            continue
        if char == "}":
            return opening, index
        index += 1
    raise no_search_term()


def _blank(text: str) -> str:
    """Spaces in place of `text`, keeping its line breaks (so positions after it hold)."""
    return "".join(char if char in "\r\n" else " " for char in text)


def parse(statement: str, functions: FunctionRegistry) -> SoslQuery:
    """The syntax tree of one SOSL statement; raises MALFORMED_SEARCH or INVALID_SEARCH.
    `functions` (the app's) tells an aggregate, which a field list may not call, from the rest."""
    if len(statement) > MAX_STATEMENT_LENGTH:
        raise malformed_search(
            f"Search is too long: maximum length is {MAX_STATEMENT_LENGTH} characters"
        )
    if "\x00" in statement:
        raise malformed_search("The search contains a NUL character")
    opening, closing = _term_bounds(statement)
    masked = statement[:opening] + _blank(statement[opening : closing + 1])
    masked += statement[closing + 1 :]
    term = parse_term(statement[opening + 1 : closing])
    return _StatementParser(statement, masked, functions).parse(term)


def _soql_query(text: str, source: SoqlSource) -> soql_ast.Query:
    try:
        return parse_soql(text)
    except SoqlError as error:
        raise from_soql(error, source) from None


def _check_select(query: soql_ast.Query, source: SoqlSource, functions: FunctionRegistry) -> None:
    """SOSL field lists name fields: no aggregates, no subqueries, no SOQL-only clauses."""
    for item in query.select:
        if isinstance(item, soql_ast.SelectSubquery):
            raise _positioned("unexpected token: '('", source, item.pos)
        if isinstance(item, soql_ast.SelectTypeOf):
            raise _positioned("unexpected token: 'TYPEOF'", source, item.pos)
        if isinstance(item.expr, soql_ast.FunctionCall) and _is_aggregate(item.expr, functions):
            raise _positioned(f"unexpected token: '{item.expr.name}'", source, item.pos)
    if query.group_by or query.having:
        raise malformed_search("GROUP BY and HAVING are not allowed in a search")
    if query.scope is not None:
        raise malformed_search("USING SCOPE is not allowed in a search")


def _is_aggregate(call: soql_ast.FunctionCall, functions: FunctionRegistry) -> bool:
    return functions.kind_of(call.name) is FunctionKind.AGGREGATE


def _positioned(reason: str, source: SoqlSource, pos: Position) -> SoslError:
    offset = source.statement_offset(offset_of(source.text, pos))
    if not source.statement or offset is None:
        return malformed_search(reason)
    return malformed_search(
        reason, statement=source.statement, pos=position_at(source.statement, offset)
    )


def returning_from_parts(
    sobject: str,
    fields: list[str],
    *,
    functions: FunctionRegistry,
    where: str | None = None,
    order_by: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Returning:
    """A RETURNING object from parameterized search's parts (its errors carry no position)."""
    text = f"SELECT {', '.join(fields) if fields else 'Id'} FROM {sobject}"
    if where:
        text += f" WHERE {where}"
    if order_by:
        text += f" ORDER BY {order_by}"
    if limit is not None:
        text += f" LIMIT {limit}"
    if offset is not None:
        text += f" OFFSET {offset}"
    source = SoqlSource(text)
    query = _soql_query(text, source)
    _check_select(query, source, functions)
    return Returning(sobject=query.sobject, pos=None, query=query, source=source)


class _StatementParser:
    def __init__(self, statement: str, masked: str, functions: FunctionRegistry) -> None:
        self.statement = statement
        self.masked = masked
        self.functions = functions
        self.tokens = scan(masked)
        self.index = 1  # tokens[0] is FIND

    # -- cursor ----------------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        if token.type is not TokenType.EOF:
            self.index += 1
        return token

    def at(self, *keywords: str) -> bool:
        return self.at_type(TokenType.IDENT) and self.tok.value in keywords

    def at_type(self, type_: TokenType) -> bool:
        return self.tokens[self.index].type is type_

    def accept(self, keyword: str) -> bool:
        if self.at(keyword):
            self.index += 1
            return True
        return False

    def expect(self, *keywords: str) -> Token:
        if not self.at(*keywords):
            raise self.unexpected()
        return self.advance()

    def expect_type(self, type_: TokenType) -> Token:
        if self.tok.type is not type_:
            raise self.unexpected()
        return self.advance()

    def expect_equals(self) -> None:
        if not self.at_type(TokenType.OP) or self.tok.text != "=":
            raise self.unexpected()
        self.advance()

    def unexpected(self, token: Token | None = None) -> SoslError:
        token = token or self.tok
        if token.type is TokenType.ERROR:
            return malformed_search(str(token.value), statement=self.statement, pos=token.pos)
        text = "<EOF>" if token.type is TokenType.EOF else token.text
        return malformed_search(
            f"unexpected token: '{text}'", statement=self.statement, pos=token.pos
        )

    def offset(self, token: Token) -> int:
        return offset_of(self.masked, token.pos)

    # -- statement -------------------------------------------------------------------------

    def parse(self, term: SearchTerm) -> SoslQuery:
        group = SearchGroup.ALL
        if self.accept("IN"):
            word = self.expect(*(g.value for g in SearchGroup))
            group = SearchGroup(str(word.value))
            self.expect("FIELDS")
        returning: list[Returning] = []
        if self.accept("RETURNING"):
            returning.append(self.returning_object())
            while self.at_type(TokenType.COMMA):
                self.advance()
                returning.append(self.returning_object())
        options = WithOptions()
        while self.accept("WITH"):
            options = self.with_clause(options)
        limit = None
        if self.accept("LIMIT"):
            limit = self.count()
        if self.accept("UPDATE"):
            self.expect(*_UPDATE_MODES)
            while self.at_type(TokenType.COMMA):
                self.advance()
                self.expect(*_UPDATE_MODES)
        if not self.at_type(TokenType.EOF):
            raise self.unexpected()
        return SoslQuery(
            term=term, group=group, returning=tuple(returning), options=options, limit=limit
        )

    def count(self) -> int:
        token = self.tok
        if token.type is not TokenType.INTEGER or token.text.startswith("-"):
            raise self.unexpected()
        self.advance()
        return int(token.text)

    # -- RETURNING -------------------------------------------------------------------------

    def returning_object(self) -> Returning:
        name = self.tok
        if name.type is not TokenType.IDENT or name.value in _NOT_OBJECT:
            raise self.unexpected()
        self.advance()
        name_offset = self.offset(name)
        if not self.at_type(TokenType.LPAREN):
            text = f"SELECT Id FROM {name.text}"
            segment = (len(text) - len(name.text), name_offset, len(name.text))
            source = SoqlSource(text, self.statement, (segment,), name_offset, name.text)
            return Returning(name.text, name.pos, _soql_query(text, source), source)
        self.advance()
        inner_start = self.index
        depth = 0
        while True:
            token = self.tok
            if token.type in (TokenType.EOF, TokenType.ERROR):
                raise self.unexpected()
            if token.type is TokenType.LPAREN:
                depth += 1
            elif token.type is TokenType.RPAREN:
                if depth == 0:
                    break
                depth -= 1
            self.advance()
        closing = self.advance()
        inner = self.tokens[inner_start : self.index - 1]
        if not inner:
            raise self.unexpected(closing)
        return self.returning_query(name, inner, closing)

    def clauses_start(self, inner: list[Token], closing: Token) -> int:
        """Where the clauses of `Name(fields [clauses])` start among its tokens (their count
        when there are none); a SOQL clause SOSL does not have, or USING LISTVIEW, refused."""
        split = len(inner)
        depth = 0
        for position, token in enumerate(inner):
            if token.type is TokenType.LPAREN:
                depth += 1
            elif token.type is TokenType.RPAREN:
                depth -= 1
            elif depth == 0 and token.type is TokenType.IDENT:
                if split == len(inner) and token.value in _OBJECT_CLAUSES:
                    split = position
                following = inner[position + 1] if position + 1 < len(inner) else closing
                is_path = following.type is TokenType.DOT
                if split < len(inner) and token.value in _NOT_IN_SOSL and not is_path:
                    raise self.unexpected(token)
                if token.value == "USING" and following.value == "LISTVIEW":
                    raise UnsupportedQueryFeature("SOSL USING LISTVIEW")
        return split

    def returning_query(self, name: Token, inner: list[Token], closing: Token) -> Returning:
        """`Name(fields [clauses])` as the SOQL `SELECT fields FROM Name clauses`."""
        split = self.clauses_start(inner, closing)
        if split == 0:
            raise self.unexpected(inner[0])
        after_fields = inner[split] if split < len(inner) else closing
        fields_start = self.offset(inner[0])
        fields_end = self.offset(after_fields)
        clauses_end = self.offset(closing)
        fields = self.masked[fields_start:fields_end].rstrip()
        clauses = self.masked[fields_end:clauses_end].rstrip()
        head = f"SELECT {fields} FROM "
        text = f"{head}{name.text} {clauses}"
        segments = (
            (len("SELECT "), fields_start, len(fields)),
            (len(head), self.offset(name), len(name.text)),
            (len(head) + len(name.text) + 1, fields_end, len(clauses)),
            (len(text), clauses_end, 0),  # the end of the SOQL is the ")"
        )
        source = SoqlSource(text, self.statement, segments, fields_end, after_fields.text)
        query = _soql_query(text, source)
        _check_select(query, source, self.functions)
        return Returning(name.text, name.pos, query, source)

    # -- WITH ------------------------------------------------------------------------------

    def string(self) -> str:
        return str(self.expect_type(TokenType.STRING).value)

    def with_clause(self, options: WithOptions) -> WithOptions:
        keyword = self.expect(
            "DIVISION",
            "DATA",
            "SNIPPET",
            "NETWORK",
            "PRICEBOOKID",
            "METADATA",
            "HIGHLIGHT",
            "SPELL_CORRECTION",
            "USER_MODE",
            "SYSTEM_MODE",
        )
        match keyword.value:
            case "DIVISION":
                self.expect_equals()
                return _replace(options, division=self.string())
            case "DATA":
                self.expect("CATEGORY")
                return _replace(options, data_categories=self.data_categories())
            case "SNIPPET":
                length = None
                if self.at_type(TokenType.LPAREN):
                    self.advance()
                    self.expect("TARGET_LENGTH")
                    self.expect_equals()
                    length = self.count()
                    self.expect_type(TokenType.RPAREN)
                return _replace(options, snippet=True, snippet_length=length)
            case "NETWORK":
                if self.accept("IN"):
                    self.expect_type(TokenType.LPAREN)
                    ids = [self.string()]
                    while self.at_type(TokenType.COMMA):
                        self.advance()
                        ids.append(self.string())
                    self.expect_type(TokenType.RPAREN)
                    return _replace(options, network_ids=tuple(ids))
                self.expect_equals()
                return _replace(options, network_ids=(self.string(),))
            case "PRICEBOOKID":
                self.expect_equals()
                return _replace(options, pricebook_id=self.string())
            case "METADATA":
                self.expect_equals()
                value = self.tok
                if self.string().upper() != "LABELS":
                    raise self.unexpected(value)
                return _replace(options, metadata_labels=True)
            case "HIGHLIGHT":
                return _replace(options, highlight=True)
            case "SPELL_CORRECTION":
                self.expect_equals()
                return _replace(
                    options, spell_correction=self.expect("TRUE", "FALSE").value == "TRUE"
                )
            case _:
                return _replace(options, mode=str(keyword.value))

    def data_categories(self) -> tuple[DataCategoryFilter, ...]:
        filters = [self.data_category()]
        while self.accept("AND"):
            filters.append(self.data_category())
        return tuple(filters)

    def data_category(self) -> DataCategoryFilter:
        group_token = self.expect_type(TokenType.IDENT)
        group = group_token.text
        operator = str(self.expect(*_CATEGORY_OPERATORS).value)
        if self.at_type(TokenType.LPAREN):
            self.advance()
            names = [self.expect_type(TokenType.IDENT).text]
            while self.at_type(TokenType.COMMA):
                self.advance()
                names.append(self.expect_type(TokenType.IDENT).text)
            self.expect_type(TokenType.RPAREN)
        else:
            names = [self.expect_type(TokenType.IDENT).text]
        return DataCategoryFilter(group, operator, tuple(names), group_token.pos)


def _replace(options: WithOptions, **changes: object) -> WithOptions:
    return replace(options, **changes)  # type: ignore[arg-type]
