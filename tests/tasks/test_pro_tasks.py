"""The Pro orgs' sales tasks, on each back end: the same bytes from any database holding the org,
every answer computed a second way in Python over the generator's records, and the reference
agent scoring 1 on each in episodes of the org."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterator
from datetime import date
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
from app.tasks.periods import Period
from app.tasks.reference_agent import solve
from app.tasks.source import org_database
from tests.conftest import TEST_SEED
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

ORGS = ["b2b", "b2c"]
TYPES = ["sales_amount_understanding", "sales_cycle_understanding", "conversion_rate_comprehension"]
PER_TYPE = 5
Rows = dict[str, list[dict[str, Any]]]


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


def test_every_sales_type_is_generated(tasks: list[dict[str, Any]], org: str) -> None:
    assert [kind.name for kind in task_types(org)] == TYPES
    assert [task["task"] for task in tasks] == [name for name in TYPES for _ in range(PER_TYPE)]
    assert all(task["answer"].startswith("005") for task in tasks)
    assert all(task["persona"] == "Sales Manager" for task in tasks)


def test_the_org_generated_from_its_seed_gives_the_same_bytes(engine: Engine, org: str) -> None:
    here = generate_tasks(engine, tables_of(org), org=org, seed=TEST_SEED, per_type=PER_TYPE)
    with org_database(objects_dir(org), org=org, seed=TEST_SEED) as fresh:
        there = generate_tasks(
            fresh.engine, fresh.tables, org=org, seed=TEST_SEED, per_type=PER_TYPE
        )
    assert task_file_text(here) == task_file_text(there)


def _pick(values: dict[str, float], extreme: str) -> str:
    return (min if extreme == "min" else max)(values, key=lambda key: values[key])


def _sales_amount(records: Rows, period: Period, extreme: str) -> str:
    orders = {
        row["Id"]: row["OwnerId"]
        for row in records["Order"]
        if row["Status"] == "Activated"
        and period.start.date() <= row["EffectiveDate"] < period.end.date()
    }
    totals: dict[str, float] = {}
    for item in records["OrderItem"]:
        if item["OrderId"] in orders:
            owner = orders[item["OrderId"]]
            totals[owner] = totals.get(owner, 0.0) + item["Quantity"] * item["UnitPrice"]
    return _pick(totals, extreme)


def _sales_cycle(records: Rows, period: Period, extreme: str) -> str:
    field = "CompanySignedDate" if "CompanySignedDate" in records["Contract"][0] else None
    field = field or "CustomerSignedDate"
    signed: dict[str, date] = {
        row["Id"]: row[field]
        for row in records["Contract"]
        if row.get(field) and period.start.date() <= row[field] < period.end.date()
    }
    cycles: dict[str, list[float]] = {}
    for deal in records["Opportunity"]:
        if deal.get("ContractID__c") in signed:
            days = (signed[deal["ContractID__c"]] - deal["CreatedDate"].date()).days
            cycles.setdefault(deal["OwnerId"], []).append(float(days))
    return _pick({o: statistics.fmean(days) for o, days in cycles.items()}, extreme)


def _conversion_rate(records: Rows, period: Period, extreme: str) -> str:
    leads: dict[str, list[bool]] = {}
    for lead in records["Lead"]:
        if period.holds(lead["CreatedDate"]):
            converted = lead["ConvertedDate"]
            inside = converted is not None and converted < period.end.date()
            leads.setdefault(lead["OwnerId"], []).append(inside)
    rates = {o: sum(won) / len(won) for o, won in leads.items() if len(won) >= 3}
    return _pick(rates, extreme)


SECOND_SOLVERS: dict[str, Callable[..., str]] = {
    "sales_amount_understanding": _sales_amount,
    "sales_cycle_understanding": _sales_cycle,
    "conversion_rate_comprehension": _conversion_rate,
}


def test_every_answer_is_what_the_records_give_computed_in_python(engine: Engine, org: str) -> None:
    records = build_rows(tables_of(org).registry, org, TEST_SEED)
    for kind in task_types(org):
        with engine.connect() as conn:
            data = OrgData(conn=conn, tables=tables_of(org), org=org, seed=TEST_SEED)
            drafts = draw_drafts(data, kind, TEST_SEED, PER_TYPE)
        for draft in drafts:
            assert SECOND_SOLVERS[kind.name](records, **draft.params) == draft.answer, draft


@pytest.fixture(scope="module")
def control(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> Iterator[httpx.Client]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with (
        serve_in_thread(app) as port,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client,
    ):
        yield client


def test_the_reference_agent_solves_every_sales_task(
    control: httpx.Client, tasks: list[dict[str, Any]], org: str
) -> None:
    rewards = run_tasks(control, tasks, solve, org=org, seed=TEST_SEED)
    assert list(rewards.values()) == [1.0] * len(tasks)
