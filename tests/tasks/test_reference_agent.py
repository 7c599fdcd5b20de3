"""The scripted reference agent solves every scripted task type through the REST API alone and
scores 1 on each, in episodes on a real server, on both back ends; the do-nothing and random
agents stay near chance."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.seeding.pipeline import build_rows
from app.tasks.baselines import RandomAnswers, do_nothing
from app.tasks.generator import task_types
from app.tasks.grading import grade
from app.tasks.harness import run_tasks
from app.tasks.model import NotScripted, planted_truth
from app.tasks.original.service_agent import FACTS, Fact
from app.tasks.reference_agent import solve
from app.tasks.registry import TASK_TYPES
from app.tasks.solving import HttpApi
from tests.conftest import TEST_SEED
from tests.tasks.original_tasks import ORIGINAL_TABLES, original_tasks

PER_TYPE = 10


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    return original_tasks(seeded_template, per_type=PER_TYPE)


ORIGINAL_TYPES = [kind.name for kind in task_types("original")]


@pytest.mark.parametrize("type_name", ORIGINAL_TYPES)
def test_the_reference_agent_solves_every_task_of_a_scripted_type(
    agent_control: httpx.Client, tasks: list[dict[str, Any]], type_name: str
) -> None:
    of_type = [task for task in tasks if task["task"] == type_name]
    assert len(of_type) == PER_TYPE
    rewards = run_tasks(agent_control, of_type, solve)
    assert list(rewards.values()) == [1.0] * PER_TYPE


def test_the_reference_agent_scripts_every_type(tasks: list[dict[str, Any]]) -> None:
    every_type = {kind.name for org in ("original", "b2b", "b2c") for kind in task_types(org)}
    assert every_type == set(TASK_TYPES.names())
    assert all(callable(kind.solve) for kind in TASK_TYPES)
    assert {task["task"] for task in tasks} == set(ORIGINAL_TYPES)
    with pytest.raises(NotScripted) as raised:
        solve(HttpApi(httpx.Client(), ""), {"task": "poetry"})
    assert str(raised.value) == "poetry is not scripted"


def test_the_baselines_stay_near_chance(seeded_template: str) -> None:
    # Ten of each type: on three, guessing among a type's own answers is right one time in three.
    tasks = original_tasks(seeded_template, per_type=10)
    untouched: dict[str, list[Any]] = {"created": [], "updated": [], "deleted": []}  # no writes
    nothing = grade(
        tasks, [{"idx": t["idx"], "response": do_nothing(t), "diff": untouched} for t in tasks]
    )
    guesser = RandomAnswers(tasks, seed=1)
    guessed = grade(
        tasks, [{"idx": t["idx"], "response": guesser(t), "diff": untouched} for t in tasks]
    )
    # Answering nothing is right only where the answer is None (a compliant case).
    nones = sum(1 for task in tasks if task["answer"] is None)
    assert nothing.overall == pytest.approx(nones / len(tasks))
    assert nothing.overall < 0.1
    assert guessed.overall < 0.3


class ArticlesOnly:
    """An org's API that answers only the knowledge QA's one query: the published articles'
    summaries, from the generator's records."""

    def __init__(self) -> None:
        articles = build_rows(ORIGINAL_TABLES.registry, "original", TEST_SEED)["Knowledge__kav"]
        self.rows = [{"Summary": a["Summary"]} for a in articles if a["PublishStatus"] == "Online"]

    def query(self, soql: str) -> list[dict[str, Any]]:
        assert soql == "SELECT Summary FROM Knowledge__kav WHERE PublishStatus = 'Online'"
        return self.rows

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None:
        raise AssertionError("knowledge QA writes nothing")

    def fields(self, sobject: str) -> set[str]:
        raise AssertionError("knowledge QA describes nothing")

    def sobjects(self) -> set[str]:
        raise AssertionError("knowledge QA lists no objects")


@pytest.mark.parametrize("fact", FACTS, ids=[fact.name for fact in FACTS])
def test_the_reference_agent_reads_every_knowledge_fact_whole(fact: Fact) -> None:
    value = planted_truth(TEST_SEED).policy_params[fact.param] if fact.param else None
    for question in fact.questions:
        task = {"task": "knowledge_qa", "query": question}
        assert solve(ArticlesOnly(), task) == fact.answer.format(value=value)
