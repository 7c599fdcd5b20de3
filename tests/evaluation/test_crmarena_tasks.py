"""CRMArena's own tasks on its own data, for those who have them: a dump in CRMArena's layout
imported (`localforce import`), and rows in its dataset's layout (their answers the dump's
Ids) run by `localforce eval --tasks`. The real files are CC BY-NC and not reachable here; the
dump and rows are made from the published schema (tests/seeding/dumps.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.evaluation.run_file import RunFile
from app.main import create_app
from app.tasks.grading import score
from tests.conftest import TEST_ADMIN_KEY, make_settings
from tests.databases import DatabaseFactory
from tests.evaluation.fake_model import FakeModels, nonsense_answer
from tests.evaluation.test_eval import EMPTY_DIFF, run, stored_results
from tests.seeding.dumps import ARTICLE_1, CASE_1, CASE_2, USER_1
from tests.seeding.test_import import dump_file, run_import
from tests.servers import serve_in_thread

# Rows as CRMArena's crmarena_w_metadata.json holds them (crmarena.md 4): no persona, no
# "Today's date" line, answers the org's Ids (or null).
CRMARENA_ROWS: list[dict[str, Any]] = [
    {
        "idx": 0,
        "answer": USER_1,
        "task": "case_routing",
        "metadata": {"required": "Route a case to the agent with the most closed cases of its "
                     "issue.", "optional": ""},
        "reward_metric": "exact_match",
        "query": "Subject: Sole came apart again. Description: The sole of my new running "
                 "shoe came apart. Which agent should take it?",
    },
    {
        "idx": 1,
        "answer": ARTICLE_1,
        "task": "policy_violation_identification",
        "metadata": {"required": "", "optional": ""},
        "reward_metric": "exact_match",
        "query": f"Did the agent on case {CASE_1} break a policy? Give the article's Id.",
    },
    {
        "idx": 2,
        "answer": None,
        "task": "policy_violation_identification",
        "metadata": {"required": "", "optional": ""},
        "reward_metric": "exact_match",
        "query": f"Did the agent on case {CASE_2} break a policy? Give the article's Id.",
    },
    {
        "idx": 3,
        "answer": "Returns are accepted within 30 days of delivery.",
        "task": "knowledge_qa",
        "metadata": {"required": "", "optional": ""},
        "reward_metric": "fuzzy_match",
        "query": "How long do customers have to return an item?",
    },
]  # fmt: skip


@pytest.fixture(scope="module")
def imported_url(
    database_factory: DatabaseFactory, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """localforce serving a copy of the original dump, imported."""
    template = database_factory.new_url()
    run_import(template, database_factory.workdir, dump_file(tmp_path_factory.mktemp("dump")))
    url = database_factory.new_url(template=template)
    with serve_in_thread(create_app(make_settings(url, database_factory.workdir))) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def crmarena_models_url() -> Iterator[str]:
    with serve_in_thread(FakeModels(CRMARENA_ROWS).app) as port:
        yield f"http://127.0.0.1:{port}/v1"


def test_crmarenas_rows_run_on_its_imported_data_with_their_own_answers(
    imported_url: str, crmarena_models_url: str, tmp_path: Path
) -> None:
    task_file = tmp_path / "crmarena.json"
    task_file.write_text(json.dumps(CRMARENA_ROWS))
    command = [
        "eval", "--model", "oracle", "--base-url", crmarena_models_url, "--tasks", str(task_file),
        "--run", "own", "--localforce-url", imported_url, "--runs-dir", str(tmp_path),
    ]  # fmt: skip
    result = CliRunner().invoke(cli, command, env={"LOCALFORCE_ADMIN_KEY": TEST_ADMIN_KEY})
    assert result.exit_code == 0, result.output
    records = RunFile.of_run(tmp_path, "own").records()
    assert sorted((r["idx"], r["status"], r["reward"]) for r in records) == [
        (0, "answered", 1.0), (1, "answered", 1.0), (2, "answered", 1.0), (3, "answered", 1.0),
    ]  # fmt: skip
    stored = stored_results(imported_url, "own")
    assert {result["expected"] for result in stored} == {row["answer"] for row in CRMARENA_ROWS}
    # The agent read the imported org: its cases, with the dump's own Ids.
    (call,) = {json.dumps(r["tool_calls"][0]["result"]) for r in stored if r["idx"] == 0}
    assert CASE_1 in call and CASE_2 in call and TEST_ADMIN_KEY not in call


def test_guesses_at_crmarenas_rows_score_what_their_metric_gives(
    imported_url: str, crmarena_models_url: str, tmp_path: Path
) -> None:
    records = run(
        CRMARENA_ROWS, imported_url, crmarena_models_url, "nonsense", tmp_path, name="wrong"
    )
    for row in CRMARENA_ROWS:
        (record,) = [record for record in records if record["idx"] == row["idx"]]
        guess = nonsense_answer(CRMARENA_ROWS, row)
        assert (record["answer"], record["reward"]) == (guess, score(row, guess, EMPTY_DIFF))
