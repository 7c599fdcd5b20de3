"""The parse-and-bind cache: a repeated query costs only its execution."""

from __future__ import annotations

from datetime import date, datetime

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.services import search
from app.services.compiled_cache import STATEMENT_BUDGET
from app.services.query import batch_size_from, prepare
from app.soql.date_literals import UTC_EPOCH_CALENDAR, OrgCalendar
from app.soql.function_registry import FUNCTIONS
from app.storage.tables import TableSet

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
TABLES = TableSet(REGISTRY)


def test_a_repeated_query_is_compiled_once() -> None:
    text = "SELECT Id, Account.Name FROM Contact WHERE LastName LIKE 'a%' ORDER BY Name LIMIT 3"
    first = prepare(REGISTRY, TABLES, text, False, UTC_EPOCH_CALENDAR, FUNCTIONS)
    second = prepare(REGISTRY, TABLES, text, False, UTC_EPOCH_CALENDAR, FUNCTIONS)
    assert first is second
    # queryAll compiles its own statement: it must not hide deleted rows.
    assert prepare(REGISTRY, TABLES, text, True, UTC_EPOCH_CALENDAR, FUNCTIONS) is not first


def test_the_cache_keys_on_the_org_calendar() -> None:
    """Date literals resolve against the org's day and zone: another day compiles anew."""
    text = "SELECT Id FROM Order WHERE EffectiveDate = TODAY"
    monday = OrgCalendar(today=date(2024, 6, 3), zone="UTC", fiscal_start_month=1)
    tuesday = OrgCalendar(today=date(2024, 6, 4), zone="UTC", fiscal_start_month=1)
    first = prepare(REGISTRY, TABLES, text, False, monday, FUNCTIONS)
    assert prepare(REGISTRY, TABLES, text, False, monday, FUNCTIONS) is first
    second = prepare(REGISTRY, TABLES, text, False, tuesday, FUNCTIONS)
    assert second is not first
    params = second.statement.compile().params
    assert date(2024, 6, 4) in params.values()
    assert date(2024, 6, 3) not in params.values()


def test_batch_size_option_parsing() -> None:
    assert batch_size_from(None) == 2000
    assert batch_size_from("batchSize=700") == 700
    assert batch_size_from("batchsize = 50") == 200
    assert batch_size_from("batchSize=5000") == 2000
    assert batch_size_from("batchSize=abc") == 2000


def test_the_cache_holds_a_budget_of_statements_not_of_searches() -> None:
    """A search of every object weighs one statement per object: fewer of them are kept."""

    def every_object(n: int) -> str:
        return f"FIND {{budget{n}}}"

    first = search.prepare(
        REGISTRY, TABLES, "sqlite", every_object(0), UTC_EPOCH_CALENDAR, FUNCTIONS
    )
    per_search = len(first.targets)
    assert per_search > 10
    for n in range(1, STATEMENT_BUDGET // per_search + 2):
        search.prepare(REGISTRY, TABLES, "sqlite", every_object(n), UTC_EPOCH_CALENDAR, FUNCTIONS)
    # The first was the least recently used: it went, and compiles anew.
    assert (
        search.prepare(REGISTRY, TABLES, "sqlite", every_object(0), UTC_EPOCH_CALENDAR, FUNCTIONS)
        is not first
    )
    recent = search.prepare(
        REGISTRY, TABLES, "sqlite", every_object(3), UTC_EPOCH_CALENDAR, FUNCTIONS
    )
    assert (
        search.prepare(REGISTRY, TABLES, "sqlite", every_object(3), UTC_EPOCH_CALENDAR, FUNCTIONS)
        is recent
    )


def test_the_search_cache_keys_on_the_org_calendar() -> None:
    """A search's date literals resolve against the org's day too: another day compiles anew."""
    text = "FIND {rope} RETURNING Pricebook2(Name WHERE ValidFrom = TODAY)"
    monday = OrgCalendar(today=date(2024, 6, 3), zone="UTC", fiscal_start_month=1)
    tuesday = OrgCalendar(today=date(2024, 6, 4), zone="UTC", fiscal_start_month=1)
    first = search.prepare(REGISTRY, TABLES, "sqlite", text, monday, FUNCTIONS)
    assert search.prepare(REGISTRY, TABLES, "sqlite", text, monday, FUNCTIONS) is first
    second = search.prepare(REGISTRY, TABLES, "sqlite", text, tuesday, FUNCTIONS)
    assert second is not first
    (target,) = second.targets
    assert target.compiled is not None
    bounds = set(target.compiled.statement.compile().params.values())
    assert datetime(2024, 6, 4) in bounds and datetime(2024, 6, 5) in bounds
