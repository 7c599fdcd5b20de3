"""A seeded org served by uvicorn in a background thread, for benchmarks."""

from __future__ import annotations

import http.client
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from sqlalchemy import create_engine, make_url, text

from app.api.state import AppState
from app.config import Settings
from app.main import create_app
from app.seeding.bootstrap import ensure_database
from app.state import build_state
from tests.conftest import TEST_ADMIN_KEY
from tests.servers import serve_in_thread

API = "/services/data/v59.0"
POSTGRES_ADMIN = os.environ.get(
    "LOCALFORCE_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@contextmanager
def bench_database(backend: str) -> Iterator[str]:
    """The database URL of a bench's server on `backend`: "" for SQLite (its data directory's
    files), else a new PostgreSQL database, dropped at the end with every database named after
    it (the templates the server made beside it)."""
    if backend == "sqlite":
        yield ""
        return
    name = f"lf_bench_{time.time_ns()}"
    admin = create_engine(POSTGRES_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(POSTGRES_ADMIN).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            names = conn.execute(text("SELECT datname FROM pg_database")).scalars().all()
            for made in names:
                if made.startswith(name):
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{made}" WITH (FORCE)'))
        admin.dispose()


def seeded_data_dir(workdir: Path, database_url: str = "") -> Path:
    """A data directory under `workdir` holding the seeded org (or, with `database_url`, that
    database seeded), for a server process."""
    data_dir = workdir / "data"
    settings = Settings(data_dir=data_dir, database_url=database_url)
    state = build_state(settings)
    ensure_database(state.engine, state.registry, state.tables, settings)
    state.engine.dispose()
    return data_dir


class HttpClient:
    """A logged-in keep-alive HTTP/1.1 connection: the lightest client, so the figures are the
    server's, not a client library's."""

    def __init__(self, base_url: str, *, login: bool = True) -> None:
        parts = urlsplit(base_url)
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port)
        self.headers: dict[str, str] = {}
        if not login:  # the floor checks no session
            return
        token = self.request(
            "POST",
            "/services/oauth2/token",
            b"grant_type=password&username=bench&password=x",
            {"Content-Type": "application/x-www-form-urlencoded"},
        )["access_token"]
        self.headers = {"Authorization": f"Bearer {token}"}

    def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[dict[str, str], bytes]:
        """The response's headers and body; an error status raises."""
        try:
            self.connection.request(method, path, body=body, headers=headers or {})
            response = self.connection.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # The server closes idle keep-alive connections; open a new one and go again.
            self.connection.close()
            self.connection.request(method, path, body=body, headers=headers or {})
            response = self.connection.getresponse()
        payload = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {payload[:200]!r}")
        return dict(response.getheaders()), payload

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        return json.loads(self.send(method, path, body, headers)[1])

    def get(self, path: str) -> Any:
        return self.request("GET", path, headers=self.headers)

    def delete(self, path: str, headers: dict[str, str] | None = None) -> None:
        self.connection.request(
            "DELETE", path, headers=self.headers if headers is None else headers
        )
        response = self.connection.getresponse()
        response.read()


@dataclass(frozen=True)
class RunningOrg:
    base_url: str
    state: AppState


@contextmanager
def running_org(data_dir: Path, seed: int = 42, **overrides: Any) -> Iterator[RunningOrg]:
    """The org served with the tests' admin key (ADMIN_HEADERS carries it)."""
    settings = Settings(data_dir=data_dir, seed=seed, **{"admin_key": TEST_ADMIN_KEY, **overrides})
    seeding = build_state(settings)
    ensure_database(seeding.engine, seeding.registry, seeding.tables, settings)
    seeding.engine.dispose()
    app = create_app(settings)
    with serve_in_thread(app) as port:
        yield RunningOrg(base_url=f"http://127.0.0.1:{port}", state=app.state.localforce)


def query_all(client: HttpClient, soql: str, token: str | None = None) -> int:
    """Run `soql` over HTTP and follow `nextRecordsUrl` to the end, as a client's `query_all`
    does; returns the number of records read."""
    headers = {"Authorization": f"Bearer {token}"} if token else client.headers
    body = client.request("GET", f"{API}/query?" + urlencode({"q": soql}), headers=headers)
    read = len(body["records"])
    while not body["done"]:
        body = client.request("GET", body["nextRecordsUrl"], headers=headers)
        read += len(body["records"])
    return read


def median_ms(action: Callable[[], object], repeat: int) -> float:
    """The median wall time of `action` in milliseconds, after a few warm-up calls."""
    for _ in range(3):
        action()  # warm caches: the parse-and-bind cache, the database's page cache
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def paired_medians(
    first: Callable[[], object], second: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """The median wall times (ms) of two actions timed in alternation, so that a drift of the
    machine's speed during the run weighs on both alike and their ratio stays fair."""
    for _ in range(3):
        first()
        second()
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for action, times in zip((first, second), samples, strict=True):
            started = time.perf_counter()
            action()
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples[0]), statistics.median(samples[1])


def report_http_floor(client: HttpClient, repeat: int) -> float:
    """Print and return the floor every HTTP figure stands on: an authenticated call that
    touches no data."""
    floor = median_ms(lambda: client.get("/services/data/v59.0/limits"), repeat)
    print(f"HTTP floor (GET /limits, authenticated, no data): {floor:.2f} ms")
    return floor
