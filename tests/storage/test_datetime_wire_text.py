"""DateTime columns read straight to their wire text (Backend.wire_datetimes), and the columns a
query may read so: the same text as formatting the datetime SQLAlchemy would have made."""

from __future__ import annotations

import gc
import weakref
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import DateTime, literal, select
from sqlalchemy.dialects import postgresql, sqlite

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.metadata.values import format_datetime
from app.services.query import prepare
from app.soql.bound import BoundColumn
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.function_registry import FUNCTIONS
from app.soql.results import wire_datetime_columns
from app.storage.backends import Backend, WireDatetimes, backend_for, registered_backends
from app.storage.tables import TableSet

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
TABLES = TableSet(REGISTRY)
_DIALECT = sqlite.dialect()
_STORE = DateTime().dialect_impl(_DIALECT).bind_processor(_DIALECT)
# SQLite's reader of a column's stored text.
WIRE_TEXT = backend_for("sqlite").wire_datetimes(select(literal(1)), frozenset({0})).readers[0]


@given(st.datetimes())
def test_stored_text_reads_as_the_formatted_datetime(value: datetime) -> None:
    assert _STORE is not None
    assert WIRE_TEXT(_STORE(value)) == format_datetime(value)


def test_text_in_another_form_is_read_as_sqlalchemy_reads_it() -> None:
    assert WIRE_TEXT("2021-01-01 00:00:00") == "2021-01-01T00:00:00.000+0000"
    assert WIRE_TEXT("2021-01-01 09:08:07.5") == "2021-01-01T09:08:07.500+0000"
    assert WIRE_TEXT(None) is None


def test_postgresql_writes_the_text_in_its_sql_and_leaves_other_statements_alone() -> None:
    compiled = prepare(
        REGISTRY,
        TABLES,
        "SELECT Id, CreatedDate, Subject FROM Case",
        False,
        UTC_EPOCH_CALENDAR,
        FUNCTIONS,
    )
    columns = wire_datetime_columns(compiled)
    backend = backend_for("postgresql")
    wire = backend.wire_datetimes(compiled.statement, columns)
    assert wire.statement is not None
    sql = str(wire.statement.compile(dialect=postgresql.dialect()))  # type: ignore[no-untyped-call]
    assert sql.count("to_char(") == 1 and wire.readers == {}
    assert 'to_char(t0."CreatedDate", \'YYYY-MM-DD"T"HH24:MI:SS.MS"+0000"\')' in sql
    assert backend.wire_datetimes(compiled.statement, frozenset()) == WireDatetimes(None, {})


@pytest.mark.parametrize("backend", registered_backends(), ids=lambda backend: backend.name)
def test_what_a_backend_makes_lets_the_statement_go(backend: Backend) -> None:
    """A cache keyed weakly by the statement (services.query) must not keep it alive."""
    cases = TABLES["Case"]
    statement = select(cases.c.Id, cases.c.CreatedDate)
    made = [backend.wire_datetimes(statement, c) for c in (frozenset({1}), frozenset())]
    gone = weakref.ref(statement)
    del statement
    gc.collect()
    assert gone() is None
    assert made[0].readers or made[0].statement is not None


def _columns(query: str) -> list[str]:
    """The selected fields whose values a back end may read straight to wire text."""
    compiled = prepare(REGISTRY, TABLES, query, False, UTC_EPOCH_CALENDAR, FUNCTIONS)
    indexes = wire_datetime_columns(compiled)
    return [
        item.path.field.name
        for item, slot in zip(compiled.bound.select, compiled.value_index, strict=True)
        if slot in indexes and isinstance(item, BoundColumn)
    ]


def test_plain_datetime_fields_qualify_parents_too() -> None:
    query = "SELECT Id, CreatedDate, Subject, Account.CreatedDate, ClosedDate FROM Case"
    assert _columns(query) == ["CreatedDate", "CreatedDate", "ClosedDate"]


def test_formatted_aggregated_and_other_fields_do_not() -> None:
    assert _columns("SELECT FORMAT(CreatedDate) f, LastModifiedDate FROM Case") == [
        "LastModifiedDate"
    ]
    assert _columns("SELECT MAX(CreatedDate) latest FROM Case") == []
    assert _columns("SELECT Id, Subject, IsClosed FROM Case") == []
