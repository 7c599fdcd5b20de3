"""Reads run on the driver's cursor: a cached statement's rows without SQLAlchemy's
per-execution work.

`Connection.execute` of an already compiled statement still builds a cache key, an execution
context, a result and a Row per row: about 180 us for ten rows here, where the driver's own
execute and fetch take 25. A statement read this way is rendered once (`DriverStatement`:
its SQL text, its constant parameters with their bind processing applied, its result
processors), then each execution passes the text through the connection's
`before_cursor_execute` listeners (a sandbox's schema tag), runs it in the connection's open
transaction and applies the result processors to the driver's rows.

Only what renders to fixed text qualifies (values SQLAlchemy writes in as literals are written
in once): a statement with an expanding parameter (an IN list), or one that fails to render,
goes through `Connection.execute`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Dialect, Select
from sqlalchemy.sql.compiler import SQLCompiler

from app.storage.backends.common import raised_as_sqlalchemys

Processor = Callable[[Any], Any] | None


@dataclass
class DriverStatement:
    """One statement as the driver takes it, for one dialect."""

    sql: str
    positions: tuple[str, ...] | None  # a positional driver's parameter order; None: named
    constants: dict[str, Any]  # every parameter's value, bind-processed
    bind_processors: Mapping[str, Callable[[Any], Any]]  # for the per-execution ones
    result_types: tuple[Any, ...]  # each result column's SQLAlchemy type
    # Result processors by the driver's column type codes (PostgreSQL's differ by column).
    _processors: dict[tuple[Any, ...], tuple[Processor, ...]] = field(default_factory=dict)

    def parameters(self, values: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        merged = dict(self.constants)
        for name, value in values.items():
            process = self.bind_processors.get(name)
            merged[name] = value if process is None or value is None else process(value)
        if self.positions is None:
            return merged
        return [merged[name] for name in self.positions]

    def processors(self, dialect: Dialect, description: Sequence[Any]) -> tuple[Processor, ...]:
        codes = tuple(column[1] for column in description)
        found = self._processors.get(codes)
        if found is None:
            found = self._processors[codes] = tuple(
                type_.dialect_impl(dialect).result_processor(dialect, code)
                for type_, code in zip(self.result_types, codes, strict=True)
            )
        return found


# Per dialect, per statement object (a prepared query keeps its statement for its life).
_statements: dict[str, weakref.WeakKeyDictionary[Select[Any], DriverStatement | None]] = {}


def _render(statement: Select[Any], dialect: Dialect) -> DriverStatement | None:
    compiled = statement.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    if not isinstance(compiled, SQLCompiler):
        return None
    binds = compiled.binds
    if any(bind.expanding for bind in binds.values()):
        return None
    processors = {
        name: process
        for name, bind in binds.items()
        if (process := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
    }
    constants = {}
    for name, value in compiled.construct_params(_check=False).items():
        process = processors.get(name)
        constants[name] = value if process is None or value is None else process(value)
    positions = tuple(compiled.positiontup or ()) if compiled.positional else None
    result_types = tuple(column.type for column in statement.selected_columns)
    return DriverStatement(compiled.string, positions, constants, processors, result_types)


def driver_statement(statement: Select[Any], dialect: Dialect) -> DriverStatement | None:
    """`statement` as its dialect's driver takes it, rendered once; None when it cannot be."""
    per_dialect = _statements.setdefault(dialect.name, weakref.WeakKeyDictionary())
    try:
        return per_dialect[statement]
    except KeyError:
        pass
    try:
        found = _render(statement, dialect)
    except Exception:  # whatever will not render as fixed text goes the general way
        found = None
    per_dialect[statement] = found
    return found


def read_all(
    conn: Connection,
    statement: Select[Any],
    values: Mapping[str, Any],
    readers: Mapping[int, Callable[[Any], Any]] | None = None,
) -> Sequence[Sequence[Any]]:
    """Every row of `statement` with the per-execution `values`, read in `conn`'s transaction.
    `readers` replace the result processing of the columns they name (by index) when the
    statement runs on the cursor; through `Connection.execute` the columns are processed as
    their types say."""
    ready = driver_statement(statement, conn.dialect)
    if ready is None:
        return conn.execute(statement, dict(values)).all()
    sql, parameters = ready.sql, ready.parameters(values)
    driver = conn.connection.dbapi_connection
    with closing(driver.cursor()) as cursor:  # type: ignore[union-attr]
        for listener in conn.dispatch.before_cursor_execute:
            sql, parameters = listener(conn, cursor, sql, parameters, None, False)
        with raised_as_sqlalchemys(conn, sql, parameters):
            cursor.execute(sql, parameters)
            rows = cursor.fetchall()
        processors = ready.processors(conn.dialect, cursor.description)
    if readers:
        processors = tuple(readers.get(i, p) for i, p in enumerate(processors))
    if not any(processors):
        return list(rows)
    return [
        tuple(
            value if process is None else process(value)
            for process, value in zip(processors, row, strict=True)
        )
        for row in rows
    ]
