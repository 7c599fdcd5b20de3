"""Reads on the driver's cursor (app.storage.driver_reads): the same rows, typed the same, as
`Connection.execute` gives, on every back end; through the connection's listeners; falling
back where a statement has no fixed text; and a driver's error raised as SQLAlchemy's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

import pytest
from sqlalchemy import (
    Engine,
    Select,
    bindparam,
    column,
    event,
    insert,
    literal_column,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.metadata.values import format_datetime
from app.services.query import prepare
from app.soql.compiler import USER_PARAM
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.execute import ResultRows
from app.soql.function_registry import FUNCTIONS
from app.soql.results import shape_rows, wire_datetime_columns
from app.storage.backends import backend_for
from app.storage.database import create_db_engine, migrate_platform
from app.storage.driver_reads import driver_statement, read_all
from app.storage.tables import TableSet
from tests.databases import DatabaseFactory

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
TABLES = TableSet(REGISTRY)
USER = "005000000000001AAA"
ACCOUNTS = [
    {
        "Id": "001000000000001AAA",
        "Name": "Acme",
        "IsDeleted": False,
        "CreatedDate": datetime(2024, 3, 1, 12, 30, 5, 250000),
        "AnnualRevenue": 1250.5,
        "NumberOfEmployees": 12,
        "OwnerId": USER,
    },
    {
        "Id": "001000000000002AAA",
        "Name": "Globex",
        "IsDeleted": False,
        "CreatedDate": datetime(2021, 1, 1),
        "AnnualRevenue": None,
        "NumberOfEmployees": None,
        "OwnerId": "005000000000002AAA",
    },
]
ORDER = {
    "Id": "801000000000001AAA",
    "OrderNumber": "00000100",
    "AccountId": "001000000000001AAA",
    "IsDeleted": False,
    "EffectiveDate": date(2024, 5, 17),
    "Status": "Draft",
    "OwnerId": USER,
}


@pytest.fixture(scope="module")
def engine(database_factory: DatabaseFactory) -> Iterator[Engine]:
    engine = create_db_engine(database_factory.new_url())
    migrate_platform(engine)
    TABLES.metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(insert(TABLES["Account"]), ACCOUNTS)
        conn.execute(insert(TABLES["Order"]), [ORDER])
    yield engine
    engine.dispose()


QUERIES = [
    "SELECT Id, Name, CreatedDate, AnnualRevenue, NumberOfEmployees, IsDeleted FROM Account",
    "SELECT Id FROM Account WHERE CreatedDate > 2023-01-01T00:00:00Z",
    "SELECT Id FROM Account WHERE Name = 'acme' AND NumberOfEmployees >= 10",
    "SELECT Id FROM Account WHERE OwnerId = :user",
    "SELECT COUNT(Id) n, MAX(CreatedDate) latest FROM Account",
    "SELECT Id, EffectiveDate, Account.Name FROM Order WHERE EffectiveDate = 2024-05-17",
    "SELECT Name FROM Account WHERE Name IN ('Acme', 'Initech')",
]


def _soql(query: str) -> Select[Any]:
    return prepare(
        REGISTRY,
        TABLES,
        query.replace(":user", "'" + USER + "'"),
        False,
        UTC_EPOCH_CALENDAR,
        FUNCTIONS,
    ).statement


@pytest.mark.parametrize("query", QUERIES)
def test_rows_are_what_sqlalchemy_gives(engine: Engine, query: str) -> None:
    statement = _soql(query)
    with engine.begin() as conn:
        expected = [tuple(row) for row in conn.execute(statement, {USER_PARAM: USER}).all()]
        rows = [tuple(row) for row in read_all(conn, statement, {USER_PARAM: USER})]
    assert rows == expected
    assert rows, "each query finds a row"
    for got, want in zip(rows, expected, strict=True):
        assert [type(value) for value in got] == [type(value) for value in want]


def test_typed_values_come_back_typed(engine: Engine) -> None:
    statement = _soql("SELECT CreatedDate, IsDeleted FROM Account WHERE Name = 'Acme'")
    with engine.begin() as conn:
        rows = read_all(conn, statement, {USER_PARAM: USER})
    assert [tuple(row)[-2:] for row in rows] == [(datetime(2024, 3, 1, 12, 30, 5, 250000), False)]


def test_an_expanding_parameter_goes_the_general_way(engine: Engine) -> None:
    accounts = TABLES["Account"]
    statement: Select[Any] = select(accounts.c.Id).where(
        accounts.c.Id.in_(bindparam("ids", expanding=True))
    )
    assert driver_statement(statement, engine.dialect) is None
    assert driver_statement(_soql(QUERIES[0]), engine.dialect) is not None
    with engine.begin() as conn:
        rows = read_all(conn, statement, {"ids": ["001000000000002AAA", "001000000000009AAA"]})
    assert [tuple(row) for row in rows] == [("001000000000002AAA",)]


def test_the_connection_listeners_see_the_statement(engine: Engine) -> None:
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(args[2])

    statement = _soql("SELECT Id FROM Account WHERE Name = 'Globex'")
    event.listen(engine, "before_cursor_execute", record)
    try:
        with engine.begin() as conn:
            rows = read_all(conn, statement, {USER_PARAM: USER})
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert [row[0] for row in rows] == ["001000000000002AAA"]
    assert any("sobj_account" in sql.lower() for sql in seen)


def test_a_driver_error_is_raised_as_sqlalchemys(engine: Engine) -> None:
    statement: Select[Any] = select(literal_column("1")).select_from(text("no_such_table"))
    with pytest.raises(DBAPIError) as raised, engine.begin() as conn:
        read_all(conn, statement, {})
    assert "no_such_table" in str(raised.value.orig)


def test_a_per_execution_value_is_bound_each_time(engine: Engine) -> None:
    accounts = TABLES["Account"]
    statement: Select[Any] = (
        select(column("Id"))
        .select_from(accounts)
        .where(accounts.c.OwnerId == bindparam(USER_PARAM))
    )
    with engine.begin() as conn:
        first = read_all(conn, statement, {USER_PARAM: USER})
        second = read_all(conn, statement, {USER_PARAM: "005000000000002AAA"})
    assert [row[0] for row in first] == ["001000000000001AAA"]
    assert [row[0] for row in second] == ["001000000000002AAA"]


def test_readers_replace_the_processing_of_the_columns_they_name(engine: Engine) -> None:
    compiled = prepare(
        REGISTRY,
        TABLES,
        "SELECT Name, CreatedDate FROM Account ORDER BY Name",
        False,
        UTC_EPOCH_CALENDAR,
        FUNCTIONS,
    )
    name, created = compiled.value_index
    assert isinstance(name, int) and isinstance(created, int)
    with engine.begin() as conn:
        rows = read_all(conn, compiled.statement, {USER_PARAM: USER}, {name: str.upper})
    assert [(row[name], type(row[created])) for row in rows] == [
        ("ACME", datetime),
        ("GLOBEX", datetime),
    ]


WIRE_DATETIMES = [
    (datetime(2024, 3, 1, 12, 30, 5, 250000), "2024-03-01T12:30:05.250+0000"),
    (datetime(2021, 1, 1), "2021-01-01T00:00:00.000+0000"),
    (datetime(5, 3, 4, 1, 2, 3, 999999), "0005-03-04T01:02:03.999+0000"),
    (datetime(9999, 12, 31, 23, 59, 59, 1000), "9999-12-31T23:59:59.001+0000"),
]


def test_datetimes_read_as_wire_text_are_what_formatting_gives(
    database_factory: DatabaseFactory,
) -> None:
    engine = create_db_engine(database_factory.new_url())
    migrate_platform(engine)  # the back end's extensions and functions
    TABLES.metadata.create_all(engine, tables=[TABLES["Account"]])
    accounts = [
        {**ACCOUNTS[0], "Id": f"0010000000000{n:02d}AAA", "Name": f"A{n}", "CreatedDate": value}
        for n, (value, _) in enumerate(WIRE_DATETIMES)
    ]
    query = "SELECT Id, CreatedDate, Name FROM Account ORDER BY Name"
    compiled = prepare(REGISTRY, TABLES, query, False, UTC_EPOCH_CALENDAR, FUNCTIONS)
    wire = backend_for(engine.dialect.name).wire_datetimes(
        compiled.statement, wire_datetime_columns(compiled)
    )
    try:
        with engine.begin() as conn:
            conn.execute(insert(TABLES["Account"]), accounts)
            statement = compiled.statement if wire.statement is None else wire.statement
            rows = read_all(conn, statement, {USER_PARAM: USER}, wire.readers)
    finally:
        engine.dispose()
    shaped = shape_rows(compiled, ResultRows(rows), "/services/data/v59.0")
    assert [record["CreatedDate"] for record in shaped] == [text for _, text in WIRE_DATETIMES]
    assert [format_datetime(value) for value, _ in WIRE_DATETIMES] == [
        text for _, text in WIRE_DATETIMES
    ]
