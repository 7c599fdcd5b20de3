"""A request's transaction is begun by the thread that runs its route: many more concurrent
requests than the thread pool has threads or the database pool has connections all finish (they
used to lock up: threads waiting for a connection filled the pool while the requests holding
connections waited for a thread), and every route that takes a transaction is one that begins
it itself."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute, iter_route_contexts
from sqlalchemy import event

from app.api.deps import get_connection
from app.api.state import AppState
from app.main import create_app
from app.sandbox.model import DEFAULT_ID
from tests.conftest import API, make_settings
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

# Past anyio's 40 threads and both back ends' pools (15 and 20 connections).
CLIENTS = 96
ROUNDS = 3
# A lockup fails either way: the requests waiting on it give up at the pool's 30 s checkout
# timeout with a 500 (UNKNOWN_EXCEPTION), which the count of statuses refuses, and a lockup the
# timeout does not break ends here. The readers' 288 queries took up to 22 s on two cores loaded
# six times over (two CPU hogs and three other test runs), so the deadline leaves room for that.
DEADLINE_SECONDS = 60
QUERIES = (
    "SELECT Id, Name FROM Account ORDER BY Name LIMIT 5",
    "SELECT Status, COUNT(Id) n FROM Case GROUP BY Status",
    "SELECT Id, (SELECT Id FROM Contacts) FROM Account LIMIT 3",
)


@pytest.fixture(scope="module")
def server(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> Iterator[tuple[str, AppState]]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}", app.state.localforce


def _token(base: str) -> str:
    response = httpx.post(
        f"{base}/services/oauth2/token",
        data={"grant_type": "password", "username": "u", "password": "p"},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def logged_in(base: str) -> httpx.AsyncClient:
    """A client of the server with a connection for each of CLIENTS at once."""
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    headers = {"Authorization": f"Bearer {_token(base)}"}
    return httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60)


@pytest.mark.asyncio
async def test_many_more_readers_than_threads_or_connections_all_finish(
    server: tuple[str, AppState],
) -> None:
    statuses: Counter[int] = Counter()
    async with logged_in(server[0]) as sf:

        async def reader(index: int) -> None:
            for round_ in range(ROUNDS):
                soql = QUERIES[(index + round_) % len(QUERIES)]
                response = await sf.get(f"{API}/query", params={"q": soql})
                statuses[response.status_code] += 1

        async with asyncio.timeout(DEADLINE_SECONDS):
            await asyncio.gather(*(reader(index) for index in range(CLIENTS)))
    assert statuses == Counter({200: CLIENTS * ROUNDS})


@pytest.mark.asyncio
async def test_readers_and_writers_together_all_finish(server: tuple[str, AppState]) -> None:
    statuses: Counter[int] = Counter()
    async with logged_in(server[0]) as sf:

        async def client(index: int) -> None:
            if index % 4 == 0:
                body = {"LastName": f"Ztx{index}"}
                response = await sf.post(f"{API}/sobjects/Contact", json=body)
            else:
                response = await sf.get(f"{API}/query", params={"q": QUERIES[index % 3]})
            statuses[response.status_code] += 1

        async with asyncio.timeout(DEADLINE_SECONDS):
            await asyncio.gather(*(client(index) for index in range(CLIENTS)))
    assert statuses == Counter({200: CLIENTS - CLIENTS // 4, 201: CLIENTS // 4})


def test_the_transaction_is_begun_on_the_thread_that_runs_the_route(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> None:
    """The pooled connection is checked out by the thread the route's query runs on, and is
    back in the pool when the response arrives. (PostgreSQL's sandboxes and platform share
    one engine: the call log's flusher may hold another of its connections at that moment,
    so it is the route's own connection whose return is checked.)"""
    from fastapi.testclient import TestClient

    url = database_factory.new_url(template=sandbox_ready_template)
    # No Bulk job runner: its poll would check out a connection of the same engine (PostgreSQL).
    app = create_app(make_settings(url, database_factory.workdir, bulk_runner=False))
    with TestClient(app) as client:
        state: AppState = app.state.localforce
        token = client.post(
            "/services/oauth2/token",
            data={"grant_type": "password", "username": "u", "password": "p"},
        ).json()["access_token"]
        engine = state.sandboxes.get(DEFAULT_ID).engine
        checkouts: list[tuple[int, int]] = []  # (thread, DBAPI connection)
        executes: list[tuple[int, int]] = []
        checkins: list[int] = []

        def on_checkout(dbapi_connection: Any, *_: Any) -> None:
            checkouts.append((threading.get_ident(), id(dbapi_connection)))

        def on_checkin(dbapi_connection: Any, *_: Any) -> None:
            checkins.append(id(dbapi_connection))

        def on_execute(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            if "account" in statement.lower():
                executes.append((threading.get_ident(), id(conn.connection.dbapi_connection)))

        event.listen(engine, "checkout", on_checkout)
        event.listen(engine, "checkin", on_checkin)
        event.listen(engine, "before_cursor_execute", on_execute)
        try:
            response = client.get(
                f"{API}/query",
                params={"q": "SELECT Id FROM Account LIMIT 1"},
                headers={"Authorization": f"Bearer {token}"},
            )
        finally:
            event.remove(engine, "checkout", on_checkout)
            event.remove(engine, "checkin", on_checkin)
            event.remove(engine, "before_cursor_execute", on_execute)
        assert response.status_code == 200, response.text
        assert len(executes) == 1
        assert executes[0] in checkouts  # checked out by the thread that ran the query
        assert executes[0][1] in checkins  # and back in the pool before the response


def test_every_route_that_takes_a_transaction_begins_it_itself(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> None:
    """A synchronous route handed a pending transaction could not use it: each one that takes
    a connection is wrapped (a coroutine that begins it in its one trip to the thread pool) or
    is an async route that begins it where it runs its work."""
    url = database_factory.new_url(template=sandbox_ready_template)
    app = create_app(make_settings(url, database_factory.workdir))
    taking = []
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute):
            continue
        if get_connection in _calls(route.dependant):
            taking.append(route.path)
            assert inspect.iscoroutinefunction(route.endpoint), route.path
    assert f"{API.replace('v59.0', '{version}')}/query" in taking
    assert len(taking) >= 20


def _calls(dependant: Any) -> Iterator[Any]:
    for sub in dependant.dependencies:
        yield sub.call
        yield from _calls(sub)


def test_routes_run_on_as_many_threads_as_the_settings_say(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> None:
    from anyio import to_thread
    from fastapi.testclient import TestClient

    async def tokens() -> float:
        return to_thread.current_default_thread_limiter().total_tokens

    url = database_factory.new_url(template=sandbox_ready_template)
    app = create_app(make_settings(url, database_factory.workdir, request_threads=3))
    with TestClient(app) as client:
        assert client.portal is not None
        assert client.portal.call(tokens) == 3
