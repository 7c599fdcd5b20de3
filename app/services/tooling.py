"""The Tooling API's reads: its objects (app/metadata/tooling_objects/) queried, described and
retrieved over rows computed from the org's schema (app.services.tooling_rows).

The rows live in a private in-memory database per org schema, built on first use: the SOQL
parser, binder, compiler and shaping are the REST API's own, so a Tooling query means what the
same query means anywhere else, plus the rules Salesforce keeps for its virtual entities
(EntityDefinition and FieldDefinition take no aggregates, OR, NOT or INCLUDES, and
FieldDefinition only a query that filters on its entity)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from sqlalchemy import Connection, Engine, select

from app.errors import NotFound, SalesforceError
from app.metadata.model import SObjectDef
from app.metadata.registry import SchemaRegistry
from app.metadata.tooling import tooling_registry
from app.metadata.values import to_json
from app.services.context import OrgContext
from app.services.cursors import CursorStore
from app.services.query import checked_text, query_columns, query_more, run_query
from app.services.records import requested_fields
from app.services.tooling_rows import tooling_rows
from app.soql import ast
from app.soql.parser import parse
from app.storage.database import memory_database
from app.storage.tables import TableSet

TOOLING_PATH = "/tooling"
# Objects whose rows Salesforce computes rather than stores, and the operations its SOQL
# refuses on them (Tooling API guide, "SOQL Operation Limitations"). The messages are the
# guide's; the error code is the one a recorded refusal of FieldDefinition carries [belief:
# the guide names no code for the others].
VIRTUAL_ENTITIES = frozenset({"entitydefinition", "fielddefinition"})
UNSUPPORTED = "EXTERNAL_OBJECT_UNSUPPORTED_EXCEPTION"
NO_AGGREGATES = (
    "The requested operation is not yet supported by this SObject storage type, contact "
    "salesforce.com support for more information."
)
NO_DISJUNCTIONS = "Disjunctions not supported"
ONLY_EQUALS = "Only equals comparisons permitted"
NO_INCLUDES = "Unsupported filter type"
# A FieldDefinition query must filter on one of these ("a reified column").
REIFIED_FILTERS = frozenset({"entitydefinitionid", "entitydefinition", "durableid"})
REIFIED_FILTER_REQUIRED = "FieldDefinition: a filter on a reified column is required."


@cache
def tooling_tables() -> TableSet:
    """One set of tables for the life of the process: table identity is the compiled-statement
    cache's key."""
    return TableSet(tooling_registry())


@dataclass
class _Rows:
    """One org schema's Tooling rows, in a database whose one connection its users share."""

    engine: Engine
    lock: threading.Lock


_built: weakref.WeakKeyDictionary[SchemaRegistry, _Rows] = weakref.WeakKeyDictionary()
_building = threading.Lock()


def _rows_of(registry: SchemaRegistry) -> _Rows:
    with _building:
        found = _built.get(registry)
        if found is None:
            tables = tooling_tables()
            engine = memory_database(tables, tooling_rows(registry, tables))
            found = _built[registry] = _Rows(engine, threading.Lock())
        return found


@contextmanager
def tooling_connection(ctx: OrgContext) -> Iterator[Connection]:
    """A connection to the Tooling rows of the org `ctx` serves, held alone while in use."""
    rows = _rows_of(ctx.registry)
    with rows.lock, rows.engine.connect() as connection:
        yield connection


def tooling_context(ctx: OrgContext) -> OrgContext:
    """`ctx` seen through the Tooling API: its objects, and URLs under /tooling."""
    tables = tooling_tables()
    return replace(
        ctx, registry=tables.registry, tables=tables, base_path=ctx.base_path + TOOLING_PATH
    )


def _refuse(message: str) -> SalesforceError:
    return SalesforceError(message, error_code=UNSUPPORTED)


def _walk(condition: ast.Condition | None) -> Iterator[ast.Condition]:
    if condition is None:
        return
    yield condition
    if isinstance(condition, ast.And | ast.Or):
        for operand in condition.operands:
            yield from _walk(operand)
    elif isinstance(condition, ast.Not):
        yield from _walk(condition.operand)


def _check_condition(condition: ast.Condition) -> None:
    if isinstance(condition, ast.Or):
        raise _refuse(NO_DISJUNCTIONS)
    if isinstance(condition, ast.Not):
        raise _refuse(ONLY_EQUALS)
    if isinstance(condition, ast.Comparison) and condition.op is ast.Operator.NE:
        raise _refuse(ONLY_EQUALS)
    if isinstance(condition, ast.InCondition) and condition.negated:
        raise _refuse(ONLY_EQUALS)
    if isinstance(condition, ast.IncludesCondition):
        raise _refuse(NO_INCLUDES)


def _filters_on_entity(query: ast.Query) -> bool:
    for condition in _walk(query.where):
        left = getattr(condition, "left", None)
        if isinstance(left, ast.FieldPath):
            parts = [part.lower() for part in left.parts]
            if parts[0] == "fielddefinition" and len(parts) > 1:
                parts = parts[1:]
            if parts[0] in REIFIED_FILTERS:
                return True
    return False


def check_virtual_entity_rules(query: ast.Query) -> None:
    """Salesforce's refusals of what EntityDefinition and FieldDefinition queries cannot do."""
    if query.sobject.lower() not in VIRTUAL_ENTITIES:
        return
    aggregated = any(
        isinstance(item, ast.SelectField)
        and isinstance(item.expr, ast.FunctionCall)
        and item.expr.name.lower() in {"count", "count_distinct", "sum", "avg", "min", "max"}
        for item in query.select
    )
    if aggregated or query.group_by or query.having is not None:
        raise _refuse(NO_AGGREGATES)
    for condition in _walk(query.where):
        _check_condition(condition)
    if query.sobject.lower() == "fielddefinition" and not _filters_on_entity(query):
        raise _refuse(REIFIED_FILTER_REQUIRED)


def stored_sobject(ctx: OrgContext, sobject: SObjectDef) -> SObjectDef | None:
    """The org's own object behind a Tooling object whose records are the sandbox's
    (StaticResource); None for one whose rows are computed."""
    return ctx.registry.get(sobject.name) if sobject.metadata_component else None


def stored_context(ctx: OrgContext) -> OrgContext:
    """`ctx` reading the sandbox's own records, their URLs under /tooling."""
    return replace(ctx, base_path=ctx.base_path + TOOLING_PATH)


def _queries_stored(ctx: OrgContext, query: ast.Query) -> bool:
    queried = tooling_registry().get(query.sobject)
    return queried is not None and stored_sobject(ctx, queried) is not None


def run_tooling_query(
    conn: Connection,
    ctx: OrgContext,
    cursors: CursorStore,
    text: str | None,
    *,
    include_deleted: bool,
    batch_size: int,
) -> dict[str, Any]:
    """`/tooling/query`: the first batch, its locator under /tooling/query. A query of a
    metadata object reads the sandbox's records through `conn`."""
    text = checked_text(text)
    query = parse(text)
    check_virtual_entity_rules(query)
    if _queries_stored(ctx, query):
        return run_query(
            conn,
            stored_context(ctx),
            cursors,
            text,
            include_deleted=include_deleted,
            batch_size=batch_size,
        )
    tooling = tooling_context(ctx)
    with tooling_connection(ctx) as connection:
        return run_query(
            connection,
            tooling,
            cursors,
            text,
            include_deleted=include_deleted,
            batch_size=batch_size,
        )


def tooling_query_columns(
    ctx: OrgContext, text: str | None, *, include_deleted: bool
) -> dict[str, Any]:
    """`/tooling/query?columns=true`: the query's columns, checked as running it would be."""
    text = checked_text(text)
    query = parse(text)
    check_virtual_entity_rules(query)
    queried = stored_context(ctx) if _queries_stored(ctx, query) else tooling_context(ctx)
    return query_columns(queried, text, include_deleted=include_deleted)


def tooling_query_more(ctx: OrgContext, cursors: CursorStore, locator: str) -> dict[str, Any]:
    def context_for(text: str) -> OrgContext:
        return stored_context(ctx) if _queries_stored(ctx, parse(text)) else tooling_context(ctx)

    return query_more(tooling_context(ctx), cursors, locator, context_for)


def get_tooling_record(
    ctx: OrgContext, sobject: SObjectDef, key: str, field_names: list[str] | None
) -> dict[str, Any]:
    """`/tooling/sobjects/{T}/{id}`: the row its id (or durable id) names, all its fields or
    the ones asked for."""
    tooling = tooling_context(ctx)
    table = tooling.tables[sobject.name]
    fields = requested_fields(sobject, field_names)
    with tooling_connection(ctx) as connection:
        row = (
            connection.execute(select(table).where(table.c[sobject.key_field] == key))
            .mappings()
            .first()
        )
    if row is None:
        raise NotFound("The requested resource does not exist")
    record: dict[str, Any] = {
        "attributes": {
            "type": sobject.name,
            "url": tooling.record_url(sobject, row[sobject.key_field]),
        }
    }
    for field in fields:
        record[field.name] = to_json(field, row[field.name])
    return record
