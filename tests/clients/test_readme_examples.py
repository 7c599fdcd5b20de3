"""README.md's examples of the gym-like environment and of OpenEnv, run as they are written
against a live server (the trainers' examples run with their packages in tests/adapters): the
README's split is served by a part of this module's tasks (tests/stand_in_splits.py), and
what each example prints is the episode's grade, which the server's results hold once."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import localforce
import pytest

from app.tasks.model import TaskRow
from tests.conftest import TEST_ADMIN_KEY
from tests.databases import DatabaseFactory
from tests.readme_examples import SPLIT, example
from tests.servers import serve_in_thread, task_file_app
from tests.stand_in_splits import stand_in_split, task_row
from tests.tasks.original_tasks import original_tasks


@pytest.fixture(scope="module")
def rows(seeded_template: str) -> list[TaskRow]:
    return [task_row(row) for row in original_tasks(seeded_template, per_type=1)]


@pytest.fixture(scope="module")
def url(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    rows: list[TaskRow],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """A server whose task file and README split are `rows`."""
    directory = tmp_path_factory.mktemp("readme")
    tasks = [row.to_json() for row in rows]
    with pytest.MonkeyPatch.context() as patch:
        stand_in_split(patch, [SPLIT], rows)
        app = task_file_app(database_factory, sandbox_ready_template, tasks, directory)
        with serve_in_thread(app) as port:
            yield f"http://127.0.0.1:{port}"


def run_example(name: str, url: str) -> list[str]:
    """Run the README's example `name` with the names its text gives it; the lines it
    printed."""
    printed = io.StringIO()
    names: dict[str, Any] = {"URL": url, "KEY": TEST_ADMIN_KEY, "__name__": "__readme__"}
    with contextlib.redirect_stdout(printed):
        exec(compile(example(name), f"README.md:{name}", "exec"), names)
    return printed.getvalue().splitlines()


def results_since(url: str, before: set[str]) -> list[dict[str, Any]]:
    """The results of the episodes started since `before` (the episode ids then)."""
    with localforce.Control(url, TEST_ADMIN_KEY) as control:
        return [r for r in control.results() if r["episode"] not in before]


def episodes(url: str) -> set[str]:
    with localforce.Control(url, TEST_ADMIN_KEY) as control:
        return {result["episode"] for result in control.results()}


def test_the_gym_example_plays_one_graded_episode_of_the_split(url: str) -> None:
    before = episodes(url)
    printed = run_example("gym", url)
    (result,) = results_since(url, before)
    # "..." is no task's answer: graded 0.0, printed as the server graded it, kept once.
    assert printed == ["0.0"]
    assert (result["answer"], result["reward"], result["steps"]) == ("...", 0.0, 2)
    assert [call["path"].rsplit("/", 1)[-1] for call in result["calls"]] == ["query"]


def test_the_openenv_example_plays_one_graded_episode(url: str, rows: list[TaskRow]) -> None:
    before = episodes(url)
    *prompt, reward = run_example("openenv", url)
    (result,) = results_since(url, before)
    assert "\n".join(prompt) in {row.query for row in rows}  # a task of the server's file
    assert (reward, result["reward"], result["channel"]) == ("0.0", 0.0, "openenv")
    assert [call["tool"] for call in result["tool_calls"]] == ["soql_query", "submit_answer"]
