"""The full-text search index behind SOSL: which fields each object indexes, and its DDL.

The index is schema, created beside the data tables (`recreate_data_tables`) and kept in step by
the database itself, so seeding, API writes and copies of a database all stay searchable without
any service doing anything:

- SQLite: one FTS5 external-content table per searchable object (`sobj_<name>_fts`) over its
  searchable fields, porter-stemmed, kept in sync by triggers on the `sobj_` table; ranking is
  bm25 with per-field weights stored as the table's `rank` configuration.
- PostgreSQL: one GIN expression index per searchable object over a weighted tsvector (english
  stemming); queries repeat the same expression (`search_vector`) so the planner can use it.

Both backends index the same words: text is split on every character that is not a letter or
digit (PostgreSQL's parser would keep e-mail addresses and hyphenated words whole otherwise).

Which fields are searched, as Salesforce classifies them: text fields (string, textarea, email,
phone, url) that are not system fields. Picklists are left out: Salesforce search does not
match picklist values (a search for "Closed" does not find every closed case), and SOSL
snippets and highlights skip them for the same reason. Numbers, dates, checkboxes and ids are
never searched.

SQLite caveat: an external-content index addresses rows by rowid, which `VACUUM` may renumber
on tables without an INTEGER PRIMARY KEY; after a VACUUM run `rebuild_search_index`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    Column,
    ColumnElement,
    Connection,
    Index,
    MetaData,
    Table,
    Text,
    cast,
    column,
    func,
    literal_column,
    select,
    table,
    text,
)
from sqlalchemy.sql.expression import TableClause

from app.metadata.model import FieldType, SObjectDef
from app.storage.backends.python_functions import wildcard_match
from app.storage.backends.sqlite import WILDCARD_FUNCTION
from app.storage.tables import TableSet, table_name

# The wildcard matcher SQLite runs, and its SQL name, defined with the back end.
__all__ = ["WILDCARD_FUNCTION", "wildcard_match"]


class FieldGroup(StrEnum):
    """A SOSL search group a field belongs to; the value is its PostgreSQL tsvector weight."""

    NAME = "A"
    EMAIL = "B"
    PHONE = "C"
    OTHER = "D"


# bm25 column weights on SQLite, in the same proportions as PostgreSQL's default ts_rank weights
# for A, B, C and D (1.0, 0.4, 0.2, 0.1): a match in a name counts ten times one in a body.
BM25_WEIGHTS = {FieldGroup.NAME: 10.0, FieldGroup.EMAIL: 4.0, FieldGroup.PHONE: 2.0}
DEFAULT_BM25_WEIGHT = 1.0
SEARCHED_TYPES = frozenset(
    {FieldType.STRING, FieldType.TEXTAREA, FieldType.EMAIL, FieldType.PHONE, FieldType.URL}
)
TS_CONFIG = "english"
# Every run of characters that is not a letter or a digit separates two words.
_SEPARATORS_RE = "[^[:alnum:]]+"
FTS5_TOKENIZER = "porter unicode61 remove_diacritics 0"


@dataclass(frozen=True)
class SearchField:
    name: str
    group: FieldGroup


@dataclass(frozen=True)
class SearchSpec:
    """The indexed fields of one object, in index column order."""

    sobject: str
    table: str
    fields: tuple[SearchField, ...]

    @property
    def fts_table(self) -> str:
        return f"{self.table}_fts"

    @property
    def pg_index(self) -> str:
        return f"ix_{self.table}_search"

    def names(self, groups: frozenset[FieldGroup] | None = None) -> tuple[str, ...]:
        """The indexed fields in `groups` (all of them for None), in index order."""
        return tuple(f.name for f in self.fields if groups is None or f.group in groups)


def _group(sobject: SObjectDef, name: str, field_type: FieldType) -> FieldGroup:
    name_parts = set(sobject.compound_name.parts) if sobject.compound_name else set()
    if name == sobject.name_field or name in name_parts:
        return FieldGroup.NAME
    if field_type is FieldType.EMAIL:
        return FieldGroup.EMAIL
    if field_type is FieldType.PHONE:
        return FieldGroup.PHONE
    return FieldGroup.OTHER


def search_spec(sobject: SObjectDef) -> SearchSpec | None:
    """What `sobject` indexes; None when it is not searchable or has nothing to search."""
    if not sobject.searchable:
        return None
    fields = tuple(
        SearchField(f.name, _group(sobject, f.name, f.type))
        for f in sobject.fields
        if f.type in SEARCHED_TYPES and not f.system
    )
    if not fields:
        return None
    return SearchSpec(sobject=sobject.name, table=table_name(sobject), fields=fields)


def search_specs(tables: TableSet) -> list[SearchSpec]:
    return [spec for sobject in tables.registry if (spec := search_spec(sobject)) is not None]


# -- what queries use --------------------------------------------------------------------------


def fts_table(spec: SearchSpec) -> TableClause:
    """The FTS5 table as a FROM: `rowid`, `rank`, the hidden column named like the table (the
    left side of MATCH) and the indexed fields."""
    return table(
        spec.fts_table,
        column("rowid"),
        column("rank"),
        column(spec.fts_table),
        *(column(name) for name in spec.names()),
    )


def content_rowids(spec: SearchSpec) -> TableClause:
    """The data table seen through its rowid, which the FTS5 rows point at."""
    return table(spec.table, column("rowid"), column("Id"))


def _field_vector(value: ColumnElement[Any], weight: str) -> ColumnElement[Any]:
    words = func.regexp_replace(
        func.coalesce(cast(value, Text), literal_column("''")),
        literal_column(f"'{_SEPARATORS_RE}'"),
        literal_column("' '"),
        literal_column("'g'"),
    )
    vector = func.to_tsvector(literal_column(f"'{TS_CONFIG}'::regconfig"), words)
    return func.setweight(vector, literal_column(f"'{weight}'"))


def search_vector(
    spec: SearchSpec, columns: Mapping[str, ColumnElement[Any]]
) -> ColumnElement[Any]:
    """The weighted tsvector of one row: the indexed expression, and what queries match on.

    Constants are inline literals, not bound parameters, so that a query's expression is the
    index's expression and PostgreSQL can use the index.
    """
    vectors = [_field_vector(columns[f.name], f.group.value) for f in spec.fields]
    combined = vectors[0]
    for vector in vectors[1:]:
        combined = combined.op("||")(vector)
    return combined


def ts_query(match: ColumnElement[Any]) -> ColumnElement[Any]:
    """`to_tsquery` with the index's configuration over a query text."""
    return func.to_tsquery(literal_column(f"'{TS_CONFIG}'::regconfig"), match)


# -- DDL -------------------------------------------------------------------------------------


def _quote(connection: Connection, name: str) -> str:
    return connection.dialect.identifier_preparer.quote(name)


def _sqlite_ddl(connection: Connection, spec: SearchSpec) -> list[str]:
    q = _quote
    fts, content = q(connection, spec.fts_table), q(connection, spec.table)
    names = [q(connection, name) for name in spec.names()]
    columns = ", ".join(names)
    new_values = ", ".join(f"new.{name}" for name in names)
    old_values = ", ".join(f"old.{name}" for name in names)
    insert_new = f"INSERT INTO {fts}(rowid, {columns}) VALUES (new.rowid, {new_values});"
    delete_old = (
        f"INSERT INTO {fts}({fts}, rowid, {columns}) VALUES ('delete', old.rowid, {old_values});"
    )
    weights = ", ".join(
        str(BM25_WEIGHTS.get(field.group, DEFAULT_BM25_WEIGHT)) for field in spec.fields
    )
    trigger = spec.fts_table
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({columns}, content='{spec.table}', "
        f"content_rowid='rowid', tokenize='{FTS5_TOKENIZER}')",
        f"INSERT INTO {fts}({fts}, rank) VALUES ('rank', 'bm25({weights})')",
        f"CREATE TRIGGER {q(connection, trigger + '_ai')} AFTER INSERT ON {content} "
        f"BEGIN {insert_new} END",
        f"CREATE TRIGGER {q(connection, trigger + '_ad')} AFTER DELETE ON {content} "
        f"BEGIN {delete_old} END",
        # Only a change to an indexed field reindexes: a soft delete (IsDeleted) does not.
        f"CREATE TRIGGER {q(connection, trigger + '_au')} AFTER UPDATE OF {columns} ON {content} "
        f"BEGIN {delete_old} {insert_new} END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def _pg_index(spec: SearchSpec) -> Index:
    """The GIN index, on a stand-alone copy of the table so the org's MetaData never sees it."""
    shadow = Table(spec.table, MetaData(), *(Column(name, Text) for name in spec.names()))
    vector = search_vector(spec, {name: shadow.c[name] for name in spec.names()})
    return Index(spec.pg_index, vector, postgresql_using="gin", _table=shadow)


def create_search_index(connection: Connection, tables: TableSet) -> None:
    """Create the index of every searchable object; the data tables must exist."""
    for spec in search_specs(tables):
        if connection.dialect.name == "sqlite":
            for statement in _sqlite_ddl(connection, spec):
                connection.execute(text(statement))
        elif connection.dialect.name == "postgresql":
            _pg_index(spec).create(connection)


def drop_search_index(connection: Connection, tables: TableSet) -> None:
    """Drop what `create_search_index` made (on PostgreSQL the index goes with its table)."""
    if connection.dialect.name != "sqlite":
        return
    for spec in search_specs(tables):
        connection.execute(text(f"DROP TABLE IF EXISTS {_quote(connection, spec.fts_table)}"))


def rebuild_search_index(connection: Connection, tables: TableSet) -> None:
    """Re-read every row into the index (SQLite, after rowids may have changed)."""
    if connection.dialect.name != "sqlite":
        return
    for spec in search_specs(tables):
        fts = _quote(connection, spec.fts_table)
        connection.execute(text(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')"))


def search_index_exists(connection: Connection, tables: TableSet) -> bool:
    specs = search_specs(tables)
    if connection.dialect.name == "sqlite":
        master = table("sqlite_master", column("name"), column("type"))
        wanted = [spec.fts_table for spec in specs]
        query = select(master.c.name).where(master.c.type == "table", master.c.name.in_(wanted))
    elif connection.dialect.name == "postgresql":
        indexes = table("pg_indexes", column("indexname"), column("schemaname"))
        wanted = [spec.pg_index for spec in specs]
        # Sandboxes' schemas share the database and the index names: look in this one only.
        query = select(indexes.c.indexname).where(
            indexes.c.indexname.in_(wanted), indexes.c.schemaname == func.current_schema()
        )
    else:
        return True
    found = {row[0] for row in connection.execute(query)}
    return found >= set(wanted)
