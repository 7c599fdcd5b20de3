"""Binds a parsed search to the schema: each RETURNING object must exist and be searchable, and
its field list, WHERE and ORDER BY bind as SOQL does (same errors, positioned in the search),
against what the caller names in a SearchContext: the org's calendar (date literals), the app's
functions and the limits, none of them defaulted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.metadata.model import SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql.bind_context import Limits
from app.soql.binder import bind as bind_soql
from app.soql.bound import BoundQuery
from app.soql.data_categories import bind_categories, is_article
from app.soql.date_literals import OrgCalendar
from app.soql.errors import SoqlError
from app.soql.function_registry import FunctionRegistry
from app.sosl.ast import Returning, SearchGroup, SearchTerm, SoslQuery, WithOptions
from app.sosl.errors import SoslError, from_soql, malformed_search
from app.sosl.parser import returning_from_parts
from app.storage.search_index import FieldGroup, SearchSpec, search_spec

# Salesforce's cap on the rows of one search, and its default overall LIMIT.
MAX_SEARCH_ROWS = 2000

GROUP_FIELDS: dict[SearchGroup, frozenset[FieldGroup] | None] = {
    SearchGroup.ALL: None,
    SearchGroup.NAME: frozenset({FieldGroup.NAME}),
    SearchGroup.EMAIL: frozenset({FieldGroup.EMAIL}),
    SearchGroup.PHONE: frozenset({FieldGroup.PHONE}),
    # The fields sidebar search shows: names, e-mail addresses and phone numbers.
    SearchGroup.SIDEBAR: frozenset({FieldGroup.NAME, FieldGroup.EMAIL, FieldGroup.PHONE}),
}


@dataclass(frozen=True)
class SearchContext:
    """What a search binds against: the org's schema, the calendar its date literals resolve
    against (the org's, as its queries'), the app's SOQL functions and the limits."""

    registry: SchemaRegistry
    calendar: OrgCalendar
    functions: FunctionRegistry
    limits: Limits


@dataclass(frozen=True)
class BoundTarget:
    """One object to search: where its index is, and the SOQL query shaping its records."""

    sobject: SObjectDef
    spec: SearchSpec
    query: BoundQuery

    @property
    def limit(self) -> int:
        limit = self.query.limit
        return MAX_SEARCH_ROWS if limit is None else min(limit, MAX_SEARCH_ROWS)

    @property
    def offset(self) -> int:
        return self.query.offset or 0


@dataclass(frozen=True)
class BoundSearch:
    term: SearchTerm
    group: SearchGroup
    targets: tuple[BoundTarget, ...]
    options: WithOptions
    limit: int

    @property
    def field_groups(self) -> frozenset[FieldGroup] | None:
        return GROUP_FIELDS[self.group]


def _error_at(returning: Returning, code: str, reason: str) -> SoslError:
    """An error about the object itself, at its name in the statement when there is one."""
    statement = returning.source.statement
    if statement and returning.pos is not None:
        return SoslError(code, reason, statement=statement, pos=returning.pos)
    return SoslError(code, reason)


def _target(ctx: SearchContext, returning: Returning, options: WithOptions) -> BoundTarget:
    try:
        bound = bind_soql(
            ctx.registry,
            returning.source.text,
            returning.query,
            calendar=ctx.calendar,
            functions=ctx.functions,
            limits=ctx.limits,
        )
    except SoqlError as error:
        raise from_soql(error, returning.source) from None
    spec = search_spec(bound.sobject)
    if spec is None:
        reason = f"entity type {bound.sobject.name} does not support search"
        raise _error_at(returning, "INVALID_TYPE", reason)
    if options.data_categories and is_article(bound.sobject):
        # WITH DATA CATEGORY filters the articles among the objects searched, not the others.
        try:
            categories = bind_categories(ctx.registry, bound.sobject, options.data_categories, "")
        except SoqlError as error:
            raise malformed_search(error.reason) from None
        bound = replace(bound, data_categories=categories)
    return BoundTarget(sobject=bound.sobject, spec=spec, query=bound)


def bind_search(ctx: SearchContext, query: SoslQuery) -> BoundSearch:
    """Resolve every RETURNING object (every searchable object when there is no RETURNING)."""
    returning = query.returning or tuple(
        returning_from_parts(sobject.name, [], functions=ctx.functions)
        for sobject in ctx.registry
        if search_spec(sobject) is not None
    )
    targets: list[BoundTarget] = []
    seen: set[str] = set()
    for item in returning:
        target = _target(ctx, item, query.options)
        if target.sobject.name in seen:
            reason = f"duplicate entity: {target.sobject.name}"
            raise _error_at(item, "MALFORMED_SEARCH", reason)
        seen.add(target.sobject.name)
        targets.append(target)
    limit = MAX_SEARCH_ROWS if query.limit is None else min(query.limit, MAX_SEARCH_ROWS)
    return BoundSearch(
        term=query.term,
        group=query.group,
        targets=tuple(targets),
        options=query.options,
        limit=limit,
    )
