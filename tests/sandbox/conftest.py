"""The sandbox tests' org comes with its sandbox template built: what they test is sandboxes,
not that build (tests/sandbox/test_template_builds.py is about it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.conftest import open_client
from tests.databases import DatabaseFactory


@pytest.fixture(scope="module")
def client(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[TestClient]:
    """A client on this module's own copy of the seeded org; not logged in, but carrying the
    admin key (the operator's)."""
    yield from open_client(database_factory, sandbox_ready_template)
