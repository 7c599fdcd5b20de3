"""The dialect seam: each back end is one object that implements the whole `Backend` protocol,
found by its dialect's name, and no module outside app/storage/backends asks which back end it
runs on."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, MetaData, Table, Text, select
from sqlalchemy.exc import DBAPIError, ProgrammingError

from app.sandbox.calllog import CALLS
from app.storage.backends import (
    Backend,
    UnknownBackend,
    backend_for,
    backend_for_url,
    registered_backends,
)
from app.storage.backends.common import SEARCH_PATH_OPTION
from app.storage.database import create_db_engine, migrate_platform
from tests.databases import DatabaseFactory, require_postgres

APP = Path(__file__).parents[2] / "app"
BACKENDS = APP / "storage" / "backends"
# The modules that may name a back end: the settings, which spell the embedded default
# database (a SQLite file) and the platform file beside it (they sit below storage, so they
# cannot ask a back end); and the reader of CRMArena dumps, which are SQLite files whatever the
# back end the org is loaded into.
NAMES_BACKENDS = {APP / "config.py", APP / "seeding" / "dump_reader.py"}
_BACKEND_NAME = re.compile(r"\b(sqlite|postgresql|postgres)\b")


def _protocol_methods() -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(Backend).items()
        if callable(member) and not name.startswith("_")
    }


def _protocol_attributes() -> list[str]:
    return [name for name in Backend.__annotations__ if not name.startswith("_")]


@pytest.mark.parametrize("backend", registered_backends(), ids=lambda backend: backend.name)
def test_a_backend_implements_every_method_with_its_signature(backend: Backend) -> None:
    methods = _protocol_methods()
    assert methods, "the protocol declares methods"
    for name, wanted in methods.items():
        implementation = getattr(type(backend), name, None)
        assert callable(implementation), f"{backend.name} lacks {name}"
        found = inspect.signature(implementation)
        shape = [(p.name, p.kind) for p in found.parameters.values()]
        assert shape == [(p.name, p.kind) for p in wanted.parameters.values()], name


@pytest.mark.parametrize("backend", registered_backends(), ids=lambda backend: backend.name)
def test_a_backend_has_every_attribute(backend: Backend) -> None:
    assert _protocol_attributes() == ["name", "one_writer", "snapshot_isolation"]
    assert isinstance(backend.name, str)
    assert isinstance(backend.one_writer, bool)
    assert backend.snapshot_isolation is None or isinstance(backend.snapshot_isolation, str)


def test_backends_are_found_by_dialect_name_and_by_url() -> None:
    names = [backend.name for backend in registered_backends()]
    assert names == ["sqlite", "postgresql"]
    for backend in registered_backends():
        assert backend_for(backend.name) is backend
    assert backend_for_url("sqlite:////tmp/x.db").name == "sqlite"
    assert backend_for_url("postgresql+psycopg://u@h:5432/db").name == "postgresql"
    assert backend_for_url("postgresql://u@h/db").name == "postgresql"
    with pytest.raises(UnknownBackend, match="'mysql'"):
        backend_for("mysql")


def _dialect_name(node: ast.AST) -> bool:
    """`<x>.dialect.name`, `dialect.name`, or a variable named for a dialect."""
    if isinstance(node, ast.Attribute) and node.attr == "name":
        inner = node.value
        return (isinstance(inner, ast.Attribute) and inner.attr == "dialect") or (
            isinstance(inner, ast.Name) and inner.id == "dialect"
        )
    names = {"dialect", "dialect_name"}
    return (isinstance(node, ast.Name) and node.id in names) or (
        isinstance(node, ast.Attribute) and node.attr in names
    )


def _branches(tree: ast.AST) -> list[int]:
    """Lines comparing a dialect's name, or looking it up in a table of their own."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(
            _dialect_name(side) for side in (node.left, *node.comparators)
        ):
            lines.append(node.lineno)
        if isinstance(node, ast.Subscript) and _dialect_name(node.slice):
            lines.append(node.lineno)
    return lines


def _names(tree: ast.AST) -> list[int]:
    """Lines whose string literals (docstrings aside) name a back end."""
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and _BACKEND_NAME.search(node.value)
    ]


def _outside_backends() -> list[Path]:
    paths = sorted(APP.rglob("*.py"))
    return [path for path in paths if BACKENDS not in path.parents]


def test_no_module_outside_the_backends_branches_on_a_dialect() -> None:
    found = [
        f"{path.relative_to(APP)}:{line}"
        for path in _outside_backends()
        for line in _branches(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == []


def test_no_module_outside_the_backends_names_one() -> None:
    found = [
        f"{path.relative_to(APP)}:{line}"
        for path in _outside_backends()
        if path not in NAMES_BACKENDS
        for line in _names(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == []


def test_the_checks_see_a_branch_and_a_name() -> None:
    branch = ast.parse(
        'if conn.dialect.name == "sqlite":\n    pass\nx = COPIERS[conn.dialect.name]'
    )
    assert _branches(branch) == [1, 3]
    assert _names(branch) == [1]
    assert _names(ast.parse('"""Runs on sqlite."""\nx = "sqlite_master"')) == []


def test_a_sandbox_path_is_set_per_transaction_and_its_failure_raised_as_sqlalchemys(
    tmp_path: Path,
) -> None:
    require_postgres()
    factory = DatabaseFactory("postgres", tmp_path)
    try:
        engine = create_db_engine(factory.new_url())
        with engine.execution_options(**{SEARCH_PATH_OPTION: "public"}).begin() as conn:
            assert conn.exec_driver_sql("SHOW search_path").scalar() == "public, localforce_ext"
        with (
            pytest.raises(ProgrammingError),
            engine.execution_options(**{SEARCH_PATH_OPTION: "1bad"}).begin(),
        ):
            pass
        with engine.connect() as conn:  # the path was the transaction's alone
            shown = conn.exec_driver_sql("SHOW search_path").scalar()
            assert shown == '"$user", public, localforce_ext'
        engine.dispose()
    finally:
        factory.drop_all()


HOSTILE_CALLS: list[dict[str, Any]] = [
    {
        "sandbox_id": "sbx1",
        "time": "2026-12-03T15:00:00.000Z",
        "method": "GET",
        "path": "/services/data/v59.0/query\ttab\nnewline\\backslash",
        "query": None,
        "status": 200,
        "duration_ms": 1.25,
    },
    {
        "sandbox_id": "sbx2",
        "time": "2026-12-03T15:00:01.000Z",
        "method": "POST",
        "path": "/",
        "query": "SELECT Name FROM Account WHERE Name = 'é ✓ \"q\"' \\N \r",
        "status": 400,
        "duration_ms": 0.0,
    },
]


def test_appended_rows_read_back_as_they_were_written(database_factory: DatabaseFactory) -> None:
    engine = create_db_engine(database_factory.new_url())
    try:
        migrate_platform(engine)
        backend = backend_for(engine.dialect.name)
        with engine.begin() as conn:
            backend.append_rows(conn, CALLS, HOSTILE_CALLS)
            backend.append_rows(conn, CALLS, [])
        with engine.connect() as conn:
            found = conn.execute(select(CALLS).order_by(CALLS.c.seq)).mappings().all()
        assert [{name: row[name] for name in HOSTILE_CALLS[0]} for row in found] == HOSTILE_CALLS
        assert [row["seq"] for row in found] == sorted({row["seq"] for row in found})
    finally:
        engine.dispose()


def test_appending_to_a_missing_table_raises_sqlalchemys_error(
    database_factory: DatabaseFactory,
) -> None:
    engine = create_db_engine(database_factory.new_url())
    missing = Table("lf_no_such_table", MetaData(), Column("name", Text))
    try:
        with pytest.raises(DBAPIError), engine.begin() as conn:
            backend_for(engine.dialect.name).append_rows(conn, missing, [{"name": "x"}])
    finally:
        engine.dispose()
