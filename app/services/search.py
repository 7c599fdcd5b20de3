"""Runs SOSL for /search and /parameterizedSearch: parse, bind and compile (cached per dialect),
execute each object's statement in RETURNING order within the overall LIMIT, shape the records.
A search binds as the org's queries do: its date literals against the org's calendar (a
sandbox's pinned clock included), its functions from the app's registry.

Salesforce's LIMIT semantics: an object's own LIMIT caps its records, and the overall LIMIT
(default and maximum 2000) is used up object by object in RETURNING order, so objects late in
the list get what earlier ones left.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table, select

from app.errors import NotFound
from app.metadata.registry import SchemaRegistry
from app.services.compiled_cache import keep_compiled
from app.services.context import OrgContext
from app.services.json_body import JsonBody, parse_object
from app.soql.ast import DataCategoryFilter
from app.soql.bind_context import LIMITS
from app.soql.date_literals import OrgCalendar
from app.soql.function_registry import FunctionRegistry
from app.sosl.ast import SearchGroup, SoslQuery, WithOptions
from app.sosl.binder import MAX_SEARCH_ROWS, SearchContext, bind_search
from app.sosl.compiler import CompiledSearch, compile_search
from app.sosl.errors import malformed_search, no_search_term
from app.sosl.parser import parse, returning_from_parts
from app.sosl.results import TextReader, labels_metadata, shape_target
from app.sosl.terms import parse_term
from app.storage.tables import TableSet

# API versions before this answer a bare array; from it on, {"searchRecords": [...]}.
SEARCH_RECORDS_SINCE = 36


@keep_compiled(lambda compiled: len(compiled.targets))
def prepare(
    registry: SchemaRegistry,
    tables: TableSet,
    dialect: str,
    text: str,
    calendar: OrgCalendar,
    functions: FunctionRegistry,
) -> CompiledSearch:
    """Parse, bind and compile a SOSL statement once per text, dialect, calendar (date
    literals resolve against the org's day, zone and fiscal year) and function registry."""
    search = SearchContext(registry, calendar, functions, LIMITS)
    return compile_search(bind_search(search, parse(text, functions)), tables, dialect)


@keep_compiled(lambda compiled: len(compiled.targets))
def prepare_query(
    registry: SchemaRegistry,
    tables: TableSet,
    dialect: str,
    query: SoslQuery,
    calendar: OrgCalendar,
    functions: FunctionRegistry,
) -> CompiledSearch:
    """Bind and compile a search built from parameters (its tree is the cache key)."""
    search = SearchContext(registry, calendar, functions, LIMITS)
    return compile_search(bind_search(search, query), tables, dialect)


def _prepared(conn: Connection, ctx: OrgContext, query: str | SoslQuery) -> CompiledSearch:
    """`query` prepared for the org `ctx` is."""
    calendar, functions = ctx.org_calendar, ctx.functions
    dialect = conn.dialect.name
    if isinstance(query, str):
        return prepare(ctx.registry, ctx.tables, dialect, query, calendar, functions)
    return prepare_query(ctx.registry, ctx.tables, dialect, query, calendar, functions)


def api_version(ctx: OrgContext) -> int:
    """The major API version of the request (`/services/data/v59.0` -> 59)."""
    return int(float(ctx.base_path.rsplit("/v", 1)[-1]))


def execute(
    conn: Connection, compiled: CompiledSearch, tables: TableSet, base_path: str, zone: str
) -> list[dict[str, Any]]:
    """The records of every object, in RETURNING order, within the overall LIMIT; FORMAT()
    writes datetimes in `zone`."""
    remaining = compiled.bound.limit
    records: list[dict[str, Any]] = []
    for target in compiled.targets:
        limit = min(target.target.limit, remaining)
        if target.compiled is None or limit <= 0:
            continue
        statement = target.compiled.statement.limit(limit).offset(target.target.offset)
        rows = conn.execute(statement).all()
        reader = _text_reader(conn, tables[target.target.sobject.name])
        records.extend(shape_target(compiled, target, rows, base_path, zone, reader))
        remaining -= len(rows)
    return records


def _text_reader(conn: Connection, table: Table) -> TextReader:
    """Reads fields of the table's records by Id (a snippet's other fields)."""

    def read(fields: Sequence[str], ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        columns = [table.c[name] for name in fields]
        found = conn.execute(select(table.c.Id, *columns).where(table.c.Id.in_(list(ids))))
        return {str(row[0]): dict(zip(fields, row[1:], strict=True)) for row in found}

    return read


def respond(ctx: OrgContext, compiled: CompiledSearch, records: list[dict[str, Any]]) -> Any:
    if api_version(ctx) < SEARCH_RECORDS_SINCE:
        return records
    body: dict[str, Any] = {"searchRecords": records}
    if compiled.bound.options.metadata_labels:
        body["metadata"] = labels_metadata(compiled)
    return body


def run_search(conn: Connection, ctx: OrgContext, text: str | None) -> Any:
    """`GET /search?q=<SOSL>`: the records, shaped for the request's API version."""
    if text is None or not text.strip():
        raise no_search_term()
    compiled = _prepared(conn, ctx, text)
    return respond(
        ctx, compiled, execute(conn, compiled, ctx.tables, ctx.base_path, ctx.org_calendar.zone)
    )


# -- parameterized search ------------------------------------------------------------------


def _integer(name: str, value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise malformed_search(f"Invalid value for parameter '{name}': {value}")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise malformed_search(f"Invalid value for parameter '{name}': {value}") from None
    if number < 0:
        raise malformed_search(f"Invalid value for parameter '{name}': {value}")
    return min(number, MAX_SEARCH_ROWS)


def _boolean(name: str, value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise malformed_search(f"Invalid value for parameter '{name}': {value}")
    return text == "true"


def _string(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise malformed_search(f"Invalid value for parameter '{name}': {value}")
    return value


def _names(name: str, value: Any) -> list[str]:
    """A field list: `id,name` in a URL, ["Id", "Name"] in a body."""
    if value is None:
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        items = value
    else:
        raise malformed_search(f"Invalid value for parameter '{name}': {value}")
    return [item.strip() for item in items if item.strip()]


def _group(value: Any) -> SearchGroup:
    text = _string("in", value)
    if text is None or not text.strip():
        return SearchGroup.ALL
    try:
        return SearchGroup(text.strip().upper())
    except ValueError:
        raise malformed_search(f"Invalid value for parameter 'in': {text}") from None


def _data_category(text: str) -> DataCategoryFilter:
    """`Group__c below Category__c` (the GET form)."""
    parts = text.split()
    if len(parts) != 3:
        raise malformed_search(f"Invalid value for parameter 'dataCategory': {text}")
    return DataCategoryFilter(parts[0], parts[1].upper(), (parts[2],))


def _data_categories(value: Any) -> tuple[DataCategoryFilter, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise malformed_search(f"Invalid value for parameter 'dataCategories': {value}")
    filters = []
    for item in value:
        if not isinstance(item, dict):
            raise malformed_search(f"Invalid value for parameter 'dataCategories': {item}")
        group = _string("groupName", item.get("groupName")) or ""
        operator = (_string("operator", item.get("operator")) or "").upper()
        names = tuple(_names("categories", item.get("categories")))
        filters.append(DataCategoryFilter(group, operator, names))
    return tuple(filters)


def _search_query(
    params: dict[str, Any],
    sobjects: list[dict[str, Any]],
    categories: tuple[DataCategoryFilter, ...],
    functions: FunctionRegistry,
) -> SoslQuery:
    """The search a parameterized request describes: its term, objects, limits and options
    (`functions`: the app's, which tell what a field list may not call)."""
    q = params.get("q")
    if not isinstance(q, str) or not q.strip():
        raise malformed_search("Missing or empty search term: the 'q' parameter is required")
    term = parse_term(q)
    default_fields = _names("fields", params.get("fields"))
    default_limit = _integer("defaultLimit", params.get("defaultLimit"))
    offset = _integer("offset", params.get("offset"))
    returning = []
    for spec in sobjects:
        name = spec.get("name")
        if not isinstance(name, str) or not name.strip():
            raise malformed_search(f"Invalid sobject name: {name}")
        limit = _integer(f"{name}.limit", spec.get("limit"))
        returning.append(
            returning_from_parts(
                name.strip(),
                _names(f"{name}.fields", spec.get("fields")) or default_fields,
                functions=functions,
                where=_string(f"{name}.where", spec.get("where")),
                order_by=_string(f"{name}.orderBy", spec.get("orderBy")),
                limit=default_limit if limit is None else limit,
                offset=offset,
            )
        )
    snippet = params.get("snippet")
    options = WithOptions(
        division=_string("division", params.get("division")),
        data_categories=categories,
        snippet=snippet not in (None, False, ""),
        snippet_length=_integer("snippet", snippet) if not isinstance(snippet, bool) else None,
        network_ids=tuple(_names("netWorkIds", params.get("netWorkIds"))),
        pricebook_id=_string("pricebookId", params.get("pricebookId")),
        metadata_labels=str(params.get("metadata") or "").upper() == "LABELS",
        highlight=bool(_boolean("highlights", params.get("highlights"))),
        spell_correction=_boolean("spellCorrection", params.get("spellCorrection")),
    )
    return SoslQuery(
        term=term,
        group=_group(params.get("in")),
        returning=tuple(returning),
        options=options,
        limit=_integer("overallLimit", params.get("overallLimit")),
    )


def _run_parameterized(conn: Connection, ctx: OrgContext, query: SoslQuery) -> Any:
    if api_version(ctx) < SEARCH_RECORDS_SINCE:
        raise NotFound()  # parameterized search arrived in API 36.0
    compiled = _prepared(conn, ctx, query)
    return respond(
        ctx, compiled, execute(conn, compiled, ctx.tables, ctx.base_path, ctx.org_calendar.zone)
    )


def run_parameterized_get(conn: Connection, ctx: OrgContext, params: list[tuple[str, str]]) -> Any:
    """`GET /parameterizedSearch?q=...&sobject=...&<Object>.fields=...`."""
    single: dict[str, Any] = {}
    for key, value in params:
        single.setdefault(key, value)
    names = [value for key, value in params if key.lower() == "sobject"]
    sobjects = []
    for name in names:
        spec: dict[str, Any] = {"name": name}
        for suffix in ("fields", "where", "orderBy", "limit"):
            wanted = f"{name}.{suffix}".lower()
            for key, value in params:
                if key.lower() == wanted:
                    spec[suffix] = value
                    break
        sobjects.append(spec)
    category = single.get("dataCategory")
    categories = (_data_category(category),) if category else ()
    return _run_parameterized(conn, ctx, _search_query(single, sobjects, categories, ctx.functions))


def run_parameterized_post(conn: Connection, ctx: OrgContext, raw: bytes) -> Any:
    """`POST /parameterizedSearch` with the search as a JSON body."""
    if api_version(ctx) < SEARCH_RECORDS_SINCE:
        raise NotFound()
    body: JsonBody = parse_object(raw, "searchrequest")
    data = dict(body.data)
    sobjects = data.get("sobjects") or []
    if not isinstance(sobjects, list) or not all(isinstance(s, dict) for s in sobjects):
        raise malformed_search(f"Invalid value for parameter 'sobjects': {sobjects}")
    categories = _data_categories(data.get("dataCategories"))
    return _run_parameterized(conn, ctx, _search_query(data, sobjects, categories, ctx.functions))
