"""The PostgreSQL back end: a server's database, shared by every worker. Templates and sandboxes
are schemas of it; a copy-on-write sandbox's search path puts its own schema before its
template's, set per transaction, so one pool serves every sandbox.

Text compares case-insensitively as citext (installed in a schema of its own); the search index
is a GIN expression index over a weighted tsvector; a write transaction takes an advisory lock
named after its sandbox.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import CITEXT
from sqlalchemy.types import TypeEngine

from app.storage.backends.common import SEARCH_PATH_OPTION, DateField

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


POSTGRESQL = PostgresBackend()
