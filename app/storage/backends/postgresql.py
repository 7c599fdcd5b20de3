"""The PostgreSQL back end: a server's database, shared by every worker. Templates and sandboxes
are schemas of it; a copy-on-write sandbox's search path puts its own schema before its
template's, set per transaction, so one pool serves every sandbox.

Text columns are citext (installed in a schema of its own), and compare ignoring case by their
key (text_key.py): `lf_text_key()`, a SQL function made when the database is prepared, which
upper-cases under a collation checked to give that key; the search index is a GIN expression
index over a weighted tsvector; a write transaction takes an advisory lock named after its
sandbox.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
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
    case,
    cast,
    column,
    create_engine,
    event,
    func,
    literal,
    literal_column,
    make_url,
    select,
    table,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import CITEXT
from sqlalchemy.types import TypeEngine

from app.storage.backends.common import (
    OVERLAY_OPTION,
    OWN_TABLES,
    SEARCH_PATH_OPTION,
    SERIAL_COLUMNS,
    DateField,
    Overlay,
    WireDatetimes,
    clone_name,
    raised_as_sqlalchemys,
)
from app.storage.backends.text_key import (
    LAST_CASED_CODE_POINT,
    UNICODE_VERSION,
    changed_code_points,
    text_key,
)
from app.storage.search_spec import FieldGroup, SearchSpec

logger = logging.getLogger(__name__)

# A naive UTC timestamp as the wire writes it: `2020-12-22T11:00:00.000+0000`.
_WIRE_DATETIME = literal_column('\'YYYY-MM-DD"T"HH24:MI:SS.MS"+0000"\'', Text)

# The extensions (citext) live in this schema, which holds no tables, as do our functions.
EXTENSION_SCHEMA = "localforce_ext"
TEXT_KEY_FUNCTION = "lf_text_key"
# The column a btree index of a text key alone is on (not the search index, whose expression
# keys text too), as pg_get_indexdef prints it: quoted (group 1) or, a lower-case name, bare.
_KEYED_COLUMN = re.compile(
    rf'USING btree \((?:{EXTENSION_SCHEMA}\.)?{TEXT_KEY_FUNCTION}\(\(?(?:"((?:[^"]|"")+)"'
    r'|([a-z_][a-z0-9_$]*))(?:\)::text)?\) COLLATE "C"\)$'
)


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
        # serves every sandbox, so the path is set per transaction). On the driver's cursor:
        # through SQLAlchemy the statement cost twice what psycopg's execute does.
        statement = f"SET LOCAL search_path TO {path}, {EXTENSION_SCHEMA}"
        driver = conn.connection.dbapi_connection
        with raised_as_sqlalchemys(conn, statement), driver.cursor() as cursor:  # type: ignore[union-attr]
            cursor.execute(statement)


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


# -- the key of text --------------------------------------------------------------------------

# The code points whose upper case under `collation` is not the key's: none for a collation
# whose upper() is the key (surrogates aside, which no text holds).
_KEY_PROBE = """
SELECT count(*) FROM generate_series(1, :last) AS c(code)
LEFT JOIN unnest(CAST(:codes AS integer[]), CAST(:uppers AS integer[])) AS m(code, upper)
  ON m.code = c.code
WHERE c.code NOT BETWEEN 55296 AND 57343
  AND upper(chr(c.code) COLLATE {collation}) <> chr(coalesce(m.upper, c.code))
"""
# Collations worth probing besides the database's own: the C library's UTF-8 ones, C.UTF-8
# (the same on every machine) first.
_UTF8_COLLATIONS = """
SELECT collname FROM pg_collation
WHERE collprovider = 'c' AND collencoding IN (-1, pg_char_to_encoding('UTF8'))
  AND collctype ~* 'utf-?8$'
ORDER BY collctype !~* '^c[.]', collname LIMIT 2
"""


def _key_collation(conn: Connection) -> str | None:
    """A collation (quoted) under which upper() gives the key of every character, or None."""
    if conn.execute(text("SELECT getdatabaseencoding()")).scalar() != "UTF8":
        return None
    changed = changed_code_points()
    params = {
        "last": LAST_CASED_CODE_POINT,
        "codes": list(changed),
        "uppers": list(changed.values()),
    }
    names = conn.execute(text(_UTF8_COLLATIONS)).scalars()
    for collation in ['"default"', *(_quote(conn, name) for name in names)]:
        probe = text(_KEY_PROBE.format(collation=collation))
        if conn.execute(probe, params).scalar() == 0:
            return collation
    return None


def _key_body(collation: str | None) -> str:
    """The SQL of the key of `value`: upper() under a collation that gives it, else (slowly,
    but exactly) the mapping spelled out for translate(), ASCII text upper-cased as it is."""
    if collation is not None:
        return f"upper(value COLLATE {collation})"
    changed = changed_code_points()
    lowers = "".join(map(chr, changed)).replace("'", "''")
    uppers = "".join(map(chr, changed.values())).replace("'", "''")
    return (
        'CASE WHEN octet_length(value) = length(value) THEN upper(value COLLATE "C") '
        f"ELSE translate(value, '{lowers}', '{uppers}') END"
    )


def _ensure_text_key(conn: Connection) -> None:
    """Make lf_text_key() once per database (an inlinable SQL function: as fast as upper())."""
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('localforce_text_key'))"))
    exists = conn.execute(
        text(
            "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = :schema AND p.proname = :name"
        ),
        {"schema": EXTENSION_SCHEMA, "name": TEXT_KEY_FUNCTION},
    ).first()
    if exists is not None:
        return
    collation = _key_collation(conn)
    if collation is None:
        logger.warning("no collation upper-cases text as the key does: keys are slow to compute")
    name = f"{EXTENSION_SCHEMA}.{TEXT_KEY_FUNCTION}"
    conn.execute(
        text(
            f"CREATE FUNCTION {name}(value text) RETURNS text LANGUAGE sql IMMUTABLE "
            f"PARALLEL SAFE AS $$ SELECT {_key_body(collation)} $$"
        )
    )
    how = f"upper() under {collation}" if collation else "translate()"
    note = f"Unicode {UNICODE_VERSION} simple uppercase mapping, by {how}"
    conn.execute(text(f"COMMENT ON FUNCTION {name}(text) IS '{note}'"))


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


NAME_MATCH_BONUS = 10.0  # above any ts_rank with normalization 1


def _index_name(spec: SearchSpec) -> str:
    return f"ix_{spec.table}_search"


def _key(value: ColumnElement[Any]) -> ColumnElement[str]:
    """The key of a text value (lf_text_key), in the database's collation: its character
    classes say what a letter is (the "C" the key sorts by knows ASCII letters only)."""
    spell = getattr(getattr(func, EXTENSION_SCHEMA), TEXT_KEY_FUNCTION)
    key: ColumnElement[str] = spell(cast(value, Text), type_=Text)
    return key


def _field_vector(value: ColumnElement[Any], weight: str) -> ColumnElement[Any]:
    # The words of the key, which the dictionary lower-cases: so letters that share a key
    # (final and medial sigma) are one word, as the query's words are (text_key.search_word).
    words = func.regexp_replace(
        func.coalesce(_key(value), literal_column("''")),
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


# -- copy-on-write sandboxes -------------------------------------------------------------------


def _quote(conn: Connection, name: str) -> str:
    return conn.dialect.identifier_preparer.quote(name)


def _copy_table(conn: Connection, overlay: Overlay, table: Table) -> None:
    local = f"{_quote(conn, overlay.local)}.{_quote(conn, table.name)}"
    source = f"{_quote(conn, overlay.template)}.{_quote(conn, table.name)}"
    # LIKE ... INCLUDING ALL brings the indexes, the search index's GIN expression included.
    conn.exec_driver_sql(f"CREATE TABLE {local} (LIKE {source} INCLUDING ALL)")
    # The insert recomputes the search index's vectors: most of the copy's cost on text-heavy
    # objects. No ANALYZE here (it would compute them once more): autovacuum analyzes the
    # table soon, and until then the planner estimates from its size.
    conn.exec_driver_sql(f"INSERT INTO {local} SELECT * FROM {source}")


_UNSAFE = re.compile(r"[^a-z0-9_]")
# The connection option that sets a PostgreSQL session's search path.
_PATH_OPTION = "-csearch_path="


class PostgresCopies:
    """Templates and clones are schemas of the server's database, named after it with a suffix,
    and a copy's name is its schema's: it holds wherever the database is served from (and names
    no credentials). A clone's search path puts its own schema before its template's
    (`app.storage.overlay`).
    Every clone runs on one shared engine: its connections serve whichever sandbox a request
    is for, so they are bounded by the requests in flight, not by the number of sandboxes."""

    def __init__(self, base_url: str, *, pool_size: int = 8, max_overflow: int = 12) -> None:
        self.base = make_url(base_url)
        name = _UNSAFE.sub("_", (self.base.database or "localforce").lower())
        self.prefix = name[:30]
        self.engine = _engine(
            self.base.render_as_string(hide_password=False),
            pool_size=pool_size,
            max_overflow=max_overflow,
            # A server-side prepared statement keeps the tables its names resolved to when
            # prepared, even after a table of the same name is copied into an earlier schema
            # on the path: prepare none here.
            connect_args={"prepare_threshold": None},
        )

    def _schemas_named(self, prefix: str) -> list[str]:
        with self.engine.connect() as conn:
            names = conn.execute(
                text("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, :prefix)"),
                {"prefix": prefix},
            ).scalars()
            return sorted(names)

    def database_url(self, url: str) -> str:
        """The server's database with the schema `url` names first on the search path."""
        path = _PATH_OPTION + url
        return self.base.update_query_dict({"options": path}).render_as_string(hide_password=False)

    def template_url(self, key: str) -> str:
        return _UNSAFE.sub("_", f"{self.prefix}_tpl_{key}".lower())[:63]

    def list_templates(self) -> list[str]:
        return self._schemas_named(f"{self.prefix}_tpl_")

    def list_clones(self) -> list[str]:
        return self._schemas_named(f"{self.prefix}_sb_")

    def exists(self, url: str) -> bool:
        with self.engine.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM pg_namespace WHERE nspname = :name"),
                {"name": url},
            ).first()
        return found is not None

    def create_empty(self, url: str) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{url}"')

    def clone(self, source_url: str) -> str:
        template = source_url
        name = f"{self.prefix}_sb_{clone_name().replace('-', '_')}"
        # Identifiers cannot be bound parameters; every name here is made here, never by a client.
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')
            for table_name in OWN_TABLES:
                conn.exec_driver_sql(
                    f'CREATE TABLE "{name}".{table_name} '
                    f'(LIKE "{template}".{table_name} INCLUDING ALL)'
                )
            for table_name, serial in SERIAL_COLUMNS.items():
                # LIKE copies a serial's default, which names the template's sequence.
                sequence = f'"{name}".{table_name}_{serial}_seq'
                conn.exec_driver_sql(
                    f'CREATE SEQUENCE {sequence} OWNED BY "{name}".{table_name}.{serial}'
                )
                conn.exec_driver_sql(
                    f'ALTER TABLE "{name}".{table_name} ALTER COLUMN {serial} '
                    f"SET DEFAULT nextval('{sequence}')"
                )
            conn.exec_driver_sql(
                f'INSERT INTO "{name}".lf_id_sequence SELECT * FROM "{template}".lf_id_sequence'
            )
        return name

    def drop(self, url: str) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{url}" CASCADE')

    def storage_of(self, url: str) -> str:
        """What a copy's name names in the database: its schema."""
        return url

    def engine_for(self, url: str, template: str) -> Engine:
        if not template:  # the server's own database
            return self.engine
        return self.engine.execution_options(
            **{
                SEARCH_PATH_OPTION: f'"{url}", "{template}"',
                OVERLAY_OPTION: Overlay(local=url, template=template),
            }
        )

    def release(self, engine: Engine) -> None:
        """Nothing: the engine is the shared one, seen through a sandbox's options."""

    def close(self) -> None:
        self.engine.dispose()

    def upgrade_storage(self, upgrade: Callable[[Connection], object]) -> None:
        """Nothing: templates and clones are schemas of the server's database, which its
        platform migrations upgrade whole."""


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

    def read_only_engine(self, url: str) -> Engine | None:
        """An engine whose transactions are read-only, on a database that must exist."""
        return create_engine(url).execution_options(postgresql_readonly=True)

    def lock_writes(self, conn: Connection, key: str) -> None:
        # Advisory locks are per database, and sandboxes share one: the key names the sandbox.
        conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"), {"key": key})

    @contextmanager
    def first_start(self, engine: Engine) -> Iterator[None]:
        # Hosts started together on one database (compose's API replicas): each takes a
        # session lock on a connection of its own, so one migrates and seeds while the others
        # wait, then find it done.
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(hashtext('localforce_first_start'))"))
            conn.commit()
            try:
                yield
            finally:
                conn.execute(text("SELECT pg_advisory_unlock(hashtext('localforce_first_start'))"))
                conn.commit()

    def prepare_database(self, conn: Connection) -> None:
        _ensure_extensions(conn)
        _ensure_text_key(conn)

    def restrict_to_owner(self, engine: Engine) -> None:
        """Nothing: the server keeps its own access rules."""

    def settle_template(self, url: str) -> None:
        """Nothing: a template schema is ready once its transaction commits."""

    def case_insensitive_text(self) -> TypeEngine[str]:
        return CITEXT()

    def insert(self, table: Any) -> postgresql.Insert:
        return postgresql.insert(table)

    def wire_datetimes(self, statement: Select[Any], columns: frozenset[int]) -> WireDatetimes:
        # The server writes the text (to_char truncates to milliseconds, as the wire does): in
        # Python, formatting a datetime psycopg made cost 1.5-2 us a value.
        if not columns:
            return WireDatetimes(None, {})
        selected = [
            func.to_char(column, _WIRE_DATETIME).label(column.name) if index in columns else column
            for index, column in enumerate(statement.selected_columns)
        ]
        rewritten = statement.with_only_columns(*selected, maintain_column_froms=True)
        return WireDatetimes(rewritten, {})

    def append_rows(
        self, conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> None:
        # COPY, in the connection's transaction: an executemany through SQLAlchemy and psycopg
        # cost about 65 us of Python a row, COPY about 17 (the call log writes one a request).
        if not rows:
            return
        names = list(rows[0])
        quote = conn.dialect.identifier_preparer
        statement = (
            f"COPY {quote.format_table(table)} ({', '.join(quote.quote(n) for n in names)})"
            " FROM STDIN"
        )
        driver = conn.connection.dbapi_connection
        with (
            raised_as_sqlalchemys(conn, statement),
            driver.cursor() as cursor,  # type: ignore[union-attr]
            cursor.copy(statement) as copy,
        ):
            for row in rows:
                copy.write_row([row[name] for name in names])

    def date_field(self, field: DateField, value: str) -> str:
        return f"CAST(EXTRACT({_EXTRACT[field]} FROM {value}) AS INTEGER)"

    def modulo(self, dividend: str, divisor: str) -> str:
        # Not the % operator: psycopg's placeholders use it.
        return f"MOD({dividend}, {divisor})"

    def day_only(self, value: str) -> str:
        return f"CAST({value} AS DATE)"

    def text_key_indexes(self, conn: Connection, table: str, schema: str | None) -> dict[str, str]:
        # A sandbox's copy of a table names its indexes itself (CREATE TABLE ... LIKE): they
        # are known by what they index.
        statement = text(
            "SELECT indexname, indexdef FROM pg_indexes "
            "WHERE schemaname = coalesce(:s, current_schema()) AND tablename = :t "
            "AND indexdef LIKE :call"
        )
        rows = conn.execute(statement, {"s": schema, "t": table, "call": f"%{TEXT_KEY_FUNCTION}(%"})
        found = {}
        for name, definition in rows:
            keyed = _KEYED_COLUMN.search(definition)
            if keyed is not None:
                found[str(name)] = (keyed.group(1) or "").replace('""', '"') or keyed.group(2)
        return found

    def text_key(self, value: str) -> str:
        # By code point whatever the database's collation (a locale's ignores punctuation).
        return f'{EXTENSION_SCHEMA}.{TEXT_KEY_FUNCTION}(CAST({value} AS TEXT)) COLLATE "C"'

    def text_position(self, text: str, part: str) -> str:
        return f"strpos({text}, {part})"

    def case_insensitive(self, value: str) -> str:
        # A coalesce of citext columns is citext, but a literal (a polymorphic lookup's type)
        # is text.
        return f"CAST({value} AS CITEXT)"

    def key_in(self, value: str, keys: Sequence[str]) -> str:
        return f"{self.text_key(value)} IN ({', '.join(keys)})"

    def text_is_null(self, value: str) -> str:
        return f"{self.text_key(value)} IS NULL"  # the grouped expression, in HAVING

    def code_point_order(self, value: str) -> str:
        return f'CAST({value} AS TEXT) COLLATE "C"'

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

    def replace_search_index(
        self, conn: Connection, old: SearchSpec | None, new: SearchSpec | None
    ) -> None:
        if old is not None:
            # The copy of a template's table has its index under a name of its own (LIKE ...
            # INCLUDING ALL): each tsvector index on the table, in this schema only.
            statement = (
                "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
                " AND tablename = :t AND indexdef LIKE '%to_tsvector%'"
            )
            schema = conn.exec_driver_sql("SELECT current_schema()").scalar_one()
            for name in conn.execute(text(statement), {"t": old.table}).scalars():
                conn.exec_driver_sql(
                    f"DROP INDEX IF EXISTS {_quote(conn, schema)}.{_quote(conn, name)}"
                )
        if new is not None:
            self.create_search_index(conn, new)

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
            # Normalization 1 divides by the log of the length: short texts rank higher. A
            # record whose names hold every word comes first whatever its body holds (ts_rank
            # weighs proximity too, and a long body of near matches can outweigh a name).
            named = func.ts_filter(vector, literal_column("'{a}'::\"char\"[]")).op(
                "@@", return_type=Boolean
            )(tsquery)
            relevance = func.ts_rank(vector, tsquery, literal_column("1"), type_=Float) + case(
                (named, NAME_MATCH_BONUS), else_=0.0
            )
            columns.append((literal(0.0) - relevance).label("rank"))
        return select(*columns).where(vector.op("@@", return_type=Boolean)(tsquery))

    def wildcard(self, column: ColumnElement[Any], words: Sequence[str]) -> ColumnElement[bool]:
        # Keys against keys, letter case ignored as everywhere.
        return _key(column).regexp_match(word_pattern([text_key(word) for word in words]))

    def is_local(self, conn: Connection, overlay: Overlay, name: str) -> bool:
        statement = "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = :s AND tablename = :n"
        return conn.execute(text(statement), {"s": overlay.local, "n": name}).first() is not None

    def copy_table(self, conn: Connection, overlay: Overlay, table: Table) -> None:
        _copy_table(conn, overlay, table)

    def drop_copy(self, conn: Connection, overlay: Overlay, name: str) -> None:
        local = f"{_quote(conn, overlay.local)}.{_quote(conn, name)}"
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {local}")

    def column_names(self, conn: Connection, table: str) -> set[str]:
        # current_schema(): the first schema of the search path, the sandbox's own.
        statement = (
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = :t"
        )
        return {str(name) for name in conn.execute(text(statement), {"t": table}).scalars()}

    def create_table(self, conn: Connection, table: Table) -> None:
        table.create(conn)  # in the first schema of the search path: the sandbox's own

    def drop_table(self, conn: Connection, name: str) -> None:
        # In the first schema of the search path only: never the template's, behind it.
        schema = conn.exec_driver_sql("SELECT current_schema()").scalar_one()
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {_quote(conn, schema)}.{_quote(conn, name)}")

    def rename_table(self, conn: Connection, old: str, new: str) -> None:
        conn.exec_driver_sql(f"ALTER TABLE {_quote(conn, old)} RENAME TO {_quote(conn, new)}")

    def add_column(self, conn: Connection, table: str, column: Column[Any]) -> None:
        kind = column.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(
            f"ALTER TABLE {_quote(conn, table)} ADD COLUMN {_quote(conn, column.name)} {kind}"
        )

    def copies(self, url: str, data_dir: Path) -> PostgresCopies:
        return PostgresCopies(url)


POSTGRESQL = PostgresBackend()
