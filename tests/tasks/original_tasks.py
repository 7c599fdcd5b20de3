"""The original org's tables, and its task file generated from a database holding the org, as
the tests of tasks, episodes and agents read them."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import create_engine

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.storage.tables import TableSet
from app.tasks.generator import generate_tasks, task_file_text
from tests.conftest import TEST_SEED

ORIGINAL_TABLES = TableSet(
    SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
)


def original_tasks(database_url: str, per_type: int) -> list[dict[str, Any]]:
    """`per_type` tasks of every original type, drawn from the org at `database_url`, as the
    rows of their task file."""
    engine = create_engine(database_url)
    try:
        rows = generate_tasks(
            engine, ORIGINAL_TABLES, org="original", seed=TEST_SEED, per_type=per_type
        )
    finally:
        engine.dispose()
    parsed: list[dict[str, Any]] = json.loads(task_file_text(rows))
    return parsed
