"""A published split's name served by a part of the test's own rows: drawing a real split
generates its orgs (minutes), so the test's rows stand in, drawn through the server's real
SplitFiles (its lock, file and SHA-256 check), of a split declared here."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from app.tasks import split_files
from app.tasks.model import TaskRow
from app.tasks.splits import digest, split_named


def task_row(row: dict[str, Any]) -> TaskRow:
    """A task file's row as the TaskRow it was written from."""
    metadata = row.get("metadata") or {}
    return TaskRow(
        idx=row["idx"],
        task=row["task"],
        persona=row["persona"],
        answer=row["answer"],
        required=metadata.get("required", ""),
        optional=metadata.get("optional", ""),
        reward_metric=row["reward_metric"],
        query=row["query"],
        seed=row.get("seed"),
    )


def stand_in_split(
    patch: pytest.MonkeyPatch, names: Iterable[str], rows: list[TaskRow]
) -> list[int]:
    """Serve `rows` as each split part in `names` (other names as published); the list
    returned gains an item each time the server draws one."""
    original, _ = split_named("crmarena-original@v1:test")
    stand_in = dataclasses.replace(
        original,
        name="stand-in",
        test=dict(Counter(row.task for row in rows)),
        sha256={"test": digest(rows), "train": "0" * 64},
    )
    served = set(names)
    draws: list[int] = []

    def drawn(name: str, seed_dir: Path) -> list[TaskRow]:
        draws.append(1)
        return rows

    def named(name: str) -> tuple[Any, str]:
        return (stand_in, "test") if name in served else split_named(name)

    patch.setattr(split_files, "draw_part", drawn)
    patch.setattr(split_files, "split_named", named)
    return draws
