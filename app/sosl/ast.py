"""The SOSL syntax tree: the search term's expression, and the statement around it.

The term is already reduced to words: a `Term` holds the letters-and-digits words of one search
word or quoted phrase (punctuation splits words, as the index splits them), with `*` and `?`
kept inside a word where they are wildcards. The RETURNING field lists, WHERE and ORDER BY are
SOQL, parsed by the SOQL parser into its own syntax tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from app.soql import ast as soql_ast
from app.soql.ast import DataCategoryFilter, Position

WILDCARDS = frozenset("*?")


@dataclass(frozen=True)
class Term:
    """A word or a phrase: several words must appear next to each other, in order.

    `quoted` says it was written in double quotes; an unquoted word with punctuation inside
    (`jdoe@example.com`) is a phrase too.
    """

    words: tuple[str, ...]
    quoted: bool = False

    @property
    def has_wildcard(self) -> bool:
        return any(char in WILDCARDS for word in self.words for char in word)


@dataclass(frozen=True)
class And:
    operands: tuple[TermExpr, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[TermExpr, ...]


@dataclass(frozen=True)
class AndNot:
    """`left AND NOT right`: matches of `left` that do not match `right`."""

    left: TermExpr
    right: TermExpr


TermExpr = Term | And | Or | AndNot


class SearchGroup(StrEnum):
    ALL = "ALL"
    NAME = "NAME"
    EMAIL = "EMAIL"
    PHONE = "PHONE"
    SIDEBAR = "SIDEBAR"


@dataclass(frozen=True)
class SearchTerm:
    """What is inside the braces: its text as written, and its expression (None when nothing
    searchable is left, e.g. only stop words)."""

    text: str
    expr: TermExpr | None


@dataclass(frozen=True)
class SoqlSource:
    """The SOQL text a RETURNING clause was parsed from, and how it maps back to the statement.

    `segments` are (offset in `text`, offset in `statement`, length) for the parts copied from
    the statement (a zero length marks one point, such as the end). A position anywhere else
    (in the added `SELECT` and `FROM <object>`) maps to `anchor`, where the statement has
    `anchor_token`. An empty `statement` (parameterized search) means errors carry no position.
    """

    text: str
    statement: str = ""
    segments: tuple[tuple[int, int, int], ...] = ()
    anchor: int = 0
    anchor_token: str = ""

    def statement_offset(self, offset: int) -> int | None:
        """Where `offset` of `text` is in the statement; None in the added parts."""
        for start, original, length in self.segments:
            if start <= offset < start + length or (length == 0 and offset == start):
                return original + (offset - start)
        return None


@dataclass(frozen=True)
class Returning:
    """One RETURNING object: the SOQL query its field list and clauses stand for.

    `query` is `SELECT <fields> FROM <object> [WHERE ...] [ORDER BY ...] [LIMIT n] [OFFSET n]`
    (`SELECT Id` when no field list was given); `pos` is where the object's name is written.
    """

    sobject: str
    pos: Position | None
    query: soql_ast.Query
    source: SoqlSource


@dataclass(frozen=True)
class WithOptions:
    """The WITH clauses. Those with no meaning in this org are kept for fidelity only."""

    division: str | None = None
    data_categories: tuple[DataCategoryFilter, ...] = ()
    snippet: bool = False
    snippet_length: int | None = None
    network_ids: tuple[str, ...] = ()
    pricebook_id: str | None = None
    metadata_labels: bool = False
    highlight: bool = False
    spell_correction: bool | None = None
    mode: str | None = None


@dataclass(frozen=True)
class SoslQuery:
    term: SearchTerm
    group: SearchGroup = SearchGroup.ALL
    # Empty: every searchable object, returning Id only.
    returning: tuple[Returning, ...] = ()
    options: WithOptions = WithOptions()
    limit: int | None = None
