"""The org of the integrity tests: served with one task of every original type as its task
file, and the tests' admin key (`ADMIN_HEADERS` carries it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from tests.databases import DatabaseFactory
from tests.servers import serve_in_thread, task_file_app
from tests.tasks.original_tasks import original_tasks


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    return original_tasks(seeded_template, per_type=1)


@pytest.fixture(scope="module")
def app(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tasks: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> FastAPI:
    directory = tmp_path_factory.mktemp("tasks")
    return task_file_app(database_factory, sandbox_ready_template, tasks, directory)


@pytest.fixture(scope="module")
def base_url(app: FastAPI) -> Iterator[str]:
    """The app's base URL, served over a socket."""
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"
