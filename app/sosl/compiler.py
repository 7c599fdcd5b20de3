"""Compiles a bound search to one SQLAlchemy SELECT per object, per dialect.

Each object's statement is its RETURNING query compiled by the SOQL compiler (fields, parents,
WHERE, deleted records left out), joined to the index's matches and ordered by relevance, then
by Id so that ties always come out the same way. A RETURNING ORDER BY replaces relevance.

The index query, the one place where the dialects differ:
- SQLite: `<fts> MATCH :query` with an FTS5 query (quoted phrases, AND/OR/NOT, a column filter
  for IN NAME/EMAIL/PHONE/SIDEBAR FIELDS), ranked by the table's bm25.
- PostgreSQL: `<vector> @@ to_tsquery('english', :query)` (`<->` for phrases, weights for the
  field groups), ranked by ts_rank.
The query text is a bound parameter; every word in it is letters and digits only.

Words with wildcards are matched as written (no stemming) on the searched fields' words (`?` one
letter or digit, `*` any run of them): by a regular expression on PostgreSQL, by the Python
function `wildcard_match` on SQLite. Their records rank after those ranked by the index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Float,
    Select,
    String,
    and_,
    bindparam,
    func,
    literal,
    literal_column,
    not_,
    or_,
    select,
)
from sqlalchemy.sql.expression import FromClause, Subquery

from app.soql.compiler import CompiledQuery, compile_query
from app.sosl.ast import And, AndNot, Or, Term, TermExpr
from app.sosl.binder import BoundSearch, BoundTarget
from app.sosl.terms import leaves
from app.storage.ids import normalize_id
from app.storage.search_index import (
    WILDCARD_FUNCTION,
    FieldGroup,
    SearchSpec,
    content_rowids,
    fts_table,
    search_vector,
    ts_query,
)
from app.storage.tables import TableSet

_WEIGHTS = {
    FieldGroup.NAME: "A",
    FieldGroup.EMAIL: "B",
    FieldGroup.PHONE: "C",
    FieldGroup.OTHER: "D",
}


@dataclass(frozen=True)
class CompiledTarget:
    """One object's statement (None: nothing can match), limits applied at execution."""

    compiled: CompiledQuery | None
    target: BoundTarget


@dataclass(frozen=True)
class CompiledSearch:
    bound: BoundSearch
    targets: tuple[CompiledTarget, ...]


# -- the index query text ------------------------------------------------------------------


def fts5_query(expr: TermExpr, columns: tuple[str, ...] | None) -> str:
    """The FTS5 query for an expression of index words (no wildcards)."""
    body = _fts5(expr)
    if columns is None:
        return body
    return "{" + " ".join(columns) + "} : " + body


def _fts5(expr: TermExpr) -> str:
    if isinstance(expr, Term):
        return '"' + " ".join(expr.words) + '"'
    if isinstance(expr, AndNot):
        return f"({_fts5(expr.left)} NOT {_fts5(expr.right)})"
    joiner = " AND " if isinstance(expr, And) else " OR "
    return "(" + joiner.join(_fts5(operand) for operand in expr.operands) + ")"


def tsquery_text(expr: TermExpr, weights: str) -> str:
    """The to_tsquery text for an expression of index words (no wildcards)."""
    if isinstance(expr, Term):
        suffix = f":{weights}" if weights else ""
        words = [f"'{word}'{suffix}" for word in expr.words]
        return words[0] if len(words) == 1 else "(" + " <-> ".join(words) + ")"
    if isinstance(expr, AndNot):
        return f"({tsquery_text(expr.left, weights)} & !{tsquery_text(expr.right, weights)})"
    joiner = " & " if isinstance(expr, And) else " | "
    return "(" + joiner.join(tsquery_text(operand, weights) for operand in expr.operands) + ")"


def _has_wildcard(expr: TermExpr) -> bool:
    return any(term.has_wildcard for term in leaves(expr))


# -- wildcard words ---------------------------------------------------------------------------


def word_pattern(term: Term) -> str:
    """A PostgreSQL regular expression for a word (or phrase) with wildcards, at word
    boundaries. (PostgreSQL's regex engine does not backtrack exponentially; SQLite uses
    `wildcard_match` instead of a regular expression for that reason.)"""
    letter, separator = "[[:alnum:]]", "[^[:alnum:]]+"
    words = []
    for word in term.words:
        parts = []
        for char in word:
            if char == "*":
                parts.append(letter + "*")
            elif char == "?":
                parts.append(letter)
            else:
                parts.append(re.escape(char))
        words.append("".join(parts))
    return "(^|[^[:alnum:]])" + separator.join(words) + "($|[^[:alnum:]])"


# -- per object ------------------------------------------------------------------------------


class _ObjectCompiler:
    def __init__(
        self, search: BoundSearch, target: BoundTarget, tables: TableSet, dialect: str
    ) -> None:
        self.search = search
        self.target = target
        self.spec: SearchSpec = target.spec
        self.tables = tables
        self.dialect = dialect
        self.columns = self.spec.names(search.field_groups)
        weights = search.field_groups
        self.weights = (
            "" if weights is None else "".join(sorted(_WEIGHTS[group] for group in weights))
        )

    def _matches(self, expr: TermExpr, *, ranked: bool) -> Select[Any]:
        """Ids (and, if `ranked`, a rank: lower is better) of the records `expr` matches."""
        if self.dialect == "postgresql":
            base = self.tables[self.spec.sobject]
            vector = search_vector(self.spec, {name: base.c[name] for name in self.spec.names()})
            query = ts_query(bindparam(None, tsquery_text(expr, self.weights)))
            columns: list[ColumnElement[Any]] = [base.c.Id.label("Id")]
            if ranked:
                # Normalization 1 divides by the log of the length: short texts rank higher.
                relevance = func.ts_rank(vector, query, literal_column("1"), type_=Float)
                columns.append((literal(0.0) - relevance).label("rank"))
            return select(*columns).where(vector.op("@@", return_type=Boolean)(query))
        fts = fts_table(self.spec)
        content = content_rowids(self.spec)
        groups = self.search.field_groups
        text = fts5_query(expr, None if groups is None else self.columns)
        columns = [content.c.Id.label("Id")]
        if ranked:
            columns.append(fts.c.rank.label("rank"))
        joined = fts.join(content, content.c.rowid == fts.c.rowid)
        match = fts.c[self.spec.fts_table].op("MATCH", return_type=Boolean)(bindparam(None, text))
        return select(*columns).select_from(joined).where(match)

    def _wildcard(self, term: Term, root: FromClause) -> ColumnElement[bool]:
        matches: list[ColumnElement[bool]] = []
        for name in self.columns:
            column = root.c[name]
            if self.dialect == "postgresql":
                matched = column.regexp_match(word_pattern(term), flags="i")
            else:
                words = bindparam(None, " ".join(term.words), type_=String)
                matched = getattr(func, WILDCARD_FUNCTION)(column, words, type_=Boolean)
            matches.append(and_(column.is_not(None), matched))
        return or_(*matches)

    def _condition(self, expr: TermExpr, root: FromClause) -> ColumnElement[bool]:
        """Exactly the records `expr` matches, for expressions with wildcard words."""
        if not _has_wildcard(expr):
            return root.c.Id.in_(self._matches(expr, ranked=False))
        if isinstance(expr, Term):
            return self._wildcard(expr, root)
        if isinstance(expr, AndNot):
            return and_(self._condition(expr.left, root), not_(self._condition(expr.right, root)))
        parts = [self._condition(operand, root) for operand in expr.operands]
        return and_(*parts) if isinstance(expr, And) else or_(*parts)

    def compile(self) -> CompiledTarget:
        expr = self.search.term.expr
        if expr is None or not self.columns:
            return CompiledTarget(None, self.target)
        bound = replace(self.target.query, limit=None, offset=None)
        compiled = compile_query(bound, self.tables, include_deleted=False)
        statement = compiled.statement
        root_id = statement.selected_columns[0]
        root: FromClause = root_id.table
        rank: ColumnElement[Any] | None
        if not _has_wildcard(expr):
            ranked: Subquery = self._matches(expr, ranked=True).subquery("sosl_match")
            statement = statement.join(ranked, ranked.c.Id == root.c.Id)
            rank = ranked.c.rank
        else:
            statement = statement.where(self._condition(expr, root))
            plain = [term for term in leaves(expr) if not term.has_wildcard]
            rank = None
            if plain:
                either: TermExpr = plain[0] if len(plain) == 1 else Or(tuple(plain))
                ranked = self._matches(either, ranked=True).subquery("sosl_match")
                statement = statement.outerjoin(ranked, ranked.c.Id == root.c.Id)
                rank = func.coalesce(ranked.c.rank, 0.0)
        statement = statement.where(*self._filters(root))
        if not self.target.query.order_by:
            keys = [root.c.Id] if rank is None else [rank, root.c.Id]
            statement = statement.order_by(None).order_by(*keys)
        return CompiledTarget(replace(compiled, statement=statement), self.target)

    def _filters(self, root: FromClause) -> list[ColumnElement[bool]]:
        """WITH clauses that filter this object."""
        options = self.search.options
        filters: list[ColumnElement[bool]] = []
        if options.pricebook_id is not None and self.spec.sobject == "Product2":
            # Only products with an entry in that price book (an unknown id: none).
            entries = self.tables["PricebookEntry"]
            in_book = select(entries.c.Product2Id).where(
                entries.c.Pricebook2Id == (normalize_id(options.pricebook_id) or ""),
                entries.c.IsDeleted.is_(False),
            )
            filters.append(root.c.Id.in_(in_book))
        return filters


def compile_search(search: BoundSearch, tables: TableSet, dialect: str) -> CompiledSearch:
    """One statement per RETURNING object, for `dialect` ("sqlite" or "postgresql")."""
    return CompiledSearch(
        bound=search,
        targets=tuple(
            _ObjectCompiler(search, target, tables, dialect).compile() for target in search.targets
        ),
    )
