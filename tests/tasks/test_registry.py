"""The task type registry: a type declared in one module (tests/tasks/toy_task.py), once
registered, is generated, graded, given to an episode's agent, solved by the reference agent,
handed to CRMArena's harness and listed in the coverage report, with no other file naming it;
and declarations that would disagree are refused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from random import Random
from typing import Any

import httpx
import pytest

from app.config import REPO_ROOT
from app.console.coverage import sources
from app.console.coverage.markdown import render_markdown
from app.console.coverage.tasks import task_types as coverage_rows
from app.crmarena import ASSETS_MODULE, use_task_file
from app.tasks.generator import task_types
from app.tasks.grading import grade
from app.tasks.harness import run_tasks
from app.tasks.model import (
    ORIGINAL,
    PRO,
    TEXT,
    WORKFLOW,
    Api,
    Draft,
    ForAnotherFamily,
    NotScripted,
    OrgData,
    TaskType,
)
from app.tasks.reference_agent import solve
from app.tasks.registry import TASK_TYPES, Registry, tool_set_of
from app.tasks.tools import READ_ONLY, UPDATES
from tests.tasks import toy_task
from tests.tasks.original_tasks import original_tasks

PER_TYPE = 2


@pytest.fixture(scope="module")
def plain_tasks(seeded_template: str) -> list[dict[str, Any]]:
    """The original org's task file without the toy type (made before it is registered)."""
    return original_tasks(seeded_template, per_type=PER_TYPE)


@pytest.fixture
def toy() -> Iterator[TaskType]:
    (kind,) = toy_task.TASK_TYPES
    with TASK_TYPES.registered(kind):
        yield kind
    assert kind not in TASK_TYPES.of_org("original")


def test_a_type_declared_in_one_module_is_used_everywhere_types_are(
    toy: TaskType,
    plain_tasks: list[dict[str, Any]],
    seeded_template: str,
    agent_control: httpx.Client,
    tmp_path: Path,
) -> None:
    # Generated: after the declared types, whose tasks and numbers stay as they were.
    assert task_types("original")[-1] is toy
    tasks = original_tasks(seeded_template, per_type=PER_TYPE)
    assert tasks[: len(plain_tasks)] == plain_tasks
    toys = tasks[len(plain_tasks) :]
    assert [task["task"] for task in toys] == ["case_owner"] * PER_TYPE
    assert [task["idx"] for task in toys] == [len(plain_tasks), len(plain_tasks) + 1]
    assert all(task["answer"].startswith("005") for task in toys)
    assert {task["persona"] for task in toys} == {"Service Agent"}

    # Graded by its declared answer kind: the owner's Id, 15 or 18 characters, in any words.
    right = [{"idx": t["idx"], "response": f"It is {t['answer'][:15]}."} for t in toys]
    assert grade(toys, right).overall == 1.0
    wrong = [{"idx": t["idx"], "response": "005000000000000AAA"} for t in toys]
    assert grade(toys, wrong).overall == 0.0

    # Its episodes give the agent its tool set, and the reference agent solves them.
    assert tool_set_of(toys[0]) == READ_ONLY
    assert list(run_tasks(agent_control, toys, solve).values()) == [1.0] * PER_TYPE

    # CRMArena's harness takes it as customer-facing, as it declares.
    task_file = tmp_path / "tasks.json"
    task_file.write_text("[]", encoding="utf-8")
    try:
        assert "case_owner" in use_task_file(task_file, org="original").EXTERNAL_FACING_TASKS
    finally:
        sys.modules.pop(ASSETS_MODULE, None)

    # The coverage report lists it, with the tests that name it.
    rows = coverage_rows(sources.TestIndex.scan(REPO_ROOT))
    (row,) = [row for row in rows if row["task"] == "case_owner"]
    assert row["orgs"] == ["original"] and row["metric"] == "exact_match"
    assert row["answer_kind"] == "ids" and not row["writes"]
    assert TOY_TEST in row["tests"]
    report = {"apis": [], "soql": [], "sosl": [], "task_types": rows, "summary": SUMMARY}
    assert "| `case_owner` | Service Agent | original | read | exact_match (ids) |" in (
        render_markdown(report)
    )


TOY_TEST = (
    "tests/tasks/test_registry.py::test_a_type_declared_in_one_module_is_used_everywhere_types_are"
)
SUMMARY = dict.fromkeys(
    ("routes", "routes_supported", "soql", "soql_supported", "sosl", "sosl_supported"), 0
)


def test_a_registered_type_leaves_with_its_block() -> None:
    before = task_types("original")
    with TASK_TYPES.registered(*toy_task.TASK_TYPES):
        assert [kind.name for kind in task_types("original")][-1] == "case_owner"
        assert "case_owner" not in [kind.name for kind in task_types("b2b")]
    assert task_types("original") == before
    assert "case_owner" not in TASK_TYPES.names()
    with pytest.raises(NotScripted, match="case_owner is not scripted"):
        solve(Unreachable(), {"task": "case_owner"})


class Unreachable:
    """An org's API that no call reaches."""

    def query(self, soql: str) -> list[dict[str, Any]]:
        raise AssertionError(soql)

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None:
        raise AssertionError(sobject)

    def fields(self, sobject: str) -> set[str]:
        raise AssertionError(sobject)

    def sobjects(self) -> set[str]:
        raise AssertionError("sobjects")


def _draw(rng: Random, data: OrgData) -> Draft:
    raise AssertionError("not drawn")


def _original_only(api: Api, task: dict[str, Any]) -> str:
    if task["query"] != "original":
        raise ForAnotherFamily("a Pro org's task")
    return "answered as the original org's"


def _pro(api: Api, task: dict[str, Any]) -> str:
    return "answered as a Pro org's"


def _toy(name: str, orgs: tuple[str, ...], **declared: Any) -> TaskType:
    fields: dict[str, Any] = {
        "persona": "Tester",
        "reward_metric": "exact_match",
        "answer_kind": "ids",
        "draw": _draw,
        "solve": _pro,
        "skill": WORKFLOW,
    }
    return TaskType(name=name, orgs=orgs, **(fields | declared))


def test_a_name_two_families_declare_is_solved_by_the_family_that_takes_the_task() -> None:
    registry = Registry([_toy("pair", ORIGINAL, solve=_original_only), _toy("pair", PRO)])
    assert [kind.orgs for kind in registry.named("pair")] == [ORIGINAL, PRO]
    assert registry.orgs() == ("original", "b2b", "b2c")
    with TASK_TYPES.registered(*registry):
        assert solve(Unreachable(), {"task": "pair", "query": "original"}) == (
            "answered as the original org's"
        )
        assert solve(Unreachable(), {"task": "pair", "query": "b2b"}) == "answered as a Pro org's"


@pytest.mark.parametrize(
    ("declarations", "message"),
    [
        (
            [_toy("twice", ORIGINAL), _toy("twice", ("original", "b2b"))],
            "Task type twice is declared twice for the same org",
        ),
        (
            [_toy("graded", ORIGINAL), _toy("graded", PRO, answer_kind="months")],
            "The declarations of task type graded differ in answer_kind",
        ),
        (
            [_toy("facing", ORIGINAL), _toy("facing", PRO, external_facing=True)],
            "The declarations of task type facing differ in external_facing",
        ),
        (
            [_toy("skilled", ORIGINAL), _toy("skilled", PRO, skill=TEXT)],
            "The declarations of task type skilled differ in skill",
        ),
    ],
)
def test_declarations_of_one_name_must_agree(declarations: list[TaskType], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        Registry(declarations)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"reward_metric": "bleu"}, "reward_metric bleu is not one of exact_match, fuzzy_match, "
         "privacy_rejection, diff_match"),
        ({"answer_kind": None}, "an exact_match type, and only one, names its answer_kind"),
        ({"reward_metric": "fuzzy_match"}, "an exact_match type, and only one, names its "
         "answer_kind"),
        ({"answer_kind": "colours"}, "answer_kind colours is not one of ids, months, states, "
         "bant, stages"),
        ({"tools": UPDATES}, "a diff_match type, and only one, has a write tool"),
        ({"reward_metric": "diff_match", "answer_kind": None}, "a diff_match type, and only "
         "one, has a write tool"),
        ({"orgs": ()}, "it is drawn in no org"),
        ({"skill": "Juggling"}, "skill Juggling is not one of Workflow execution, Policy "
         "compliance, Text reasoning, Database querying and numerical computation, "
         "Confidentiality"),
    ],
)  # fmt: skip
def test_a_declaration_that_does_not_hold_together_is_refused(
    declared: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        _toy("odd", **({"orgs": ORIGINAL} | declared))
    assert str(raised.value) == f"Task type odd: {message}"
