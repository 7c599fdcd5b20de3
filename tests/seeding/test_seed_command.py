"""`localforce seed --org`: each org seeds by its generator, the same seed to the same hash."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli
from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import build_rows, content_hash
from tests.crmarena import STANDARD_COUNTS, pro_counts


@pytest.mark.parametrize("org", ["b2b", "b2c"])
def test_seed_builds_the_org_asked_for(
    org: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOCALFORCE_ORG", raising=False)
    monkeypatch.delenv("LOCALFORCE_DATABASE_URL", raising=False)
    result = CliRunner().invoke(
        cli, ["seed", "--org", org, "--seed", "7", "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    registry = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / org / "objects")
    expected = content_hash(registry, build_rows(registry, org, 7))
    assert f"content hash: {expected}" in result.output
    total = sum(pro_counts(org).values()) + sum(STANDARD_COUNTS.values())
    assert f"Seeded org {org} with seed 7: {total:,} records" in result.output


def test_seed_refuses_an_org_that_does_not_exist(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["seed", "--org", "b2x", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "Invalid value for '--org'" in " ".join(result.output.split())
