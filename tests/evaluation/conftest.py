"""A localforce server on the test module's own copy of the original org, its tasks (two of
every type) and the fake models' server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.databases import DatabaseFactory
from tests.evaluation.fake_model import FakeModels
from tests.servers import private_org_app, serve_in_thread
from tests.tasks.original_tasks import original_tasks


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    return original_tasks(seeded_template, per_type=2)


@pytest.fixture(scope="module")
def localforce_url(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[str]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def models(tasks: list[dict[str, Any]]) -> FakeModels:
    return FakeModels(tasks)


@pytest.fixture(scope="module")
def models_url(models: FakeModels) -> Iterator[str]:
    with serve_in_thread(models.app) as port:
        yield f"http://127.0.0.1:{port}/v1"
