"""The Pro orgs' splits: each test part its published bytes with CRMArena-Pro's counts and
near its share of None answers; a train part drawn from sibling orgs names each task's seed,
and an episode of such a row is on the org of that seed."""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter

import httpx
import pytest

from app.config import REPO_ROOT
from app.tasks.harness import run_episode
from app.tasks.reference_agent import solve
from app.tasks.source import org_database
from app.tasks.split_files import draw_part
from app.tasks.splits import CRMARENA_PRO_TYPES, part_rows, split_named
from tests.tasks.test_splits import words

PRO = ["crmarena-pro-b2b@v1", "crmarena-pro-b2c@v1"]


@pytest.mark.parametrize("name", PRO)
def test_a_pro_test_part_is_its_published_bytes_with_crmarena_pros_counts(name: str) -> None:
    split = split_named(f"{name}:test")[0]
    # Drawn from the org generated anew, its hash checked.
    rows = draw_part(f"{name}:test", REPO_ROOT / "seed")
    counts = Counter(row.task for row in rows)
    fewer = {"policy_violation_identification": 65} if "b2b" in name else {}
    assert counts == split.test == {**CRMARENA_PRO_TYPES, **fewer} and len(split.test) == 22
    assert Counter(CRMARENA_PRO_TYPES.values()) == {100: 19, 80: 3}
    assert len({words(row) for row in rows}) == len(rows) == sum(split.test.values())
    assert all(row.seed is None for row in rows)
    # Near CRMArena-Pro's fifth of None answers where a type asks whether something is wrong.
    for kind in ("policy_violation_identification", "quote_approval", "invalid_config"):
        nones = sum(row.answer == [None] for row in rows if row.task == kind)
        assert 0.15 <= nones / counts[kind] <= 0.3, (kind, nones)


def test_a_train_part_from_siblings_names_each_tasks_seed_and_an_episode_runs_there(
    agent_control: httpx.Client,
) -> None:
    split = dataclasses.replace(
        split_named(f"{PRO[0]}:train")[0],
        test={"handle_time": 2, "sales_insight_mining": 2},
        sha256={},
    )
    objects = REPO_ROOT / "seed" / "orgs" / "b2b" / "objects"
    with contextlib.ExitStack() as stack:
        orgs = {
            seed: stack.enter_context(org_database(objects, org="b2b", seed=seed))
            for seed in split.seeds("train")
        }
        engines = {seed: database.engine for seed, database in orgs.items()}
        rows = part_rows(engines, orgs[43].tables, split, "train")
    assert split.seeds("train") == (43, 44, 45, 46, 47) and split.seeds("test") == (42,)
    assert [(row.idx, row.task, row.seed) for row in rows] == [
        (n, kind, seed)
        for n, (kind, seed, _) in enumerate(
            (kind, seed, k)
            for kind in ("handle_time", "sales_insight_mining")
            for seed in (43, 44, 45, 46, 47)
            for k in range(2)
        )
    ]
    assert rows[0].to_json()["seed"] == 43 and list(rows[0].to_json())[-1] == "seed"
    # An episode of a row is on the org of the row's seed (the request names none): the
    # reference agent, reading that org, scores 1; the same task on seed 42 is another org.
    task = rows[-1].to_json()
    assert run_episode(agent_control, task, solve, org="b2b")["reward"] == 1.0
    assert run_episode(agent_control, task, solve, org="b2b", seed=42)["reward"] < 1.0
