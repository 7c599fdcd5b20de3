"""The Pro orgs' tasks (their own sales figures, and the service types they share with the
original org), on each back end: the same bytes from any database holding the org,
every answer computed a second way in Python over the generator's records, and the reference
agent scoring 1 on each in episodes of the org."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import build_rows
from app.seeding.templates import fill_template
from app.storage.database import create_db_engine
from app.storage.tables import TableSet
from app.tasks.generator import draw_drafts, generate_tasks, task_file_text, task_types
from app.tasks.harness import run_tasks
from app.tasks.model import OrgData
from app.tasks.reference_agent import solve
from app.tasks.source import org_database
from tests.conftest import TEST_SEED
from tests.databases import DatabaseFactory
from tests.tasks.second_solvers import SECOND_SOLVERS

ORGS = ["b2b", "b2c"]
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
    "sales_amount_understanding",
    "sales_cycle_understanding",
    "conversion_rate_comprehension",
    "quote_approval",
    "invalid_config",
    "lead_routing",
    "lead_qualification",
    "activity_priority",
    "wrong_stage_rectification",
    "private_customer_information",
    "internal_operation_data",
    "confidential_company_knowledge",
    "stage_rectification_write",
    "lead_routing_write",
    "case_closing_write",
    "sales_insight_mining",
    "custom_field_creation",
    "custom_object_creation",
    "custom_field_update",
]
AGENT_ANSWERS = {
    "case_routing",
    "handle_time",
    "transfer_count",
    "sales_amount_understanding",
    "sales_cycle_understanding",
    "conversion_rate_comprehension",
    "lead_routing",
}
PER_TYPE = 10


def objects_dir(org: str) -> Any:
    return REPO_ROOT / "seed" / "orgs" / org / "objects"


def tables_of(org: str) -> TableSet:
    return TableSet(SchemaRegistry.from_directory(objects_dir(org)))


@pytest.fixture(scope="module", params=ORGS)
def org(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def engine(database_factory: DatabaseFactory, org: str) -> Iterator[Engine]:
    url = database_factory.new_url()
    fill_template(url, objects_dir=objects_dir(org), org=org, seed=TEST_SEED, imported_from=None)
    engine = create_db_engine(url, must_exist=True)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def tasks(engine: Engine, org: str) -> list[dict[str, Any]]:
    rows = generate_tasks(engine, tables_of(org), org=org, seed=TEST_SEED, per_type=PER_TYPE)
    parsed: list[dict[str, Any]] = json.loads(task_file_text(rows))
    return parsed


def test_every_type_is_generated(tasks: list[dict[str, Any]], org: str) -> None:
    assert [kind.name for kind in task_types(org)] == TYPES
    assert [task["task"] for task in tasks] == [name for name in TYPES for _ in range(PER_TYPE)]
    for task in tasks:
        if task["task"] in AGENT_ANSWERS:
            assert task["answer"] == [None] or task["answer"][0].startswith("005"), task


@functools.cache
def fresh_task_file(org: str) -> str:
    """The task file of the org generated anew from its seed (once per org: the same for the
    back ends the loaded org is compared on)."""
    with org_database(objects_dir(org), org=org, seed=TEST_SEED) as fresh:
        rows = generate_tasks(
            fresh.engine, fresh.tables, org=org, seed=TEST_SEED, per_type=PER_TYPE
        )
    return task_file_text(rows)


def test_the_org_generated_from_its_seed_gives_the_same_bytes(engine: Engine, org: str) -> None:
    here = generate_tasks(engine, tables_of(org), org=org, seed=TEST_SEED, per_type=PER_TYPE)
    assert task_file_text(here) == fresh_task_file(org)


def test_every_answer_is_what_the_records_give_computed_in_python(engine: Engine, org: str) -> None:
    records = build_rows(tables_of(org).registry, org, TEST_SEED)
    for kind in task_types(org):
        with engine.connect() as conn:
            data = OrgData(conn=conn, tables=tables_of(org), org=org, seed=TEST_SEED)
            drafts = draw_drafts(data, kind, TEST_SEED, PER_TYPE)
        for draft in drafts:
            assert SECOND_SOLVERS[kind.name](records, **draft.params) == draft.answer, draft


def test_every_answer_is_a_list_as_in_crmarena_pros_rows(tasks: list[dict[str, Any]]) -> None:
    for task in tasks:
        assert isinstance(task["answer"], list), task
        if task["reward_metric"] != "diff_match":
            assert task["answer"], task  # [None] where the answer is None


def test_the_reference_agent_solves_every_task(
    agent_control: httpx.Client, tasks: list[dict[str, Any]], org: str
) -> None:
    rewards = run_tasks(agent_control, tasks, solve, org=org, seed=TEST_SEED)
    assert list(rewards.values()) == [1.0] * len(tasks)
