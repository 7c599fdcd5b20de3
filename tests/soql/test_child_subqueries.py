"""Parent-to-child subqueries across batches: the children are read when the query runs, one
query per subquery per 2,000 parents (never one per parent row, nor any when a later batch is
served), every parent gets exactly its own children, and a later batch shows the children as
they were when the query ran, on both backends. The shapes of single-batch results are in
tests/soql/fixtures/corpus_part2.yaml."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from app.api.state import AppState
from app.metadata.loader import load_object
from app.metadata.registry import SchemaRegistry
from app.soql.bind_context import LIMITS
from app.soql.binder import bind
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.errors import SoqlError
from app.soql.function_registry import FUNCTIONS
from app.soql.parser import parse
from tests.conftest import API


@pytest.fixture
def statements(api: TestClient) -> Iterator[list[str]]:
    """The SQL statements the default sandbox runs while the test runs."""
    state: AppState = api.app.state.localforce  # type: ignore[attr-defined]
    engine = state.sandboxes.get("default").engine
    seen: list[str] = []

    def record(*args: Any) -> None:
        seen.append(args[2])

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def _all_pages(api: TestClient, query: str, batch_size: int) -> list[dict[str, Any]]:
    headers = {"Sforce-Query-Options": f"batchSize={batch_size}"}
    body = api.get(f"{API}/query", params={"q": query}, headers=headers).json()
    records = list(body["records"])
    while not body["done"]:
        body = api.get(body["nextRecordsUrl"]).json()
        records.extend(body["records"])
    return records


def test_each_batch_runs_one_query_per_subquery(api: TestClient, statements: list[str]) -> None:
    query = (
        "SELECT Id, (SELECT Id FROM Cases), (SELECT Id FROM Contacts), (SELECT Id FROM Orders) "
        "FROM Account ORDER BY Id"
    )
    records = _all_pages(api, query, batch_size=200)
    assert len(records) == 201
    # The parents once, then one query for each of the 3 subqueries; the second batch (of 1)
    # is served from the cursor and runs none.
    assert len(_child_queries(statements)) == 3, statements


def _child_queries(statements: list[str]) -> list[str]:
    """The statements that read child records (not the platform's own, such as the Bulk job
    runner's poll, which shares the engine on PostgreSQL)."""
    selects = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT")]
    children = [sql for sql in selects if "IN (" in sql.upper() or "ANY (" in sql.upper()]
    return [sql for sql in children if "lf_bulk_job" not in sql]


def test_children_of_many_parents_are_read_2000_parents_at_a_time(
    api: TestClient, statements: list[str]
) -> None:
    records = _all_pages(api, "SELECT Id, (SELECT Id FROM OrderItems) FROM Order", 2000)
    assert len(records) > 2000
    assert len(_child_queries(statements)) == -(-len(records) // 2000)


def test_every_parent_gets_exactly_its_children(api: TestClient) -> None:
    records = _all_pages(
        api,
        "SELECT Id, (SELECT Id, OrderId FROM OrderItems ORDER BY Id) FROM Order ORDER BY Id",
        batch_size=500,
    )
    items = _all_pages(api, "SELECT Id, OrderId FROM OrderItem ORDER BY Id", batch_size=2000)
    expected = Counter(item["OrderId"] for item in items)
    for record in records:
        children = record["OrderItems"]
        if expected[record["Id"]] == 0:
            assert children is None
            continue
        assert children["totalSize"] == expected[record["Id"]] == len(children["records"])
        assert children["done"] is True
        assert {child["OrderId"] for child in children["records"]} == {record["Id"]}
        ids = [child["Id"] for child in children["records"]]
        assert ids == sorted(ids)
    assert sum(expected.values()) == len(items) == 7100


def test_child_limit_applies_per_parent(api: TestClient) -> None:
    records = _all_pages(
        api,
        "SELECT Id, (SELECT Id FROM OrderItems ORDER BY Quantity DESC, Id LIMIT 2) "
        "FROM Order WHERE Id IN (SELECT OrderId FROM OrderItem) ORDER BY Id LIMIT 300",
        batch_size=200,
    )
    items = _all_pages(
        api, "SELECT Id, OrderId, Quantity FROM OrderItem ORDER BY Id", batch_size=2000
    )
    by_order: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_order.setdefault(item["OrderId"], []).append(item)
    for record in records:
        ranked = sorted(by_order[record["Id"]], key=lambda item: (-item["Quantity"], item["Id"]))
        expected = [item["Id"] for item in ranked[:2]]
        got = record["OrderItems"]
        assert (got is None) == (not expected)
        assert ([child["Id"] for child in got["records"]] if got else []) == expected


# A reply to a reply to ...: a chain of child relationships as deep as a test needs.
REPLIES = SchemaRegistry(
    [
        load_object(
            {
                "name": "Zq_Reply__c",
                "keyPrefix": "a7Z",
                "fields": {
                    "Name": {"type": "string"},
                    "Parent__c": {
                        "type": "reference",
                        "referenceTo": ["Zq_Reply__c"],
                        "relationshipName": "Parent__r",
                        "childRelationshipName": "Answers__r",
                    },
                },
            }
        )
    ]
)


def _nested(levels: int) -> str:
    query = "SELECT Name FROM Answers__r"
    for _ in range(levels - 2):
        query = f"SELECT Name, ({query}) FROM Answers__r"
    return f"SELECT Name, ({query}) FROM Zq_Reply__c"


def test_five_levels_of_parent_to_child_queries_bind_and_six_do_not() -> None:
    five = _nested(5)
    assert five.count("SELECT") == 5
    bind(
        REPLIES, five, parse(five), calendar=UTC_EPOCH_CALENDAR, functions=FUNCTIONS, limits=LIMITS
    )
    six = _nested(6)
    with pytest.raises(SoqlError) as raised:
        bind(
            REPLIES,
            six,
            parse(six),
            calendar=UTC_EPOCH_CALENDAR,
            functions=FUNCTIONS,
            limits=LIMITS,
        )
    assert raised.value.error_code == "MALFORMED_QUERY"
    assert raised.value.reason == (
        "Parent-to-child queries reach at most 5 levels: the outer query and 4 nested subqueries"
    )


def test_a_later_batch_shows_the_children_as_they_were_when_the_query_ran(
    api: TestClient,
) -> None:
    query = "SELECT Id, (SELECT Id FROM Contacts ORDER BY Id) FROM Account ORDER BY Id"
    headers = {"Sforce-Query-Options": "batchSize=200"}
    first = api.get(f"{API}/query", params={"q": query}, headers=headers).json()
    assert len(first["records"]) == 200 and first["totalSize"] == 201
    before = _all_pages(api, query, batch_size=200)[200]
    # Between the first batch and the second: a child of the second batch's account, a new
    # account that would sort last, and a child of an account of the first batch.
    bodies = [
        ("Contact", {"LastName": "Late", "AccountId": before["Id"]}),
        ("Account", {"Name": "Late"}),
        ("Contact", {"LastName": "Early", "AccountId": first["records"][0]["Id"]}),
    ]
    made = [(name, api.post(f"{API}/sobjects/{name}", json=body)) for name, body in bodies]
    try:
        assert all(response.status_code == 201 for _, response in made)
        second = api.get(first["nextRecordsUrl"]).json()
        assert second["done"] is True
        assert second["records"] == [before]
        now = _all_pages(api, query, batch_size=200)
        assert len(now) == 202
        assert (
            len(now[200]["Contacts"]["records"])
            == len((before["Contacts"] or {"records": []})["records"]) + 1
        )
    finally:
        for sobject, response in made:
            api.delete(f"{API}/sobjects/{sobject}/{response.json()['id']}")
