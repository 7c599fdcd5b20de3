"""The PostgreSQL back end: a server's database, shared by every worker. Templates and sandboxes
are schemas of it; a copy-on-write sandbox's search path puts its own schema before its
template's, set per transaction, so one pool serves every sandbox.

Text compares case-insensitively as citext (installed in a schema of its own); the search index
is a GIN expression index over a weighted tsvector; a write transaction takes an advisory lock
named after its sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    ColumnElement,
    Connection,
    Engine,
    Float,
    Index,
    MetaData,
    Select,
    Table,
    Text,
    bindparam,
    cast,
    column,
    create_engine,
    event,
    func,
    literal,
    literal_column,
    select,
    table,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import CITEXT
from sqlalchemy.types import TypeEngine

from app.storage.backends.common import SEARCH_PATH_OPTION, DateField
from app.storage.search_spec import FieldGroup, SearchSpec

# The extensions (citext) live in this schema, which holds no tables.
EXTENSION_SCHEMA = "localforce_ext"


# -- connections and transactions ------------------------------------------------------------


def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
    # Extensions live in a schema of their own (no tables), appended to every connection's
    # path: citext's operators must resolve wherever a sandbox's tables live.
    cursor = dbapi_connection.cursor()
    cursor.execute(
        "SELECT set_config('search_path', current_setting('search_path') || %s, false)",
        (f", {EXTENSION_SCHEMA}",),
    )
    cursor.close()
    dbapi_connection.commit()


def _begin(conn: Connection) -> None:
    path = conn.get_execution_options().get(SEARCH_PATH_OPTION)
    if path:
        # The sandbox of this transaction: its schema, then its template's (one shared pool
        # serves every sandbox, so the path is set per transaction).
        conn.exec_driver_sql(f"SET LOCAL search_path TO {path}, {EXTENSION_SCHEMA}")


def _engine(url: str, **pool: Any) -> Engine:
    engine = create_engine(url, pool_pre_ping=True, **pool)
    event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _begin)
    return engine


def _ensure_extensions(connection: Connection) -> None:
    """citext in EXTENSION_SCHEMA (moved there if an earlier version installed it elsewhere)."""
    schema = EXTENSION_SCHEMA
    connection.execute(text(f"CREATE SCHEMA IF NOT EXISTS {schema}"))
    current = connection.execute(
        text(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'citext'"
        )
    ).scalar_one_or_none()
    if current is None:
        connection.execute(text(f"CREATE EXTENSION IF NOT EXISTS citext WITH SCHEMA {schema}"))
    elif current != schema:
        connection.execute(text(f"ALTER EXTENSION citext SET SCHEMA {schema}"))


# -- SOQL functions --------------------------------------------------------------------------

_EXTRACT = {
    DateField.YEAR: "YEAR",
    DateField.MONTH: "MONTH",
    DateField.DAY: "DAY",
    DateField.DAY_OF_YEAR: "DOY",
    DateField.HOUR: "HOUR",
    DateField.DAY_OF_WEEK: "DOW",
}


# -- the search index: a weighted tsvector -------------------------------------------------------

TS_CONFIG = "english"
# Every run of characters that is not a letter or a digit separates two words (PostgreSQL's
# parser would keep e-mail addresses and hyphenated words whole otherwise).
_SEPARATORS_RE = "[^[:alnum:]]+"
# The tsvector weight of each search group (ts_rank's defaults weigh A to D 1.0 to 0.1).
_WEIGHTS = {
    FieldGroup.NAME: "A",
    FieldGroup.EMAIL: "B",
    FieldGroup.PHONE: "C",
    FieldGroup.OTHER: "D",
}


def _index_name(spec: SearchSpec) -> str:
    return f"ix_{spec.table}_search"


def _field_vector(value: ColumnElement[Any], weight: str) -> ColumnElement[Any]:
    words = func.regexp_replace(
        func.coalesce(cast(value, Text), literal_column("''")),
        literal_column(f"'{_SEPARATORS_RE}'"),
        literal_column("' '"),
        literal_column("'g'"),
    )
    vector = func.to_tsvector(literal_column(f"'{TS_CONFIG}'::regconfig"), words)
    return func.setweight(vector, literal_column(f"'{weight}'"))


def _search_vector(
    spec: SearchSpec, columns: Mapping[str, ColumnElement[Any]]
) -> ColumnElement[Any]:
    """The weighted tsvector of one row: the indexed expression, and what queries match on.

    Constants are inline literals, not bound parameters, so that a query's expression is the
    index's expression and PostgreSQL can use the index.
    """
    vectors = [_field_vector(columns[f.name], _WEIGHTS[f.group]) for f in spec.fields]
    combined = vectors[0]
    for vector in vectors[1:]:
        combined = combined.op("||")(vector)
    return combined


def _ts_query(match: ColumnElement[Any]) -> ColumnElement[Any]:
    """`to_tsquery` with the index's configuration over a query text."""
    return func.to_tsquery(literal_column(f"'{TS_CONFIG}'::regconfig"), match)


def _index(spec: SearchSpec) -> Index:
    """The GIN index, on a stand-alone copy of the table so the org's MetaData never sees it."""
    shadow = Table(spec.table, MetaData(), *(Column(name, Text) for name in spec.names()))
    vector = _search_vector(spec, {name: shadow.c[name] for name in spec.names()})
    return Index(_index_name(spec), vector, postgresql_using="gin", _table=shadow)


class TsquerySyntax:
    """A to_tsquery text: `<->` between a phrase's words, `&`, `|` and `& !`, and the weights
    of the searched groups on every word when the search is limited to some fields."""

    def __init__(self, weights: str) -> None:
        self.weights = weights

    def phrase(self, words: Sequence[str]) -> str:
        suffix = f":{self.weights}" if self.weights else ""
        spelled = [f"'{word}'{suffix}" for word in words]
        return spelled[0] if len(spelled) == 1 else "(" + " <-> ".join(spelled) + ")"

    def all_of(self, parts: Sequence[str]) -> str:
        return "(" + " & ".join(parts) + ")"

    def any_of(self, parts: Sequence[str]) -> str:
        return "(" + " | ".join(parts) + ")"

    def but_not(self, left: str, right: str) -> str:
        return f"({left} & !{right})"

    def query(self, body: str) -> str:
        return body


def word_pattern(words: Sequence[str]) -> str:
    """A regular expression for a word (or phrase) with wildcards (`?` one letter or digit, `*`
    any run of them), at word boundaries. PostgreSQL's regex engine does not backtrack
    exponentially, so a pattern a client wrote is safe to run."""
    letter, separator = "[[:alnum:]]", "[^[:alnum:]]+"
    spelled = []
    for word in words:
        parts = []
        for char in word:
            if char == "*":
                parts.append(letter + "*")
            elif char == "?":
                parts.append(letter)
            else:
                parts.append(re.escape(char))
        spelled.append("".join(parts))
    return "(^|[^[:alnum:]])" + separator.join(spelled) + "($|[^[:alnum:]])"


# -- the back end --------------------------------------------------------------------------------


class PostgresBackend:
    name = "postgresql"
    # Row locks suffice for short platform writes: they need not queue for a write lock.
    one_writer = False
    # A long read (copying an org out) sees one state of the database throughout.
    snapshot_isolation: str | None = "REPEATABLE READ"

    def create_engine(
        self, url: str, *, must_exist: bool = False, template: str | None = None, **pool: Any
    ) -> Engine:
        # A database on a server is never made by connecting to it, and a sandbox is a schema
        # chosen per transaction (PostgresCopies), so `must_exist` and `template` change nothing.
        return _engine(url, **pool)

    def lock_writes(self, conn: Connection, key: str) -> None:
        # Advisory locks are per database, and sandboxes share one: the key names the sandbox.
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key})

    def prepare_database(self, conn: Connection) -> None:
        _ensure_extensions(conn)

    def restrict_to_owner(self, engine: Engine) -> None:
        """Nothing: the server keeps its own access rules."""

    def settle_template(self, url: str) -> None:
        """Nothing: a template schema is ready once its transaction commits."""

    def case_insensitive_text(self) -> TypeEngine[str]:
        return CITEXT()

    def insert(self, table: Any) -> postgresql.Insert:
        return postgresql.insert(table)

    def date_field(self, field: DateField, value: str) -> str:
        return f"CAST(EXTRACT({_EXTRACT[field]} FROM {value}) AS INTEGER)"

    def modulo(self, dividend: str, divisor: str) -> str:
        # Not the % operator: psycopg's placeholders use it.
        return f"MOD({dividend}, {divisor})"

    def day_only(self, value: str) -> str:
        return f"CAST({value} AS DATE)"

    def to_local(self, value: str, zone: str) -> str:
        return f"timezone({zone}, timezone('UTC', {value}))"

    def distance(self, lat1: str, lon1: str, lat2: str, lon2: str, radius: str) -> str:
        chord = (
            f"power(sin(radians({lat2} - {lat1}) / 2), 2) + cos(radians({lat1})) * "
            f"cos(radians({lat2})) * power(sin(radians({lon2} - {lon1}) / 2), 2)"
        )
        # Rounding can push the chord a hair above 1; LEAST would also turn a null into 1.
        return f"(2 * {radius} * asin(sqrt(CASE WHEN {chord} > 1 THEN 1 ELSE {chord} END)))"

    def create_search_index(self, conn: Connection, spec: SearchSpec) -> None:
        _index(spec).create(conn)

    def drop_search_index(self, conn: Connection, spec: SearchSpec) -> None:
        """Nothing: the index goes with its table."""

    def rebuild_search_index(self, conn: Connection, spec: SearchSpec) -> None:
        """Nothing: the index is of the rows' values, not of their addresses."""

    def search_index_exists(self, conn: Connection, specs: Sequence[SearchSpec]) -> bool:
        indexes = table("pg_indexes", column("indexname"), column("schemaname"))
        wanted = [_index_name(spec) for spec in specs]
        # Sandboxes' schemas share the database and the index names: look in this one only.
        query = select(indexes.c.indexname).where(
            indexes.c.indexname.in_(wanted), indexes.c.schemaname == func.current_schema()
        )
        return {row[0] for row in conn.execute(query)} >= set(wanted)

    def match_syntax(self, spec: SearchSpec, groups: frozenset[FieldGroup] | None) -> TsquerySyntax:
        return TsquerySyntax("" if groups is None else "".join(sorted(_WEIGHTS[g] for g in groups)))

    def matches(self, spec: SearchSpec, table: Table, query: str, ranked: bool) -> Select[Any]:
        # The query repeats the index's expression, so the planner can use the index.
        vector = _search_vector(spec, {name: table.c[name] for name in spec.names()})
        tsquery = _ts_query(bindparam(None, query))
        columns: list[ColumnElement[Any]] = [table.c.Id.label("Id")]
        if ranked:
            # Normalization 1 divides by the log of the length: short texts rank higher.
            relevance = func.ts_rank(vector, tsquery, literal_column("1"), type_=Float)
            columns.append((literal(0.0) - relevance).label("rank"))
        return select(*columns).where(vector.op("@@", return_type=Boolean)(tsquery))

    def wildcard(self, column: ColumnElement[Any], words: Sequence[str]) -> ColumnElement[bool]:
        return column.regexp_match(word_pattern(words), flags="i")


POSTGRESQL = PostgresBackend()
