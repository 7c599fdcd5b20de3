"""CRMArena's function-calling tools over MCP (crmarena.md 6.2), through the real client: each
answers what CRMArena's function answers, as its tool environment shows it (str() of the
result), its queries checked against the same queries run over REST with the connector's
rules (top-level `attributes` dropped, all-null columns dropped)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.agents.test_mcp import CRMARENA_TOOLS, mcp_client, token_of
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

pytestmark = pytest.mark.asyncio

START, END = "2021-01-01T00:00:00Z", "2021-07-01T00:00:00Z"


@pytest.fixture(scope="module")
def base_url(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[str]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"


def connector_records(base_url: str, token: str, soql: str) -> list[dict[str, Any]]:
    """The query over REST, shaped as CRMArena's connector shapes it."""
    headers = {"Authorization": f"Bearer {token}"}
    url = f"{base_url}/services/data/v59.0/query"
    body = httpx.get(url, params={"q": soql}, headers=headers, timeout=60).json()
    records = list(body["records"])
    while not body["done"]:
        body = httpx.get(base_url + body["nextRecordsUrl"], headers=headers, timeout=60).json()
        records += body["records"]
    for record in records:
        record.pop("attributes")
    if records:
        empty = [key for key in records[0] if all(r.get(key) is None for r in records)]
        for record in records:
            for key in empty:
                record.pop(key)
    return records


async def shown(client: Any, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return str(result.content[0].text)


async def test_the_crmarena_tools_are_listed_with_their_arguments(base_url: str) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= CRMARENA_TOOLS
    assert set(tools["get_cases"].input_schema["properties"]) == {
        "start_date", "end_date", "agent_ids", "case_ids", "order_item_ids", "issue_ids",
        "statuses",
    }  # fmt: skip
    assert tools["get_period"].input_schema["required"] == ["period_name", "year"]


LOCAL = [
    ("get_period", {"period_name": "Q2", "year": 2023},
     "{'start_date': '2023-04-01T00:00:00Z', 'end_date': '2023-07-01T00:00:00Z'}"),
    ("get_period", {"period_name": "Winter", "year": 2022},
     "{'start_date': '2022-12-01T00:00:00Z', 'end_date': '2023-03-01T00:00:00Z'}"),
    ("get_period", {"period_name": "May", "year": 2020},
     "{'start_date': '2020-05-01T00:00:00Z', 'end_date': '2020-06-01T00:00:00Z'}"),
    ("get_period", {"period_name": "Monsoon", "year": 2020},
     "Error: Invalid period_name. Must be one of January, February, March, April, May, June, "
     "July, August, September, October, November, December, Q1, Q2, Q3, Q4, Spring, Summer, "
     "Fall, Winter"),
    ("get_start_date", {"end_date": "2024-03-31T00:00:00Z", "period": "month", "interval_count": 1},
     "2024-02-29T00:00:00Z"),
    ("get_start_date", {"end_date": "2024-03-31T10:00:00Z", "period": "quarter",
                        "interval_count": 2}, "2023-09-30T10:00:00Z"),
    ("get_start_date", {"end_date": "2024-03-31T00:00:00Z", "period": "week", "interval_count": 4},
     "2024-03-03T00:00:00Z"),
    ("get_start_date", {"end_date": "2024-03-31", "period": "day", "interval_count": 1},
     "Error: Invalid end_date format. Expected format: 'YYYY-MM-DDTHH:MM:SSZ'"),
    ("get_start_date", {"end_date": "2024-03-31T00:00:00Z", "period": "year", "interval_count": 1},
     "Error: Invalid period. Must be 'day', 'week', 'month', or 'quarter'"),
    ("get_start_date", {"end_date": "2024-03-31T00:00:00Z", "period": "month",
                        "interval_count": 30000},
     "Error: An unexpected error occurred - year -476 is out of range"),
    ("get_start_date", {"end_date": "2024-03-31T00:00:00Z", "period": "day",
                        "interval_count": 10**8},
     "Error: An unexpected error occurred - date value out of range"),
    ("get_period", {"period_name": "Winter", "year": 9999},
     "Error: An unexpected error occurred - year 10000 is out of range"),
    ("find_id_with_max_value", {"values_by_id": {"a": 1, "b": 3, "c": 3}}, "['b', 'c']"),
    ("find_id_with_min_value", {"values_by_id": {"a": 1.5, "b": 3}}, "['a']"),
    ("find_id_with_min_value", {"values_by_id": {}}, "None"),
    ("get_agents_with_max_cases",
     {"subset_cases": [{"OwnerId": "x"}, {"OwnerId": "x"}, {"OwnerId": "y"}]}, "['x']"),
    ("get_agents_with_min_cases",
     {"subset_cases": [{"OwnerId": "x"}, {"OwnerId": "x"}, {"OwnerId": "y"}]}, "['y']"),
    ("get_agents_with_min_cases", {"subset_cases": []}, "[]"),
    ("get_qualified_agent_ids_by_case_count",
     {"agent_handled_cases": {"x": 2, "y": 1}, "n_cases": 2}, "['x']"),
    ("calculate_average_handle_time", {"cases": [
        {"OwnerId": "x", "CreatedDate": "2021-01-01T10:00:00.000+0000",
         "ClosedDate": "2021-01-01T11:00:00.000+0000"},
        {"OwnerId": "x", "CreatedDate": "2021-01-02T10:00:00.000+0000",
         "ClosedDate": "2021-01-02T12:00:00.000+0000"}]}, "{'x': 90.0}"),
    ("calculate_average_handle_time", {"cases": [
        {"OwnerId": "x", "CreatedDate": "2021-01-01", "ClosedDate": "2021-01-02"}]},
     "Error: Invalid date format at index 0. Expected format: '%Y-%m-%dT%H:%M:%S.%f%z'"),
    ("calculate_region_average_closure_times", {"cases": [
        {"ShippingState": "CA", "CreatedDate": "2021-01-01T10:00:00.000+0000",
         "ClosedDate": "2021-01-01T10:01:00.000+0000"},
        {"ShippingState": None, "CreatedDate": "x", "ClosedDate": "y"}]}, "{'CA': 60.0}"),
    ("calculate_region_average_closure_times", {"cases": []}, "Error: Input 'cases' is empty"),
    ("calculate_average_handle_time", {"cases": [
        {"OwnerId": ["x"], "CreatedDate": "2021-01-01T10:00:00.000+0000",
         "ClosedDate": "2021-01-01T11:00:00.000+0000"}]},
     "Error: An unexpected error occurred - unhashable type: 'list'"),
    ("get_month_to_case_count", {"cases": [
        {"CreatedDate": "2021-03-01T10:00:00.000+0000"},
        {"CreatedDate": "2021-03-09T10:00:00.000+0000"},
        {"CreatedDate": "2021-05-01T10:00:00.000+0000"}]}, "{'March': 2, 'May': 1}"),
    ("respond", {"content": "005Lf000000001XIAQ"}, "005Lf000000001XIAQ"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "expected"), LOCAL)
async def test_the_computing_tools_answer_as_crmarenas(
    base_url: str, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        assert await shown(client, tool, arguments) == expected


async def test_the_querying_tools_answer_what_their_queries_give(base_url: str) -> None:
    token = token_of(base_url)

    def rest(soql: str) -> list[dict[str, Any]]:
        return connector_records(base_url, token, soql)

    cases = rest(
        f"SELECT Id, OwnerId, AccountId, ContactId, OrderItemId__c FROM Case "
        f"WHERE CreatedDate >= {START} AND CreatedDate < {END} AND Status = 'Closed' LIMIT 3"
    )
    agent, product = (
        cases[0]["OwnerId"],
        rest(f"SELECT Product2Id FROM OrderItem WHERE Id = '{cases[0]['OrderItemId__c']}'")[0][
            "Product2Id"
        ],
    )
    async with mcp_client(base_url, token) as client:

        async def call(tool: str, **arguments: Any) -> str:
            return await shown(client, tool, arguments)

        assert await call("get_issues") == str(rest("SELECT Id, Name FROM Issue__c"))
        history = rest(
            "SELECT NewValue__c, CreatedDate FROM CaseHistory__c WHERE CreatedDate >= "
            f"{START} AND CreatedDate <= {END} AND Field__c = 'Owner Assignment'"
        )
        handled = Counter(record["NewValue__c"] for record in history)
        assert await call("get_agent_handled_cases_by_period", start_date=START, end_date=END) == (
            f"defaultdict(<class 'int'>, {dict(handled)})"
        )
        got = await call("get_cases", start_date=START, end_date=END, agent_ids=[agent],
                         statuses=["Closed"])  # fmt: skip
        assert got == str(rest(
            "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE CreatedDate >= "
            f"{START} AND CreatedDate < {END} AND OwnerId = '{agent}' AND Status = 'Closed'"
        ))  # fmt: skip
        once = rest(
            "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND "
            f"CreatedDate >= {START} AND CreatedDate <= {END} GROUP BY CaseId__c "
            "HAVING COUNT(Id) = 1"
        )
        assert await call("get_non_transferred_case_ids", start_date=START, end_date=END) == str(
            [record["CaseId__c"] for record in once]
        )
        moved = rest(
            "SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner "
            f"Assignment' AND OldValue__c != NULL AND CreatedDate >= {START} AND "
            f"CreatedDate <= {END}"
        )
        assert await call(
            "get_agent_transferred_cases_by_period", start_date=START, end_date=END
        ) == str(dict(Counter(record["OldValue__c"] for record in moved)))
        account_id = cases[0]["AccountId"]
        accounts = rest(f"SELECT Id, ShippingState FROM Account WHERE Id = '{account_id}'")
        with_state = await call("get_shipping_state", cases=[{"AccountId": account_id}])
        state = accounts[0]["ShippingState"]
        assert with_state == str([{"AccountId": account_id, "ShippingState": state}])
        items = [r["Id"] for r in rest(f"SELECT Id FROM OrderItem WHERE Product2Id = '{product}'")]
        assert await call("get_order_item_ids_by_product", product_id=product) == str(items)
        quoted = "','".join(items)
        counts = rest(
            f"SELECT IssueId__c, COUNT(Id) IssueCount FROM Case WHERE OrderItemId__c IN "
            f"('{quoted}') AND CreatedDate >= {START} AND CreatedDate <= {END} "
            "GROUP BY IssueId__c ORDER BY COUNT(Id) DESC"
        )
        assert await call(
            "get_issue_counts", start_date=START, end_date=END, order_item_ids=items
        ) == str({record.get("IssueId__c"): record["IssueCount"] for record in counts})
        contact = cases[0]["ContactId"]
        account = rest(f"SELECT AccountId FROM Contact WHERE Id = '{contact}' LIMIT 1")
        assert await call("get_account_id_by_contact_id", contact_id=contact) == str(
            account[0]["AccountId"]
        )
        assert await call(
            "get_purchase_history", account_id=account[0]["AccountId"],
            purchase_date="2020-01-01T00:00:00Z", related_product_ids=[product],
        ) == "[]"  # fmt: skip
        case = cases[0]["Id"]
        assert await call("get_email_messages_by_case_id", case_id=case) == str(rest(
            "SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage "
            f"WHERE ParentId = '{case}'"
        ))  # fmt: skip
        assert await call("get_livechat_transcript_by_case_id", case_id=case) == str(
            rest(f"SELECT Body, EndTime FROM LiveChatTranscript WHERE CaseId = '{case}'")
        )
        soql = "SELECT Id, Name FROM Issue__c LIMIT 2"
        assert await call("issue_soql_query", query=soql) == str(rest(soql))
        found = await call("search_products", search_term="shoes")
        assert found.startswith("['01t")
        articles = await call("search_knowledge_articles", search_term="return")
        assert articles.startswith("[{'Id': 'ka0") and "'Content': " in articles
        sosl = await call(
            "issue_sosl_query", query="FIND {shoes} IN ALL FIELDS RETURNING Product2(Id)"
        )
        assert sosl.startswith("[{'Id': '01t")


async def test_a_query_error_is_the_connectors_text_not_a_tool_error(base_url: str) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        text = await shown(client, "issue_soql_query", {"query": "SELECT Nope FROM Case"})
        none = await shown(client, "get_cases", {})
    assert text.startswith("INVALID_FIELD: \nSELECT Nope FROM Case")
    assert none == "Error: At least one filter criteria must be provided"
