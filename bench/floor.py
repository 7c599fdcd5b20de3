"""The floor every benchmark divides by: a bare FastAPI app on localforce's server stack (uvicorn,
its httptools protocol, the same worker count and log level) that answers the SQL localforce
compiles for a SOQL query, from the same database, in Salesforce-shaped pages, and checks nothing.

It parses no SOQL on the hot path: a query text is compiled once (by localforce's own
`prepare`) and its statement rendered once to the driver's SQL text, with its (constant)
parameters as literals; each request runs that text on the driver's cursor (no result
processing: SQLite hands dates back as text), then child subqueries as the server's execute
step runs them, names the columns by the statement's labels, and returns `records` with
`attributes`, `totalSize`, `done` and, past 2,000 records, a `nextRecordsUrl` that a client
follows as it follows Salesforce's. The rest of the result waits in this process's memory as
rows, shaped a page at a time, until its last page is read (a keep-alive connection stays on
one worker, so a client following its locators finds them). `GET /hello` is the trivial
request: no session, a small JSON body.

Run alone: `python -m bench.floor [--workers N] [--port P]`, with the LOCALFORCE_* variables a
`localforce serve` of the same data would get (LOCALFORCE_DATA_DIR, LOCALFORCE_DATABASE_URL).
"""

from __future__ import annotations

import argparse
import itertools
import os
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson
import uvicorn
from anyio import to_thread
from fastapi import FastAPI, Response
from sqlalchemy import Connection, Dialect, Engine, Select

from app.config import Settings
from app.sandbox.schemas import Schemas
from app.services.query import prepare
from app.soql.compiler import USER_PARAM, ChildQuery, CompiledQuery
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.execute import ResultRows, execute
from app.soql.function_registry import FUNCTIONS
from app.storage.database import create_db_engine
from app.storage.tables import TableSet
from tests.servers import serve_in_thread

API = "/services/data/v59.0"
PAGE_SIZE = 2000
OPEN_RESULTS = 256  # locators kept per process; the oldest goes first


def _default(value: object) -> object:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(type(value).__name__)


def json_response(content: Any, status_code: int = 200) -> Response:
    return Response(
        orjson.dumps(content, default=_default),
        status_code=status_code,
        media_type="application/json;charset=UTF-8",
    )


@dataclass(frozen=True)
class Shape:
    """How one statement's rows become records: its object and its column names."""

    sobject: str
    columns: tuple[str, ...]
    aggregate: bool
    children: tuple[tuple[int, int, str, Shape], ...]  # (slot, link_index, name, shape)


def shape_of(compiled: CompiledQuery) -> Shape:
    children = tuple(
        (index, slot.link_index, slot.compiled.bound.sobject.name, shape_of(slot.compiled))
        for index, slot in enumerate(compiled.value_index)
        if isinstance(slot, ChildQuery)
    )
    return Shape(
        sobject=compiled.bound.sobject.name,
        columns=tuple(str(column.name) for column in compiled.statement.selected_columns),
        aggregate=bool(compiled.bound.is_aggregate or compiled.bound.group_kind),
        children=children,
    )


def records(shape: Shape, result: ResultRows) -> list[dict[str, Any]]:
    """Each row as a record: `attributes`, then every column under its label; a child
    subquery's rows as a nested page under the subquery's object name."""
    kids: list[tuple[str, dict[Any, list[dict[str, Any]]]]] = []
    for slot, (_, link_index, name, child_shape) in zip(
        result.children, shape.children, strict=True
    ):
        grouped: dict[Any, list[dict[str, Any]]] = {}
        for row, child in zip(slot.rows.rows, records(child_shape, slot.rows), strict=True):
            grouped.setdefault(row[link_index], []).append(child)
        kids.append((name, grouped))
    out = []
    url = f"{API}/sobjects/{shape.sobject}"
    for row in result.rows:
        record: dict[str, Any] = (
            {"attributes": {"type": "AggregateResult"}}
            if shape.aggregate
            else {"attributes": {"type": shape.sobject, "url": f"{url}/{row[0]}"}}
        )
        record.update(zip(shape.columns, row, strict=False))
        for name, grouped in kids:
            found = grouped.get(row[0])
            record[name] = (
                {"totalSize": len(found), "done": True, "records": found} if found else None
            )
        out.append(record)
    return out


def page(
    rows: Sequence[dict[str, Any]], start: int, total: int, locator: str | None
) -> dict[str, Any]:
    """The page of `rows` (records `start` onwards of a result of `total`) as Salesforce sends
    it: `nextRecordsUrl` names the locator and the next record when more remain."""
    stop = start + len(rows)
    body: dict[str, Any] = {"totalSize": total, "done": stop >= total}
    if stop < total:
        if locator is None:
            raise ValueError("a partial page needs a locator")
        body["nextRecordsUrl"] = f"{API}/query/{locator}-{stop}"
    body["records"] = list(rows)
    return body


class Floor:
    """The compiled statements and the open results of one process."""

    def __init__(self, engine: Engine, schema_registry: Any, tables: TableSet) -> None:
        self.engine = engine
        self.registry = schema_registry
        self.tables = tables
        self.compiled: dict[str, tuple[CompiledQuery, Shape, str | None]] = {}
        self.open: OrderedDict[str, tuple[Shape, ResultRows]] = OrderedDict()
        self.numbers = itertools.count(1)
        self.lock = threading.Lock()

    def statement(self, soql: str) -> tuple[CompiledQuery, Shape, str | None]:
        found = self.compiled.get(soql)
        if found is None:
            compiled = prepare(
                self.registry, self.tables, soql, False, UTC_EPOCH_CALENDAR, FUNCTIONS
            )
            found = (compiled, shape_of(compiled), driver_sql(compiled, self.engine.dialect))
            self.compiled[soql] = found
        return found

    def first_page(self, soql: str) -> dict[str, Any]:
        compiled, shape, sql = self.statement(soql)
        with self.engine.connect() as conn:
            if sql is None:
                rows: Sequence[Sequence[Any]] = conn.execute(
                    compiled.statement, {USER_PARAM: ""}
                ).all()
            else:
                cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                cursor.execute(sql)
                rows = cursor.fetchall()
                cursor.close()
            result = execute(compiled, rows, _fetcher(conn))
        total = len(result)
        locator = None
        if total > PAGE_SIZE:
            with self.lock:
                locator = f"01g{next(self.numbers):015d}"
                self.open[locator] = (shape, result)
                while len(self.open) > OPEN_RESULTS:
                    self.open.popitem(last=False)
        return page(records(shape, result.window(0, PAGE_SIZE)), 0, total, locator)

    def next_page(self, locator: str, start: int) -> dict[str, Any] | None:
        found = self.open.get(locator)
        if found is None:
            return None
        shape, result = found
        if start + PAGE_SIZE >= len(result):
            self.open.pop(locator, None)  # the last page: the client is done with it
        rows = records(shape, result.window(start, start + PAGE_SIZE))
        return page(rows, start, len(result), locator)


def driver_sql(compiled: CompiledQuery, dialect: Dialect) -> str | None:
    """The statement as the driver's SQL text, its parameters rendered as literals; None when
    a value has no literal form (then the floor executes the statement through SQLAlchemy)."""
    statement = compiled.statement.params({USER_PARAM: ""})
    try:
        return str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    except Exception:
        return None


def _fetcher(conn: Connection) -> Any:
    def fetch(statement: Select[Any], params: dict[str, Any]) -> Sequence[Sequence[Any]]:
        return conn.execute(statement, {USER_PARAM: "", **params}).all()

    return fetch


def create_floor_app(settings: Settings | None = None) -> FastAPI:
    """The floor over the database `settings` name (by default the LOCALFORCE_* environment)."""
    settings = settings or Settings()
    schema = Schemas(settings.seed_dir)(settings.org)
    floor = Floor(create_db_engine(settings.effective_database_url), schema.registry, schema.tables)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # As localforce's: as many threads run routes as its settings give it. With anyio's 40,
        # threads outnumbered the engine's pooled connections, and on PostgreSQL the floor
        # opened and closed connections under load.
        to_thread.current_default_thread_limiter().total_tokens = settings.request_threads
        yield

    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, lifespan=lifespan)

    @app.get("/hello")
    def hello() -> Response:
        return json_response({"hello": "world"})

    @app.get(f"{API}/query")
    def query(q: str) -> Response:
        return json_response(floor.first_page(q))

    @app.get(f"{API}/query/{{locator}}")
    def query_more(locator: str) -> Response:
        cursor, _, start = locator.rpartition("-")
        body = floor.next_page(cursor, int(start)) if start.isdigit() else None
        if body is None:
            error = [{"message": "invalid query locator", "errorCode": "INVALID_QUERY_LOCATOR"}]
            return json_response(error, 400)
        return json_response(body)

    app.state.floor = floor
    return app


@contextmanager
def floor_in_thread(settings: Settings) -> Iterator[str]:
    """The floor served from a thread of this process (as bench.server serves localforce for
    the latency benchmarks); yields its base URL."""
    app = create_floor_app(settings)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"
    app.state.floor.engine.dispose()


def main() -> None:
    from app.serving import uvicorn_options
    from app.workers import serve_workers

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("LOCALFORCE_PORT", 8001)))
    args = parser.parse_args()
    # As `localforce serve`: one process serves its app; several each build it from the env,
    # each on a listening socket of its own.
    if args.workers > 1:
        config = uvicorn.Config(
            "bench.floor:create_floor_app",
            factory=True,
            workers=args.workers,
            host=args.host,
            port=args.port,
            log_level="info",
            **uvicorn_options(),
        )
        serve_workers(config)
        return
    uvicorn.run(
        create_floor_app(), host=args.host, port=args.port, log_level="info", **uvicorn_options()
    )


if __name__ == "__main__":
    main()
