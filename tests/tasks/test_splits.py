"""The fixed, versioned splits: each part's bytes are its published SHA-256 on SQLite and on
PostgreSQL, its tasks distinct, the parts disjoint; `localforce tasks splits` lists them and
`localforce tasks split` writes one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from app.cli import cli
from app.crmarena import ASSETS_MODULE, use_task_file
from app.tasks.model import TaskRow
from app.tasks.splits import (
    SPLITS,
    SplitRefused,
    digest,
    part_rows,
    split_named,
    verified_part,
)
from tests.databases import DatabaseFactory
from tests.tasks.original_tasks import ORIGINAL_TABLES

ORIGINAL, PART = "crmarena-original@v1", "crmarena-original@v1:test"


@pytest.fixture(scope="module")
def test_part(engine: Engine) -> list[TaskRow]:
    split, part = split_named(PART)
    return verified_part({split.seed: engine}, ORIGINAL_TABLES, split, part)


def words(row: TaskRow) -> tuple[str, str, str]:
    return (row.task, row.query, row.required)


def test_the_test_part_is_its_published_bytes_with_130_distinct_tasks_of_each_type(
    test_part: list[TaskRow],
) -> None:
    (split,) = [split for split in SPLITS if split.id == ORIGINAL]
    assert Counter(row.task for row in test_part) == dict.fromkeys(split.types, 130)
    assert len(split.types) == 9 and len(test_part) == 1170
    assert len({words(row) for row in test_part}) == 1170
    assert [row.idx for row in test_part] == list(range(1170))


def test_the_train_part_is_five_times_larger_and_shares_no_task_with_the_test_part(
    engine: Engine, test_part: list[TaskRow], database_factory: DatabaseFactory
) -> None:
    if database_factory.backend != "sqlite":
        pytest.skip("drawn once, on SQLite: the test part shows the back ends agree")
    split, part = split_named(f"{ORIGINAL}:train")
    train = verified_part({split.seed: engine}, ORIGINAL_TABLES, split, part)
    assert Counter(row.task for row in train) == dict.fromkeys(split.types, 650)
    assert len({words(row) for row in train}) == len(train) == 5 * len(test_part)
    assert not {words(row) for row in train} & {words(row) for row in test_part}


def test_a_part_drawn_otherwise_than_published_is_refused(engine: Engine) -> None:
    split, _ = split_named(PART)
    small = dataclasses.replace(
        split, test=dict.fromkeys(split.types, 1), sha256={"test": "0" * 64}
    )
    drawn = part_rows({split.seed: engine}, ORIGINAL_TABLES, small, "test")
    found = digest(drawn)
    with pytest.raises(SplitRefused) as refused:
        verified_part({split.seed: engine}, ORIGINAL_TABLES, small, "test")
    assert str(refused.value) == (
        f"{ORIGINAL}:test drawn here has SHA-256 {found}, not the published {'0' * 64}: the "
        "code that draws it differs from the version's"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "crmarena-original@v2:test",
            "No split is named crmarena-original@v2 (known: crmarena-original@v1, "
            "crmarena-pro-b2b@v1, crmarena-pro-b2c@v1)",
        ),
        (
            ORIGINAL,
            f"Name a part of {ORIGINAL}: {ORIGINAL}:test or {ORIGINAL}:train",
        ),
        (
            f"{ORIGINAL}:dev",
            f"Name a part of {ORIGINAL}: {ORIGINAL}:test or {ORIGINAL}:train",
        ),
    ],
)
def test_a_split_not_declared_is_refused(name: str, message: str) -> None:
    with pytest.raises(SplitRefused) as refused:
        split_named(name)
    assert str(refused.value) == message


def test_the_splits_command_lists_each_part_with_its_count_and_hash() -> None:
    result = CliRunner().invoke(cli, ["tasks", "splits"])
    assert result.exit_code == 0, result.output
    lines = [" ".join(line.replace("│", " ").split()) for line in result.output.splitlines()]
    listed = {
        ("crmarena-original@v1", "original", "42", "42", 9, 1170),
        ("crmarena-pro-b2b@v1", "b2b", "42", "43,44,45,46,47", 22, 2105),
        ("crmarena-pro-b2c@v1", "b2c", "42", "43,45,46,47,48", 22, 2140),
    }
    assert {split.id for split in SPLITS} == {name for name, *_ in listed}
    for name, org, test_seeds, train_seeds, types, size in listed:
        split = split_named(f"{name}:test")[0]
        for part, seeds, tasks in (("test", test_seeds, size), ("train", train_seeds, 5 * size)):
            row = f"{name}:{part} {org} {seeds} {types} {tasks} {split.sha256[part]}"
            assert row in lines, result.output


def test_the_split_command_writes_the_part_as_its_task_file(tmp_path: Path) -> None:
    out = tmp_path / "test.json"
    result = CliRunner().invoke(cli, ["tasks", "split", PART, "--out", str(out)])
    assert result.exit_code == 0, result.output
    (split,) = [split for split in SPLITS if split.id == ORIGINAL]
    assert hashlib.sha256(out.read_bytes()).hexdigest() == split.sha256["test"]
    assert len(json.loads(out.read_text())) == 1170
    # CRMArena's own harness takes the part as its task list (deliverable: its run_tasks.py on
    # a split), every task of it gradable by its environments.
    try:
        assets = use_task_file(out, org="original")
        assert json.loads(out.read_text()) == assets.TASKS_ORIGINAL
    finally:
        sys.modules.pop(ASSETS_MODULE, None)
    refused = CliRunner().invoke(cli, ["tasks", "split", "nope@v1:test", "--out", str(out)])
    assert refused.exit_code == 1
    assert "No split: No split is named nope@v1" in " ".join(refused.output.split())
