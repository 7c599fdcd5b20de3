"""`localforce tasks generate`: a task file from the org generated from its seed, or from a
database holding the org; the same file either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from tests.conftest import TEST_SEED


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
    assert said == f"Wrote 20 tasks of 10 types to {tmp_path / 'fresh.json'}"
    rows = json.loads((tmp_path / "fresh.json").read_text(encoding="utf-8"))
    assert [row["idx"] for row in rows] == list(range(20))
    generate(tmp_path / "database.json", "--database-url", seeded_template)
    assert (tmp_path / "database.json").read_bytes() == (tmp_path / "fresh.json").read_bytes()


def test_an_org_without_task_types_fails_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "tasks.json"
    result = CliRunner().invoke(
        cli, ["tasks", "generate", "--org", "b2b", "--per-type", "1", "--out", str(out)]
    )
    assert result.exit_code == 1
    assert " ".join(result.output.split()) == (
        "Generation failed: No task types are defined for org b2b (known: original)"
    )
    assert not out.exists()
