"""A server for agents' episodes: the org with its sandbox template built (a Pro org's
template is built on its first episode); an engine on the seeded original org."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine

from app.storage.database import create_db_engine
from tests.conftest import ADMIN_HEADERS
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread


@pytest.fixture(scope="module")
def agent_control(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> Iterator[httpx.Client]:
    """The control plane of a server on the module's own copy of the org."""
    app = private_org_app(database_factory, sandbox_ready_template)
    # A Pro org's first episode waits while the org's template is seeded: about a minute on an
    # idle machine, several on a loaded one (the 120 s this waited once ran out beside a busy
    # core and other test runs).
    timeout = httpx.Timeout(120, read=600)
    with (
        serve_in_thread(app) as port,
        httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers=ADMIN_HEADERS, timeout=timeout
        ) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def engine(seeded_template: str) -> Iterator[Engine]:
    """An engine on the seeded original org, read only (a Pro module has its own)."""
    engine = create_db_engine(seeded_template, must_exist=True)
    yield engine
    engine.dispose()
