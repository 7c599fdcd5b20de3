"""The tasks of the agents' tests (two of every original type), and the app over them that
the OpenEnv environment's in-process tests run (`LocalOrg`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from app.agents.app_link import AppLink, LocalOrg
from tests.databases import DatabaseFactory
from tests.servers import task_file_app
from tests.tasks.original_tasks import original_tasks

KEY = "in-process-admin-key"  # the in-process app's admin key


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    """Two tasks of every original type."""
    return original_tasks(seeded_template, per_type=2)


@pytest.fixture(scope="module")
def app(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tasks: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> FastAPI:
    """The app over `tasks`, with the admin key KEY."""
    directory = tmp_path_factory.mktemp("tasks")
    return task_file_app(database_factory, sandbox_ready_template, tasks, directory, admin_key=KEY)


@pytest.fixture(scope="module")
def link(app: FastAPI) -> Iterator[AppLink]:
    """The app's lifespan, run in a thread of its own."""
    with LocalOrg(app) as running:
        yield running
