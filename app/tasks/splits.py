"""Fixed, versioned splits: a benchmark's task lists, the same bytes on every machine.

A split is a deterministic function of (org, seed, version): its types, each drawn from the
org generated from the seed by the task generator's stream for that type, the first
`test_per_type` distinct tasks of a type making its `test` part and the next `train_per_type`
its `train` part (so the parts are disjoint, and the test part is drawn without drawing the
train part). A part's task file is CRMArena's layout; its SHA-256 is published here, and a
part whose generation gives other bytes is refused (the code that draws it changed: that is a
new version of the split, not the same one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from app.errors import SalesforceError
from app.storage.tables import TableSet
from app.tasks.generator import draw_drafts, task_file_text, task_row
from app.tasks.model import OrgData, TaskRow, TaskType
from app.tasks.registry import TASK_TYPES

PARTS = ("test", "train")


class SplitRefused(SalesforceError):
    """A split or a part that is not declared, or whose generation disagrees with its hash."""

    error_code = "INVALID_INPUT"
    status_code = 400


@dataclass(frozen=True)
class Split:
    name: str
    version: int
    org: str
    seed: int
    types: tuple[str, ...]  # in the order the parts number their tasks
    test_per_type: int
    train_per_type: int
    sha256: Mapping[str, str]  # part -> the SHA-256 of its task file

    @property
    def id(self) -> str:
        return f"{self.name}@v{self.version}"

    def per_type(self, part: str) -> int:
        return self.test_per_type if part == "test" else self.train_per_type

    def size(self, part: str) -> int:
        return self.per_type(part) * len(self.types)

    def kinds(self) -> tuple[TaskType, ...]:
        declared = {kind.name: kind for kind in TASK_TYPES.of_org(self.org)}
        return tuple(declared[name] for name in self.types)


# CRMArena's nine types (crmarena.md 5.1), 130 tasks each as in the paper, and a train part
# five times larger for RL.
CRMARENA_ORIGINAL_TYPES = (
    "case_routing",
    "handle_time",
    "transfer_count",
    "named_entity_disambiguation",
    "policy_violation_identification",
    "knowledge_qa",
    "top_issue_identification",
    "monthly_trend_analysis",
    "best_region_identification",
)

SPLITS = (
    Split(
        name="crmarena-original",
        version=1,
        org="original",
        seed=42,
        types=CRMARENA_ORIGINAL_TYPES,
        test_per_type=130,
        train_per_type=650,
        sha256={
            "test": "d307db7e906c2a07484396286fdf546b504903cad47b59dec15bef6afe953212",
            "train": "65bd5487cb7038029b21b7355b61920b94479cb04dfe122d8cd7e9621f860208",
        },
    ),
)


def split_named(name: str) -> tuple[Split, str]:
    """The split and the part `name` names ("crmarena-original@v1:test")."""
    split_id, _, part = name.partition(":")
    found = next((split for split in SPLITS if split.id == split_id), None)
    if found is None:
        known = ", ".join(split.id for split in SPLITS)
        raise SplitRefused(f"No split is named {split_id} (known: {known})")
    if part not in PARTS:
        raise SplitRefused(f"Name a part of {split_id}: {split_id}:test or {split_id}:train")
    return found, part


def part_rows(engine: Engine, tables: TableSet, split: Split, part: str) -> list[TaskRow]:
    """The part's tasks, drawn from the split's org in `engine`, numbered from 0."""
    rows: list[TaskRow] = []
    with engine.connect() as conn:
        data = OrgData(conn=conn, tables=tables, org=split.org, seed=split.seed)
        for kind in split.kinds():
            wanted = split.test_per_type + (split.train_per_type if part == "train" else 0)
            drafts = draw_drafts(data, kind, split.seed, wanted)
            chosen = (
                drafts[: split.test_per_type] if part == "test" else drafts[split.test_per_type :]
            )
            rows += [
                task_row(len(rows) + n, kind, draft, split.org) for n, draft in enumerate(chosen)
            ]
    return rows


def digest(rows: Sequence[TaskRow]) -> str:
    return hashlib.sha256(task_file_text(rows).encode("utf-8")).hexdigest()


def verified_part(engine: Engine, tables: TableSet, split: Split, part: str) -> list[TaskRow]:
    """The part's tasks, refused unless their task file's SHA-256 is the published one."""
    rows = part_rows(engine, tables, split, part)
    found = digest(rows)
    if found != split.sha256[part]:
        raise SplitRefused(
            f"{split.id}:{part} drawn here has SHA-256 {found}, not the published "
            f"{split.sha256[part]}: the code that draws it differs from the version's"
        )
    return rows
