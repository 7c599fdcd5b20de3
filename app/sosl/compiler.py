"""Compiles a bound search to one SQLAlchemy SELECT per object, on any back end.

Each object's statement is its RETURNING query compiled by the SOQL compiler (fields, parents,
WHERE, deleted records left out), joined to the index's matches and ordered by relevance, then
by Id so that ties always come out the same way. A RETURNING ORDER BY replaces relevance.

The index query is the back end's (app.storage.backends): its query language spells the search
expression (`match_text`), and it selects the matching Ids and their rank (lower is better):
- SQLite: `<fts> MATCH :query` with an FTS5 query (quoted phrases, AND/OR/NOT, a column filter
  for IN NAME/EMAIL/PHONE/SIDEBAR FIELDS), ranked by the table's bm25.
- PostgreSQL: `<vector> @@ to_tsquery('english', :query)` (`<->` for phrases, weights for the
  field groups), ranked by ts_rank.
The query text is a bound parameter; every word in it is letters and digits only.

Words with wildcards are matched as written (no stemming) on the searched fields' words (`?` one
letter or digit, `*` any run of them), as the back end matches them: by a regular expression on
PostgreSQL, by the Python function `wildcard_match` on SQLite. Their records rank after those
ranked by the index.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, not_, or_, select
from sqlalchemy.sql.expression import FromClause, Subquery

from app.soql.compiler import CompiledQuery, compile_query
from app.sosl.ast import And, AndNot, Or, Term, TermExpr
from app.sosl.binder import BoundSearch, BoundTarget
from app.sosl.terms import leaves
from app.storage.backends import Backend, MatchSyntax, backend_for
from app.storage.ids import normalize_id
from app.storage.search_index import SearchSpec
from app.storage.tables import TableSet


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


def match_text(expr: TermExpr, syntax: MatchSyntax) -> str:
    """The index query for an expression of index words (no wildcards), in `syntax`."""
    return syntax.query(_spell(expr, syntax))


def _spell(expr: TermExpr, syntax: MatchSyntax) -> str:
    if isinstance(expr, Term):
        return syntax.phrase(expr.words)
    if isinstance(expr, AndNot):
        return syntax.but_not(_spell(expr.left, syntax), _spell(expr.right, syntax))
    parts = [_spell(operand, syntax) for operand in expr.operands]
    return syntax.all_of(parts) if isinstance(expr, And) else syntax.any_of(parts)


def _has_wildcard(expr: TermExpr) -> bool:
    return any(term.has_wildcard for term in leaves(expr))


# -- per object ------------------------------------------------------------------------------


class _ObjectCompiler:
    def __init__(
        self, search: BoundSearch, target: BoundTarget, tables: TableSet, backend: Backend
    ) -> None:
        self.search = search
        self.target = target
        self.spec: SearchSpec = target.spec
        self.tables = tables
        self.backend = backend
        self.columns = self.spec.names(search.field_groups)
        self.syntax = backend.match_syntax(self.spec, search.field_groups)

    def _matches(self, expr: TermExpr, *, ranked: bool) -> Select[Any]:
        """Ids (and, if `ranked`, a rank: lower is better) of the records `expr` matches."""
        table = self.tables[self.spec.sobject]
        text = match_text(expr, self.syntax)
        return self.backend.matches(self.spec, table, text, ranked)

    def _wildcard(self, term: Term, root: FromClause) -> ColumnElement[bool]:
        matches: list[ColumnElement[bool]] = []
        for name in self.columns:
            column = root.c[name]
            matched = self.backend.wildcard(column, term.words)
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
    """One statement per RETURNING object, for the back end of `dialect` (a dialect's name)."""
    backend = backend_for(dialect)
    return CompiledSearch(
        bound=search,
        targets=tuple(
            _ObjectCompiler(search, target, tables, backend).compile() for target in search.targets
        ),
    )
