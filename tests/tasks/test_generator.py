"""The task generator over the seeded original org, on each back end: every type, in CRMArena's
row format, the same bytes from any database holding the org, and every answer computed a
second way, in Python over the generator's own records instead of SQL."""

from __future__ import annotations

import calendar
import json
import re
from collections import Counter
from random import Random
from typing import Any

import pytest
from sqlalchemy import Engine

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import build_rows
from app.storage.tables import TableSet
from app.tasks import admin
from app.tasks.generator import (
    draw_drafts,
    generate_tasks,
    task_file_text,
    task_types,
)
from app.tasks.model import (
    DATABASE,
    ORIGINAL,
    Ambiguous,
    Api,
    Draft,
    NoAnswer,
    NotPlanted,
    OrgData,
    TaskGenerationFailed,
    TaskType,
    single_extreme,
)
from app.tasks.registry import TASK_TYPES
from app.tasks.source import org_database
from tests.conftest import TEST_SEED
from tests.tasks.second_solvers import SECOND_SOLVERS, Rows

OBJECTS = REPO_ROOT / "seed" / "orgs" / "original" / "objects"
TABLES = TableSet(SchemaRegistry.from_directory(OBJECTS))
PER_TYPE = 10
TYPES = [
    "case_routing",
    "case_routing_write",
    "handle_time",
    "transfer_count",
    "named_entity_disambiguation",
    "policy_violation_identification",
    "knowledge_qa",
    "top_issue_identification",
    "monthly_trend_analysis",
    "best_region_identification",
    "custom_field_creation",
    "custom_object_creation",
    "custom_field_update",
]


@pytest.fixture(scope="module")
def task_file(engine: Engine) -> list[dict[str, Any]]:
    rows = generate_tasks(engine, TABLES, org="original", seed=TEST_SEED, per_type=PER_TYPE)
    parsed: list[dict[str, Any]] = json.loads(task_file_text(rows))
    return parsed


@pytest.fixture(scope="module")
def records() -> Rows:
    return build_rows(TABLES.registry, "original", TEST_SEED)


def test_every_type_is_generated_as_often_as_asked_and_numbered_in_order(
    task_file: list[dict[str, Any]],
) -> None:
    assert [row["idx"] for row in task_file] == list(range(len(TYPES) * PER_TYPE))
    assert Counter(row["task"] for row in task_file) == dict.fromkeys(TYPES, PER_TYPE)
    assert [type_.name for type_ in task_types("original")] == TYPES


def test_rows_have_crmarenas_keys_in_its_order(task_file: list[dict[str, Any]]) -> None:
    for row in task_file:
        assert list(row) == [
            "idx",
            "answer",
            "task",
            "persona",
            "metadata",
            "reward_metric",
            "query",
        ]
        assert list(row["metadata"]) == ["required", "optional"]
        assert row["reward_metric"] == METRICS.get(row["task"], "exact_match")
        assert re.fullmatch(r"Today's date: \d{4}-\d{2}-\d{2}(\n.+)*", row["metadata"]["required"])
        if row["task"] in PERIOD_TYPES:
            assert "Q1 is January to March" in row["metadata"]["optional"]
        else:
            assert row["metadata"]["optional"] == ""


ADMIN_TYPES = ("custom_field_creation", "custom_object_creation", "custom_field_update")
METRICS = {
    "knowledge_qa": "fuzzy_match",
    "case_routing_write": "diff_match",
    **dict.fromkeys(ADMIN_TYPES, "diff_match"),
}
PERIOD_TYPES = {
    "handle_time",
    "transfer_count",
    "top_issue_identification",
    "monthly_trend_analysis",
    "best_region_identification",
}
ANSWER_FORMS = {
    "case_routing": r"005[0-9A-Za-z]{15}",
    "case_routing_write": (
        r"\[\{'type': 'Case', 'id': '500[0-9A-Za-z]{15}', "
        r"'fields': \{'OwnerId': '005[0-9A-Za-z]{15}'\}\}\]"
    ),
    "named_entity_disambiguation": r"01t[0-9A-Za-z]{15}",
    "policy_violation_identification": r"ka0[0-9A-Za-z]{15}|None",
    # A figure, a size range or a country a care guide's table gives
    "knowledge_qa": r".*\d.*|XS to XXL|[A-Z][a-z]+( [A-Z][a-z]+)?",
    "handle_time": r"005[0-9A-Za-z]{15}",
    "transfer_count": r"005[0-9A-Za-z]{15}",
    "top_issue_identification": r"a[0-9A-Za-z]{17}",
    "monthly_trend_analysis": "|".join(calendar.month_name[1:]),
    "best_region_identification": r"[A-Z]{2}",
    # Custom fields (and an object) by full name, their metadata as the Metadata API's
    "custom_field_creation": r"\[\{'type': 'CustomField', 'id': '[A-Za-z0-9]+\.\w+__c', .*\]",
    "custom_object_creation": (
        r"\[\{'type': 'CustomObject', 'id': '\w+__c', .*"
        r"\{'type': 'CustomField', 'id': '\w+__c\.\w+__c', .*\]"
    ),
    "custom_field_update": r"\[\{'type': 'CustomField', 'id': '\w+\.\w+__c', .*'required': True.*\]"
    r"|\[\{'type': 'CustomField', 'id': '\w+\.\w+__c', .*\]",
}
PERSONAS = {
    "case_routing": "Service Manager",
    "case_routing_write": "Service Manager",
    "named_entity_disambiguation": "Service Agent",
    "policy_violation_identification": "Service Agent",
    "knowledge_qa": "Service Agent",
    "handle_time": "Service Manager",
    "transfer_count": "Service Manager",
    "top_issue_identification": "Service Analyst",
    "monthly_trend_analysis": "Service Analyst",
    "best_region_identification": "Service Analyst",
    **dict.fromkeys(ADMIN_TYPES, "Salesforce Administrator"),
}


def test_answers_and_personas_have_each_types_form(task_file: list[dict[str, Any]]) -> None:
    for row in task_file:
        assert re.fullmatch(ANSWER_FORMS[row["task"]], str(row["answer"])), row
        assert row["persona"] == PERSONAS[row["task"]]


def test_no_two_tasks_of_a_type_are_the_same(task_file: list[dict[str, Any]]) -> None:
    words = [(row["query"], row["metadata"]["required"]) for row in task_file]
    assert len(set(words)) == len(words)


def test_some_policy_violation_tasks_have_no_violation(task_file: list[dict[str, Any]]) -> None:
    answers = [
        row["answer"] for row in task_file if row["task"] == "policy_violation_identification"
    ]
    assert None in answers
    assert any(answer is not None for answer in answers)


def test_the_org_generated_from_its_seed_gives_the_same_bytes(engine: Engine) -> None:
    """Against a fresh SQLite generation of the org: on the PostgreSQL run this is the
    cross-back-end check."""
    here = generate_tasks(engine, TABLES, org="original", seed=TEST_SEED, per_type=PER_TYPE)
    with org_database(OBJECTS, org="original", seed=TEST_SEED) as fresh:
        there = generate_tasks(
            fresh.engine, fresh.tables, org="original", seed=TEST_SEED, per_type=PER_TYPE
        )
    assert task_file_text(here) == task_file_text(there)


def test_the_administrators_types_leave_the_other_types_tasks_byte_identical(
    engine: Engine, task_file: list[dict[str, Any]]
) -> None:
    """Appended last, the administrator's types change no byte of the tasks drawn before them:
    the task file without them is the task file with them, cut where they begin."""
    for kind in admin.TASK_TYPES:
        TASK_TYPES.remove(kind)
    try:
        rows = generate_tasks(engine, TABLES, org="original", seed=TEST_SEED, per_type=PER_TYPE)
    finally:
        for kind in admin.TASK_TYPES:
            TASK_TYPES.add(kind)
    before = [row for row in task_file if row["task"] not in ADMIN_TYPES]
    assert task_file[: len(before)] == before
    assert task_file_text(rows) == json.dumps(before, indent=2, ensure_ascii=False) + "\n"


def test_another_seed_draws_other_tasks(engine: Engine) -> None:
    """The draws' seed is the org's: drawn with another from the same org, the tasks differ
    (the planted types' checks hold only for the org's own seed, so they are left out)."""
    with engine.connect() as conn:
        data = OrgData(conn=conn, tables=TABLES, org="original", seed=TEST_SEED, planted=False)
        for kind in task_types("original"):
            try:
                ours = draw_drafts(data, kind, TEST_SEED, 3)
            except NotPlanted:
                continue
            theirs = draw_drafts(data, kind, TEST_SEED + 1, 3)
            assert [d.query for d in ours] != [d.query for d in theirs], kind.name


@pytest.mark.parametrize("type_name", TYPES)
def test_every_answer_is_what_the_records_give_computed_in_python(
    type_name: str, engine: Engine, records: Rows
) -> None:
    (task_type,) = [kind for kind in task_types("original") if kind.name == type_name]
    with engine.connect() as conn:
        data = OrgData(conn=conn, tables=TABLES, org="original", seed=TEST_SEED)
        drafts = draw_drafts(data, task_type, TEST_SEED, PER_TYPE)
    for draft in drafts:
        assert SECOND_SOLVERS[type_name](records, **draft.params) == draft.answer, draft


def test_a_tie_the_policy_does_not_break_is_ambiguous() -> None:
    assert single_extreme({"a": 3.0, "b": 1.0}, "max") == "a"
    assert single_extreme({"a": 3.0, "b": 1.0}, "min") == "b"
    with pytest.raises(Ambiguous):
        single_extreme({"a": 3.0, "b": 3.0, "c": 1.0}, "max")
    with pytest.raises(Ambiguous):
        single_extreme({"a": 100.0, "b": 130.0}, "min", margin=60.0)
    assert single_extreme({"a": 100.0, "b": 161.0}, "min", margin=60.0) == "a"
    with pytest.raises(NoAnswer):
        single_extreme({}, "min")


def test_a_type_that_cannot_find_enough_single_answers_fails_the_generation(
    engine: Engine,
) -> None:
    def always_tied(rng: Random, data: OrgData) -> Draft:
        raise Ambiguous

    def never_asked(api: Api, task: dict[str, Any]) -> str:
        raise AssertionError("no tied task is drawn")

    kind = TaskType(
        "tied", "Nobody", "exact_match", always_tied, never_asked, ORIGINAL, DATABASE, "ids"
    )
    with engine.connect() as conn, pytest.raises(TaskGenerationFailed) as raised:
        draw_drafts(OrgData(conn=conn, tables=TABLES, org="original", seed=TEST_SEED), kind, 1, 3)
    assert str(raised.value) == (
        "Only 0 of 3 tied tasks, each distinct and with a single answer, could be drawn from "
        "org original (seed 1): ask for fewer"
    )


def test_an_org_without_task_types_is_named_in_the_error() -> None:
    with pytest.raises(TaskGenerationFailed) as raised:
        task_types("b2x")
    assert str(raised.value) == "No task types are defined for org b2x (known: b2b, b2c, original)"
