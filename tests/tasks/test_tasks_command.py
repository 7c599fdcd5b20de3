"""`localforce tasks generate`: a task file from the org generated from its seed, or from a
database holding the org; the same file either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import update
from typer.testing import CliRunner

from app.cli import cli
from app.seeding.pipeline import ORG_INFO
from app.storage.database import create_db_engine
from app.storage.platform import IMPORTED_SOURCE_PREFIX
from tests.conftest import TEST_SEED
from tests.databases import DatabaseFactory


@pytest.fixture(autouse=True)
def _no_org_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALFORCE_ORG", raising=False)
    monkeypatch.delenv("LOCALFORCE_SEED", raising=False)


def generate(out: Path, *extra: str) -> str:
    arguments = ["tasks", "generate", "--seed", str(TEST_SEED), "--per-type", "2"]
    result = CliRunner().invoke(cli, [*arguments, "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_generate_writes_the_task_file_from_the_org_or_its_database(
    tmp_path: Path, seeded_template: str
) -> None:
    said = generate(tmp_path / "fresh.json")
    assert said == f"Wrote 26 tasks of 13 types to {tmp_path / 'fresh.json'}"
    rows = json.loads((tmp_path / "fresh.json").read_text(encoding="utf-8"))
    assert [row["idx"] for row in rows] == list(range(26))
    generate(tmp_path / "database.json", "--database-url", seeded_template)
    assert (tmp_path / "database.json").read_bytes() == (tmp_path / "fresh.json").read_bytes()


def test_an_org_that_does_not_exist_is_refused_and_nothing_written(tmp_path: Path) -> None:
    out = tmp_path / "tasks.json"
    result = CliRunner().invoke(
        cli, ["tasks", "generate", "--org", "b2x", "--per-type", "1", "--out", str(out)]
    )
    assert result.exit_code == 2
    assert "Invalid value for '--org'" in " ".join(result.output.split())
    assert not out.exists()


def test_a_type_asked_for_more_tasks_than_it_has_fails_the_run(tmp_path: Path) -> None:
    out = tmp_path / "tasks.json"
    result = CliRunner().invoke(
        cli, ["tasks", "generate", "--seed", str(TEST_SEED), "--per-type", "45", "--out", str(out)]
    )
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == (
        "Generation failed: Only 44 of 45 case_routing_write tasks, each distinct and with a "
        "single answer, could be drawn from org original (seed 42): ask for fewer"
    )
    assert not out.exists()


def test_an_imported_org_leaves_out_the_types_whose_answers_were_planted(
    tmp_path: Path, database_factory: DatabaseFactory, seeded_template: str
) -> None:
    url = database_factory.new_url(template=seeded_template)
    engine = create_db_engine(url, must_exist=True)
    with engine.begin() as conn:
        conn.execute(update(ORG_INFO).values(source=f"{IMPORTED_SOURCE_PREFIX}{'0' * 64}"))
    engine.dispose()
    said = generate(tmp_path / "imported.json", "--database-url", url)
    out = tmp_path / "imported.json"
    assert said == (
        f"Wrote 22 tasks of 11 types to {out} Left out, as the org was imported and their "
        "answers are ones the generator plants: policy_violation_identification, knowledge_qa"
    )
    rows = json.loads(out.read_text(encoding="utf-8"))
    assert [row["idx"] for row in rows] == list(range(22))


def test_a_database_of_another_seed_is_refused(tmp_path: Path, seeded_template: str) -> None:
    out = tmp_path / "tasks.json"
    arguments = ["tasks", "generate", "--seed", "7", "--per-type", "1", "--out", str(out)]
    result = CliRunner().invoke(cli, [*arguments, "--database-url", seeded_template])
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == (
        f"Generation failed: The database holds org original generated from seed {TEST_SEED}, "
        f"not 7: pass --seed {TEST_SEED}"
    )
    assert not out.exists()
