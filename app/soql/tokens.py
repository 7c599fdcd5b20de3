"""The SOQL tokenizer: query text to a list of tokens with 1-based line and column.

Keywords are not told apart from names here: both are IDENT tokens whose value is the upper-cased
text, and the parser decides by context (`FROM Group` names an object, `GROUP BY` starts a clause).

A lexical error becomes an ERROR token followed by EOF, so the parser reports whichever error
comes first in the text, as Salesforce does; `tokenize` raises it at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from enum import StrEnum

from app.soql.ast import Position
from app.soql.errors import SoqlError, malformed
from app.soql.literals import LiteralError, parse_date, parse_datetime, unescape_string


class TokenType(StrEnum):
    IDENT = "ident"
    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    DATE = "date"
    DATETIME = "datetime"
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    DOT = "."
    COLON = ":"
    STAR = "*"
    OP = "op"
    # Lexed only to be rejected with `unexpected token: '...'`: `;` and "double-quoted" text.
    SYMBOL = "symbol"
    QUOTED = "quoted"
    # A lexical error: value is the reason, pos where Salesforce reports it.
    ERROR = "error"
    EOF = "eof"


TokenValue = str | int | Decimal | date | datetime | None


@dataclass(frozen=True, slots=True)
class Token:
    """One token. `text` is as written; `value` is the upper-cased name for IDENT, the resolved
    value for literals, the operator for OP, the reason for ERROR, otherwise None."""

    type: TokenType
    text: str
    value: TokenValue
    pos: Position


_DIGITS = frozenset("0123456789")
_IDENT_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_PUNCTUATION = {
    "(": TokenType.LPAREN,
    ")": TokenType.RPAREN,
    ",": TokenType.COMMA,
    ".": TokenType.DOT,
    ":": TokenType.COLON,
    "*": TokenType.STAR,
    ";": TokenType.SYMBOL,
}
_OPERATORS = ("<=", ">=", "<>", "!=", "<", ">", "=")
_MAX_INTEGER_DIGITS = 4000

_WHITESPACE_RE = re.compile(r"\s+")
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER_RE = re.compile(r"-?(?:\d+(?:\.\d+)?|\.\d+)")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_STRING_RE = re.compile(r"'((?:[^'\\]|\\.)*)'", re.DOTALL)
_QUOTED_RE = re.compile(r'"[^"\n]*"?')


def tokenize(query: str) -> list[Token]:
    """The tokens of `query`, ending with EOF; raises MALFORMED_QUERY on a lexical error.

    >>> [t.text for t in tokenize("SELECT Id FROM Case WHERE CreatedDate = LAST_N_DAYS:7")]
    ['SELECT', 'Id', 'FROM', 'Case', 'WHERE', 'CreatedDate', '=', 'LAST_N_DAYS', ':', '7', '']
    """
    tokens = scan(query)
    if len(tokens) > 1 and tokens[-2].type is TokenType.ERROR:
        raise lexical_error(query, tokens[-2])
    return tokens


def lexical_error(query: str, token: Token) -> SoqlError:
    return malformed(str(token.value), query=query, pos=token.pos)


def scan(query: str) -> list[Token]:
    """The tokens of `query`; a lexical error ends the list with ERROR, EOF instead of raising."""
    return _Scanner(query).run()


class _Scanner:
    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens: list[Token] = []
        self.line = 1
        self.line_start = 0  # offset of the current line's first character

    def run(self) -> list[Token]:
        query, length = self.query, len(self.query)
        i = 0
        while i < length:
            char = query[i]
            if char.isspace():
                end = _match_end(_WHITESPACE_RE, query, i)
            elif char in _IDENT_START:
                end = _match_end(_IDENT_RE, query, i)
                text = query[i:end]
                self._add(TokenType.IDENT, text, text.upper(), i)
            elif char in _DIGITS or (char in "-." and i + 1 < length and query[i + 1] in _DIGITS):
                end = self._number(i)
            elif char == "'":
                end = self._string(i)
            elif char == '"':
                end = _match_end(_QUOTED_RE, query, i)
                self._add(TokenType.QUOTED, query[i:end], None, i)
            elif char in _PUNCTUATION:
                end = i + 1
                self._add(_PUNCTUATION[char], char, None, i)
            else:
                end = self._operator(i)
            if end < 0:  # an ERROR token was added; nothing after it is read
                self.tokens.append(Token(TokenType.EOF, "", None, self.tokens[-1].pos))
                return self.tokens
            self._count_lines(i, end)
            i = end
        self._add(TokenType.EOF, "", None, length)
        return self.tokens

    def _add(self, type_: TokenType, text: str, value: TokenValue, offset: int) -> None:
        pos = Position(self.line, offset - self.line_start + 1)
        self.tokens.append(Token(type_, text, value, pos))

    def _count_lines(self, start: int, end: int) -> None:
        newlines = self.query.count("\n", start, end)
        if newlines:
            self.line += newlines
            self.line_start = self.query.rfind("\n", start, end) + 1

    def _error(self, reason: str, offset: int) -> int:
        self._add(TokenType.ERROR, "", reason, offset)
        return -1

    def _no_viable(self, offset: int, *, mismatched: str = "") -> int:
        """ANTLR's lexer message; Salesforce reports its 0-based column as the Column too."""
        char = "<EOF>" if offset >= len(self.query) else self.query[offset]
        char = char.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        self._count_lines(self.line_start, offset)
        column = offset - self.line_start
        where = f"line {self.line}:{column}"
        if mismatched:
            reason = f"{where} mismatched character '{char}' expecting {mismatched}"
        else:
            reason = f"{where} no viable alternative at character '{char}'"
        self.tokens.append(Token(TokenType.ERROR, "", reason, Position(self.line, column)))
        return -1

    def _number(self, start: int) -> int:
        """A date, datetime, integer or decimal."""
        query = self.query
        date_end = _match_end(_DATE_RE, query, start)
        if date_end < 0:
            end = _match_end(_NUMBER_RE, query, start)
            text = query[start:end]
            # Python refuses to read an int of more than 4300 digits; as a decimal it still
            # compares (as infinity) and is no count for LIMIT.
            if "." in text or len(text) > _MAX_INTEGER_DIGITS:
                self._add(TokenType.DECIMAL, text, Decimal(text), start)
            else:
                self._add(TokenType.INTEGER, text, int(text), start)
            return end
        type_, end = TokenType.DATE, date_end
        if date_end < len(query) and query[date_end] == "T":
            end, complete = _datetime_end(query, date_end)
            if not complete:
                return self._no_viable(end)
            type_ = TokenType.DATETIME
        text = query[start:end]
        try:
            value = parse_datetime(text) if type_ is TokenType.DATETIME else parse_date(text)
        except LiteralError as exc:
            return self._error(exc.reason, start)
        self._add(type_, text, value, start)
        return end

    def _string(self, start: int) -> int:
        match = _STRING_RE.match(self.query, start)
        if match is None:
            return self._no_viable(len(self.query), mismatched="'''")
        try:
            value = unescape_string(match.group(1))
        except LiteralError as exc:
            return self._error(exc.reason, start)
        self._add(TokenType.STRING, match.group(0), value, start)
        return match.end()

    def _operator(self, start: int) -> int:
        for operator in _OPERATORS:
            if self.query.startswith(operator, start):
                self._add(TokenType.OP, operator, operator, start)
                return start + len(operator)
        if self.query[start] == "!":
            return self._no_viable(start + 1, mismatched="'='")
        return self._no_viable(start)


def _match_end(pattern: re.Pattern[str], query: str, start: int) -> int:
    match = pattern.match(query, start)
    return -1 if match is None else match.end()


def _datetime_end(query: str, start: int) -> tuple[int, bool]:
    """Scan `Thh:mm:ss[.fff](Z|+hh[:]mm)` from `start`: the end offset, and whether it is complete.

    An incomplete literal ends where the first unexpected character is, for the error message.
    """
    i, complete = _scan_shape(query, start, "T##:##:##")
    if not complete:
        return i, False
    if i < len(query) and query[i] == ".":
        digits_start = i + 1
        i = digits_start
        while i < len(query) and query[i] in _DIGITS:
            i += 1
        if i == digits_start:
            return i, False
    if i < len(query) and query[i] == "Z":
        return i + 1, True
    if i >= len(query) or query[i] not in "+-":
        return i, False
    return _scan_shape(query, i + 1, "##:##", optional=":")


def _scan_shape(query: str, start: int, shape: str, optional: str = "") -> tuple[int, bool]:
    """Match `shape` (`#` a digit, any other character itself; those in `optional` may be
    left out) from `start`: where the match ends, and whether all of it matched."""
    i = start
    for expected in shape:
        found = query[i] if i < len(query) else ""
        if found and (found in _DIGITS if expected == "#" else found == expected):
            i += 1
        elif expected not in optional:
            return i, False
    return i, True
