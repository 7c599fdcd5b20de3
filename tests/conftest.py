"""Fixtures: a seeded org per backend (SQLite always, PostgreSQL too), and API clients on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from app.config import Settings
from app.main import create_app
from app.sandbox.schemas import Schemas
from app.seeding.bootstrap import ensure_database
from app.state import build_state
from tests.databases import DatabaseFactory, require_postgres
from tests.databases import postgres_database as postgres_database  # a fixture of every test

BACKENDS = ["sqlite", "postgres"]
# Tests of a minute or more that use no parametrized session fixture: run first, so that the
# two workers of `make unit` never end the run with one of them running such a test alone.
LONG_AND_ALONE = ("tests/test_container_recipe.py::",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_AND_ALONE))  # stable


API = "/services/data/v59.0"
TEST_SEED = 42
# Every test server's admin key, and the header the operator's clients send it in (an agent's
# client keeps the Authorization header for its Salesforce session).
TEST_ADMIN_KEY = "test-admin-key"
ADMIN_HEADERS = {"X-Localforce-Admin-Key": TEST_ADMIN_KEY}


@pytest.fixture(scope="session", params=BACKENDS)
def database_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DatabaseFactory]:
    backend = str(request.param)
    if backend == "postgres":
        require_postgres()
    factory = DatabaseFactory(backend=backend, workdir=tmp_path_factory.mktemp(backend))
    yield factory
    factory.drop_all()


def make_settings(url: str, data_dir: Path, **overrides: object) -> Settings:
    overrides.setdefault("admin_key", TEST_ADMIN_KEY)
    return Settings(database_url=url, data_dir=data_dir, seed=TEST_SEED, **overrides)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def seeded_template(database_factory: DatabaseFactory) -> str:
    """The URL of a database holding the freshly seeded org; never written to by tests."""
    url = database_factory.new_url()
    settings = make_settings(url, database_factory.workdir)
    state = build_state(settings)
    ensure_database(state.engine, state.registry, state.tables, settings)
    state.engine.dispose()
    return url


@pytest.fixture(scope="session")
def sandbox_ready_template(database_factory: DatabaseFactory, seeded_template: str) -> str:
    """A copy of the seeded org that also holds the template its server builds on its first
    sandbox (of the org and seed), for the servers of tests that create sandboxes but do not
    test that build: each would otherwise spend seconds seeding the template again. Tests of
    the build itself use `seeded_template`."""
    url = database_factory.new_url(template=seeded_template)
    settings = make_settings(url, database_factory.workdir)
    objects_dir = Schemas(settings.seed_dir).objects_dir(settings.org)
    database_factory.add_sandbox_template(
        url, org=settings.org, seed=settings.seed, objects_dir=objects_dir
    )
    return url


@pytest.fixture(scope="session")
def backend(database_factory: DatabaseFactory) -> str:
    return database_factory.backend


def open_client(
    database_factory: DatabaseFactory,
    template: str,
    headers: dict[str, str] = ADMIN_HEADERS,
    **overrides: object,
) -> Iterator[TestClient]:
    """A client on a copy of `template`, sending `headers` (by default the operator's: the
    admin key)."""
    url = database_factory.new_url(template=template)
    app = create_app(make_settings(url, database_factory.workdir, **overrides))
    with TestClient(app, base_url="https://testserver", headers=headers) as client:
        yield client
    engine = create_engine(url)
    engine.dispose()


@pytest.fixture(scope="module")
def client(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[TestClient]:
    """A client on this module's own copy of the seeded org; not logged in, but carrying the
    admin key (the operator's)."""
    yield from open_client(database_factory, seeded_template)


def login(client: TestClient) -> str:
    response = client.post(
        "/services/oauth2/token",
        data={"grant_type": "password", "username": "agent@example.com", "password": "x"},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


@pytest.fixture(scope="module")
def api(client: TestClient) -> TestClient:
    """A logged-in client on the module's org: every request carries the bearer token."""
    return TestClient(
        client.app,
        base_url=str(client.base_url),
        headers={"Authorization": f"Bearer {login(client)}"},
    )


@pytest.fixture(scope="module")
def task_base_url(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tasks: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """The org served with the module's `tasks` as its task file."""
    from tests.servers import serve_in_thread, task_file_app  # it imports this module

    directory = tmp_path_factory.mktemp("tasks")
    app = task_file_app(database_factory, sandbox_ready_template, tasks, directory)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"
