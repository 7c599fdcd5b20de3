"""The search term language: the text inside `FIND {...}` to an expression of words.

- Words separated by spaces must all match (AND); `AND`, `OR` and `AND NOT` combine operands,
  in any letter case, evaluated from left to right (`a OR b c` is `(a OR b) AND c`), and
  parentheses group. `NOT` is an operator only after `AND`; elsewhere it is a word.
- `"quoted phrases"` match words next to each other, in order. So does a word with punctuation
  inside (`jdoe@example.com`, `Acme-Co`): the index splits text on punctuation, so the term does.
- `*` (any run of letters and digits) and `?` (exactly one) are wildcards inside a word; a word
  with a wildcard is matched as written, without stemming.
- A backslash escapes the next character: `\\*` is a literal `*` (punctuation, so it splits
  words), `\\"` a literal quote, `\\}` a literal brace. Unescaped reserved characters other than
  wildcards, quotes and parentheses (`& | ! [ ] ^ ~ : ' + -`) are read as punctuation.
- The term needs two letters or digits at least, wildcards not counted (INVALID_SEARCH).
- Stop words (`the`, `and` in quotes, ...) are ignored, as the index does not keep them.
- Past 4,000 characters the operators are dropped and the words ORed; past 10,000 the search
  matches nothing (Salesforce's documented limits).

LIMITATIONS: no spell correction, synonyms or East Asian bigram tokenization; an unclosed
quote runs to the end of the term instead of failing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from app.sosl.ast import WILDCARDS, And, AndNot, Or, SearchTerm, Term, TermExpr
from app.sosl.errors import malformed_search, term_too_short
from app.sosl.stopwords import STOP_WORDS
from app.storage.backends.text_key import search_word

OPERATORS_DROPPED_AFTER = 4000
NOTHING_FOUND_AFTER = 10000
MIN_TERM_CHARACTERS = 2
# Nesting (parentheses, and each change of operator) past this is refused, not recursed into.
MAX_DEPTH = 32
# Each wildcard word is matched against the text of every searched row: keep them few and short.
MAX_WILDCARD_WORDS = 10
MAX_WILDCARD_WORD_LENGTH = 100


class _Kind(StrEnum):
    OPEN = "("
    CLOSE = ")"
    AND = "AND"
    OR = "OR"
    NOT = "NOT"
    TERM = "term"


@dataclass(frozen=True)
class _Token:
    kind: _Kind
    term: Term | None = None
    text: str = ""


def _words(chars: list[tuple[str, bool]]) -> tuple[str, ...]:
    """Letters, digits and unescaped wildcards make words; everything else separates them."""
    words: list[str] = []
    current: list[str] = []
    for char, escaped in chars:
        if char.isalnum() or (char in WILDCARDS and not escaped):
            current.append(search_word(char))
            continue
        if current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    # Several stars in a row are one; a word of wildcards only matches anything: it is no word.
    words = [re.sub(r"\*+", "*", word) for word in words]
    return tuple(word for word in words if any(char not in WILDCARDS for char in word))


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.index = 0
        self.tokens: list[_Token] = []

    def run(self) -> list[_Token]:
        text = self.text
        while self.index < len(text):
            char = text[self.index]
            if char.isspace():
                self.index += 1
            elif char in "()":
                self.tokens.append(_Token(_Kind(char), text=char))
                self.index += 1
            elif char == '"':
                self._phrase()
            else:
                self._word()
        return self.tokens

    def _read_char(self) -> tuple[str, bool]:
        char = self.text[self.index]
        if char == "\\" and self.index + 1 < len(self.text):
            self.index += 2
            return self.text[self.index - 1], True
        self.index += 1
        return char, False

    def _phrase(self) -> None:
        self.index += 1  # the opening quote
        chars: list[tuple[str, bool]] = []
        while self.index < len(self.text):
            if self.text[self.index] == '"':
                self.index += 1
                break
            chars.append(self._read_char())
        words = _words(chars)
        if words:
            self.tokens.append(_Token(_Kind.TERM, Term(words, quoted=True)))

    def _word(self) -> None:
        start = self.index
        chars: list[tuple[str, bool]] = []
        text = self.text
        while self.index < len(text):
            char = text[self.index]
            if char.isspace() or char in '()"':
                break
            chars.append(self._read_char())
        raw = text[start : self.index]
        upper = raw.upper()
        after_and = bool(self.tokens) and self.tokens[-1].kind is _Kind.AND
        if upper in ("AND", "OR") or (upper == "NOT" and after_and):
            self.tokens.append(_Token(_Kind(upper), text=raw))
            return
        words = _words(chars)
        if words:
            self.tokens.append(_Token(_Kind.TERM, Term(words), text=raw))


class _Parser:
    def __init__(self, term: str, tokens: list[_Token]) -> None:
        self.term = term
        self.tokens = tokens
        self.index = 0

    def _error(self, reason: str) -> Exception:
        return malformed_search(f"{reason} in search term: {self.term.strip()}")

    def _peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def parse(self) -> TermExpr | None:
        if not self.tokens:
            return None
        expr, _ = self._expression(0)
        token = self._peek()
        if token is not None:
            raise self._error(f"unexpected '{token.text}'")
        return expr

    def _expression(self, depth: int) -> tuple[TermExpr, int]:
        """An expression and how deeply its operators nest."""
        if depth > MAX_DEPTH:
            raise self._error("too many nested parentheses and operators")
        result, nesting = self._operand(depth)
        while (token := self._peek()) is not None and token.kind is not _Kind.CLOSE:
            operator = token.kind
            if operator in (_Kind.AND, _Kind.OR):
                self.index += 1
                after = self._peek()
                if operator is _Kind.AND and after is not None and after.kind is _Kind.NOT:
                    self.index += 1
                    operator = _Kind.NOT
            else:
                operator = _Kind.AND  # words next to each other must all match
            operand, operand_nesting = self._operand(depth)
            extended = (operator is _Kind.AND and isinstance(result, And)) or (
                operator is _Kind.OR and isinstance(result, Or)
            )
            nesting = max(nesting if extended else nesting + 1, operand_nesting + 1)
            if depth + nesting > MAX_DEPTH:
                raise self._error("too many nested parentheses and operators")
            result = _combine(operator, result, operand)
        return result, nesting

    def _operand(self, depth: int) -> tuple[TermExpr, int]:
        token = self._peek()
        if token is None:
            raise self._error("missing a word after the last operator")
        if token.kind is _Kind.TERM:
            self.index += 1
            assert token.term is not None
            return token.term, 0
        if token.kind is _Kind.OPEN:
            self.index += 1
            if (inner := self._peek()) is not None and inner.kind is _Kind.CLOSE:
                raise self._error("empty parentheses")
            expr = self._expression(depth + 1)
            closing = self._peek()
            if closing is None or closing.kind is not _Kind.CLOSE:
                raise self._error("unbalanced parentheses")
            self.index += 1
            return expr
        if token.kind is _Kind.CLOSE:
            raise self._error("unbalanced parentheses")
        raise self._error(f"unexpected '{token.text}'")


def _combine(operator: _Kind, left: TermExpr, right: TermExpr) -> TermExpr:
    if operator is _Kind.NOT:
        return AndNot(left, right)
    if operator is _Kind.AND:
        operands = left.operands if isinstance(left, And) else (left,)
        return And((*operands, right))
    operands = left.operands if isinstance(left, Or) else (left,)
    return Or((*operands, right))


def leaves(expr: TermExpr | None) -> list[Term]:
    if expr is None:
        return []
    if isinstance(expr, Term):
        return [expr]
    children = (expr.left, expr.right) if isinstance(expr, AndNot) else expr.operands
    return [leaf for child in children for leaf in leaves(child)]


def _term_without_stop_words(term: Term) -> Term | None:
    if term.has_wildcard:
        return term
    words = list(term.words)
    # Inside a phrase a stop word still holds a place; at its ends it is dropped.
    while words and words[0] in STOP_WORDS:
        words.pop(0)
    while words and words[-1] in STOP_WORDS:
        words.pop()
    return Term(tuple(words), term.quoted) if words else None


def _without_stop_words(expr: TermExpr) -> TermExpr | None:
    if isinstance(expr, Term):
        return _term_without_stop_words(expr)
    if isinstance(expr, AndNot):
        left = _without_stop_words(expr.left)
        right = _without_stop_words(expr.right)
        if left is None or right is None:
            return left
        return AndNot(left, right)
    kept = [op for op in (_without_stop_words(o) for o in expr.operands) if op is not None]
    if not kept:
        return None
    if len(kept) == 1:
        return kept[0]
    return And(tuple(kept)) if isinstance(expr, And) else Or(tuple(kept))


def _check_terms(text: str, terms: list[Term]) -> None:
    """Salesforce's refusals of a term: too few characters besides wildcards, a word with
    wildcards too long, too many such words."""
    literal = sum(1 for term in terms for word in term.words for c in word if c not in WILDCARDS)
    if literal < MIN_TERM_CHARACTERS:
        raise term_too_short(text.strip())
    wildcard_words = [w for t in terms if t.has_wildcard for w in t.words if set(w) & WILDCARDS]
    if any(len(word) > MAX_WILDCARD_WORD_LENGTH for word in wildcard_words):
        raise malformed_search(
            f"a word with wildcards is longer than {MAX_WILDCARD_WORD_LENGTH} characters in "
            f"search term: {text.strip()[:200]}"
        )
    if sum(1 for term in terms if term.has_wildcard) > MAX_WILDCARD_WORDS:
        raise malformed_search(
            f"too many wildcard words (at most {MAX_WILDCARD_WORDS}) in search term: {text.strip()}"
        )


def parse_term(text: str) -> SearchTerm:
    """The expression of a search term (the text inside the braces, escapes still in)."""
    if len(text) > NOTHING_FOUND_AFTER:
        return SearchTerm(text, None)
    tokens = _Lexer(text).run()
    terms = [token.term for token in tokens if token.term is not None]
    _check_terms(text, terms)
    if len(text) > OPERATORS_DROPPED_AFTER:
        expr: TermExpr | None = Or(tuple(terms)) if len(terms) > 1 else terms[0]
    else:
        expr = _Parser(text, tokens).parse()
    return SearchTerm(text, None if expr is None else _without_stop_words(expr))
