"""An org served with a task file, for the tests of the OpenEnv environment."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread
from tests.tasks.original_tasks import original_tasks


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    """Two tasks of every original type."""
    return original_tasks(seeded_template, per_type=2)


@pytest.fixture(scope="module")
def task_base_url(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tasks: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """The org served with `tasks` as its task file."""
    task_file = tmp_path_factory.mktemp("tasks") / "tasks.json"
    task_file.write_text(json.dumps(tasks), encoding="utf-8")
    app = private_org_app(database_factory, sandbox_ready_template, task_file=task_file)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"
