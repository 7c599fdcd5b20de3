"""Seeding: same seed, same content hash; a different seed, another; fast enough to do often."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import build_rows, content_hash, seed_org
from app.storage.database import create_db_engine, migrate_platform
from app.storage.ids import normalize_id
from app.storage.tables import TableSet
from tests.crmarena import STANDARD_COUNTS

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")


def test_same_seed_same_hash_and_another_seed_another() -> None:
    first = content_hash(REGISTRY, build_rows(REGISTRY, "original", 7))
    again = content_hash(REGISTRY, build_rows(REGISTRY, "original", 7))
    other = content_hash(REGISTRY, build_rows(REGISTRY, "original", 8))
    assert first == again
    assert first != other


def test_completed_rows_have_valid_ids_audit_fields_and_derived_values() -> None:
    rows = build_rows(REGISTRY, "original", 7)
    for sobject in REGISTRY:
        for row in rows[sobject.name]:
            assert normalize_id(row["Id"]) == row["Id"]
            assert row["Id"].startswith(sobject.key_prefix)
            assert row["IsDeleted"] is False
            assert row["CreatedDate"] is not None and row["CreatedById"].startswith("005")
            assert set(row) == {field.name for field in sobject.fields}
    contact = rows["Contact"][0]
    assert contact["Name"] == f"{contact['FirstName']} {contact['LastName']}"
    case = rows["Case"][0]
    assert case["IsClosed"] == (case["Status"] == "Closed")
    assert case["CaseNumber"] == "00000001"


@pytest.mark.timing
def test_seeding_the_org_takes_under_ten_seconds(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'seed.db'}")
    migrate_platform(engine)
    started = time.perf_counter()
    result = seed_org(engine, REGISTRY, TableSet(REGISTRY), org="original", seed=42)
    elapsed = time.perf_counter() - started
    engine.dispose()
    # CRMArena's 41,081 records, then the org's Organization and its 4 standard profiles.
    assert sum(result.counts.values()) == 41081 + sum(STANDARD_COUNTS.values())
    assert elapsed < 10, f"seeding took {elapsed:.1f}s"
