"""Fixed, versioned splits: a benchmark's task lists, the same bytes on every machine.

A split is a deterministic function of (org, seed, version): its types, each drawn from the
org generated from the seed by the task generator's stream for that type, the first distinct
tasks of a type (its count in the split) making its `test` part. The `train` part is five
times larger, drawn one of two ways:

- from the same org, as the next distinct draws of each type after the test part's (so the
  parts are disjoint, and the test part is drawn without drawing the train part);
- from sibling orgs, the same generator at other seeds (`train_seeds`), each giving a part of
  the test part's shape; each row names its seed (`"seed"`), which an episode of it takes.
  The Pro orgs' record counts are CRMArena-Pro's, and a type that reads one record per task
  (a case's resolution, a quote's discounts) has no 600 of them in one org; no train task is
  on the org the test part is on, either.

A part's task file is CRMArena's layout; its SHA-256 is published here, and a part whose
generation gives other bytes is refused (the code that draws it changed: that is a new
version of the split, not the same one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import Engine

from app.errors import SalesforceError
from app.storage.tables import TableSet
from app.tasks.generator import draw_drafts, task_file_text, task_row
from app.tasks.model import Draft, OrgData, TaskRow, TaskType
from app.tasks.registry import TASK_TYPES

PARTS = ("test", "train")


class SplitRefused(SalesforceError):
    """A split or a part that is not declared, or whose generation disagrees with its hash."""

    error_code = "INVALID_INPUT"
    status_code = 400


TRAIN_FACTOR = 5  # the train part's tasks of a type, per task of the test part


@dataclass(frozen=True)
class Split:
    name: str
    version: int
    org: str
    seed: int
    test: Mapping[str, int]  # type -> its tasks in the test part, in the order parts number them
    sha256: Mapping[str, str]  # part -> the SHA-256 of its task file
    train_seeds: tuple[int, ...] = ()  # the sibling orgs of the train part (none: the same org)

    def __post_init__(self) -> None:
        if self.train_seeds and len(self.train_seeds) != TRAIN_FACTOR:
            raise ValueError(f"{self.id}: a train part from siblings takes {TRAIN_FACTOR} seeds")

    @property
    def id(self) -> str:
        return f"{self.name}@v{self.version}"

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(self.test)

    def size(self, part: str) -> int:
        return sum(self.test.values()) * (TRAIN_FACTOR if part == "train" else 1)

    def seeds(self, part: str) -> tuple[int, ...]:
        """The seeds of the orgs the part is drawn from."""
        return self.train_seeds if part == "train" and self.train_seeds else (self.seed,)

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

# CRMArena-Pro's 19 business types at 100 tasks each and its 3 confidentiality types at 80
# (crmarena.md 5.2), per org; the train part from five sibling orgs, the first seeds after 42
# whose org gives every type its count (the b2c org of seed 44 gives 53 conversion rate
# tasks: its agents' lead counts leave most rates tied).
CRMARENA_PRO_TYPES = {
    **dict.fromkeys(
        (
            *CRMARENA_ORIGINAL_TYPES,  # over the Pro org's own cases
            "sales_amount_understanding",
            "sales_cycle_understanding",
            "conversion_rate_comprehension",
            "quote_approval",
            "invalid_config",
            "lead_routing",
            "lead_qualification",
            "activity_priority",
            "wrong_stage_rectification",
            "sales_insight_mining",
        ),
        100,
    ),
    **dict.fromkeys(
        (
            "private_customer_information",
            "internal_operation_data",
            "confidential_company_knowledge",
        ),
        80,
    ),
}

# The b2b org has 70 closed cases: CRMArena-Pro's 393 case history rows over its 153 cases
# (a creation and an assignment each, 17 transfers) leave room for no more closings, and a
# policy violation task reads one closed case's resolution. Its orgs give 65 to 69 such
# tasks (a conversation that states two resolutions is not asked about).
B2B_FEWER = {"policy_violation_identification": 65}

SPLITS = (
    Split(
        name="crmarena-original",
        version=1,
        org="original",
        seed=42,
        test=dict.fromkeys(CRMARENA_ORIGINAL_TYPES, 130),
        sha256={
            "test": "d307db7e906c2a07484396286fdf546b504903cad47b59dec15bef6afe953212",
            "train": "65bd5487cb7038029b21b7355b61920b94479cb04dfe122d8cd7e9621f860208",
        },
    ),
    *(
        Split(
            name=f"crmarena-pro-{org}",
            version=1,
            org=org,
            seed=42,
            test={**CRMARENA_PRO_TYPES, **fewer},
            sha256=sha256,
            train_seeds=train_seeds,
        )
        for org, fewer, train_seeds, sha256 in (
            (
                "b2b",
                B2B_FEWER,
                (43, 44, 45, 46, 47),
                {
                    "test": "06e4559fe72beab062b2860a8c2a752558edbf297aec92d4b6f3b2ee748bbbbc",
                    "train": "1c13e56948b4404b2e794eac6af202fd966faff1bbf515e9e78b8de127c64179",
                },
            ),
            (
                "b2c",
                {},
                (43, 45, 46, 47, 48),
                {
                    "test": "d2340b8e9dc1fa09f7c29ede4a9d578e481dfabb97b664f2845e5c2795f70d6b",
                    "train": "ea7d7174a061aac4586e2969b8e92eb72bfba1a57d18954942b6d39bf2eccfb9",
                },
            ),
        )
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


def part_rows(
    engines: Mapping[int, Engine], tables: TableSet, split: Split, part: str
) -> list[TaskRow]:
    """The part's tasks, numbered from 0, drawn from the split's org in `engines` (seed ->
    an engine on the org generated from it, for each of `split.seeds(part)`)."""
    siblings = part == "train" and bool(split.train_seeds)
    drawn: dict[int, dict[str, list[Draft]]] = {}
    for seed in split.seeds(part):
        with engines[seed].connect() as conn:
            data = OrgData(conn=conn, tables=tables, org=split.org, seed=seed)
            drawn[seed] = {
                kind.name: _drafts(data, kind, seed, split.test[kind.name], part, siblings)
                for kind in split.kinds()
            }
    rows: list[TaskRow] = []
    for kind in split.kinds():
        for seed in split.seeds(part):
            rows += [
                task_row(len(rows) + n, kind, draft, split.org, seed if siblings else None)
                for n, draft in enumerate(drawn[seed][kind.name])
            ]
    return rows


def _drafts(
    data: OrgData, kind: TaskType, seed: int, count: int, part: str, siblings: bool
) -> list[Draft]:
    """A type's drafts in the part: the first `count` of the org, or in a train part from the
    same org the next TRAIN_FACTOR * `count`."""
    if part == "test" or siblings:
        return draw_drafts(data, kind, seed, count)
    return draw_drafts(data, kind, seed, count * (1 + TRAIN_FACTOR))[count:]


def digest(rows: Sequence[TaskRow]) -> str:
    return hashlib.sha256(task_file_text(rows).encode("utf-8")).hexdigest()


def verified_part(
    engines: Mapping[int, Engine], tables: TableSet, split: Split, part: str
) -> list[TaskRow]:
    """The part's tasks, refused unless their task file's SHA-256 is the published one."""
    rows = part_rows(engines, tables, split, part)
    found = digest(rows)
    if found != split.sha256[part]:
        raise SplitRefused(
            f"{split.id}:{part} drawn here has SHA-256 {found}, not the published "
            f"{split.sha256[part]}: the code that draws it differs from the version's"
        )
    return rows
