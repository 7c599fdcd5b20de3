"""The key text compares by, letter case ignored (app.storage.backends.text_key): the same on
every back end as in the reference, whatever the database's locale; and the indexes that served
`=` on a unique text field and on an Id still do."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, create_engine, literal, select, text

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.services.query import prepare
from app.soql.compiler import USER_PARAM
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.function_registry import FUNCTIONS
from app.storage.backends.postgresql import _key_body
from app.storage.backends.text_key import LAST_CASED_CODE_POINT, text_key
from app.storage.database import create_db_engine, migrate_platform
from app.storage.tables import TableSet
from app.storage.text import text_key as sql_text_key
from tests.databases import DatabaseFactory, postgres_admin_url, require_postgres
from tests.soql.reference_text import case_key

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
# Every character up to the last that has a case (no text holds a surrogate; PostgreSQL no NUL).
EVERY_CASED = "".join(
    chr(code) for code in range(1, LAST_CASED_CODE_POINT + 1) if not 0xD800 <= code <= 0xDFFF
)


def test_the_key_is_the_reference_for_every_character() -> None:
    assert text_key(EVERY_CASED) == case_key(EVERY_CASED)
    assert text_key("\U0010fffd\U000e0041") == "\U0010fffd\U000e0041"  # nothing cased beyond
    assert text_key("Straße ǆ ᾀ \u0131 \u017f ς") == "STRAßE Ǆ ᾈ I S Σ"


@pytest.fixture(scope="module")
def engine(database_factory: DatabaseFactory) -> Iterator[Engine]:
    """An empty database of the module's back end with the org's tables (and their indexes)."""
    engine = create_db_engine(database_factory.new_url())
    migrate_platform(engine)
    TableSet(REGISTRY).metadata.create_all(engine)
    yield engine
    engine.dispose()


def test_the_database_computes_the_same_key(engine: Engine) -> None:
    with engine.connect() as conn:
        for value in (EVERY_CASED, "plain ASCII _%", "sémfix ÜNÏCODE"):
            key = conn.execute(select(sql_text_key(literal(value)))).scalar_one()
            assert key == case_key(value)


def _plan(conn: Connection, soql: str) -> str:
    compiled = prepare(
        REGISTRY, TableSet(REGISTRY), soql, False, UTC_EPOCH_CALENDAR, FUNCTIONS
    ).statement.compile(conn)
    params: dict[str, Any] = {USER_PARAM: "", **compiled.params}
    if conn.dialect.name == "sqlite":
        positional = tuple(params[name] for name in compiled.positiontup or ())
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}", positional).all()
        return "\n".join(str(row[-1]) for row in rows)
    conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # a scan only if nothing else can
    return "\n".join(str(row[0]) for row in conn.exec_driver_sql(f"EXPLAIN {compiled}", params))


@pytest.mark.parametrize(
    ("soql", "index"),
    [
        ("SELECT Id FROM User WHERE Username = 'Sémfix@Example.com'", "ix_sobj_user_Username_key"),
        ("SELECT Id FROM User WHERE Id = '005000000000001AAA'", "sobj_user"),
        ("SELECT Id FROM Case WHERE AccountId = '001000000000001AAA'", "ix_sobj_case_AccountId"),
    ],
)
def test_equality_on_an_indexed_field_uses_its_index(engine: Engine, soql: str, index: str) -> None:
    with engine.connect() as conn, conn.begin():
        plan = _plan(conn, soql)
    assert "INDEX" in plan.upper() and index in plan, plan
    assert "SCAN sobj" not in plan and "Seq Scan" not in plan, plan


# -- PostgreSQL: whatever the database's locale ----------------------------------------------------


@pytest.fixture
def c_locale_database() -> Iterator[str]:
    """A PostgreSQL database whose own locale is C: its upper() knows ASCII letters only."""
    require_postgres()
    name = f"lf_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(
            text(
                f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8' "
                "LC_COLLATE 'C' LC_CTYPE 'C'"
            )
        )
    try:
        yield postgres_admin_url().set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_a_c_locale_database_keys_text_as_any_other(c_locale_database: str) -> None:
    engine = create_db_engine(c_locale_database)
    try:
        migrate_platform(engine)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT upper('é')")).scalar_one() == "é"  # ASCII only
            key = conn.execute(select(sql_text_key(literal(EVERY_CASED)))).scalar_one()
    finally:
        engine.dispose()
    assert key == case_key(EVERY_CASED)


def test_without_a_unicode_collation_the_key_is_spelt_out() -> None:
    require_postgres()
    engine = create_engine(postgres_admin_url())
    with engine.connect() as conn:
        conn.execute(
            text(
                "CREATE FUNCTION pg_temp.spelt_out(value text) RETURNS text LANGUAGE sql "
                f"IMMUTABLE AS $$ SELECT {_key_body(None)} $$"
            )
        )
        for value in (EVERY_CASED, "plain ASCII"):
            key = conn.execute(text("SELECT pg_temp.spelt_out(:v)"), {"v": value}).scalar_one()
            assert key == case_key(value)
    engine.dispose()
