"""The MCP endpoint through the real MCP client (the `mcp` SDK over streamable HTTP) against a
served org: the tools list, every tool called, Salesforce errors as tool errors, and a token
that reaches its own sandbox only."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextResourceContents

from tests.conftest import ADMIN_HEADERS
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

pytestmark = pytest.mark.asyncio

TOOLS = {
    "soql_query",
    "sosl_search",
    "describe_global",
    "describe",
    "get_record",
    "create_record",
    "update_record",
    "delete_record",
    "read_metadata",
    "create_metadata",
    "update_metadata",
    "submit_answer",
}
METADATA_WRITES = {"create_metadata", "update_metadata"}
# CRMArena's function-calling tools (crmarena.md 6.2), served beside them.
CRMARENA_TOOLS = {
    "get_agents_with_max_cases", "get_agents_with_min_cases", "calculate_average_handle_time",
    "get_start_date", "get_period", "get_agent_handled_cases_by_period",
    "get_qualified_agent_ids_by_case_count", "get_cases", "get_non_transferred_case_ids",
    "get_agent_transferred_cases_by_period", "get_shipping_state",
    "calculate_region_average_closure_times", "get_order_item_ids_by_product", "get_issue_counts",
    "find_id_with_max_value", "find_id_with_min_value", "get_account_id_by_contact_id",
    "get_purchase_history", "get_month_to_case_count", "search_knowledge_articles",
    "search_products", "get_issues", "respond", "get_email_messages_by_case_id",
    "get_livechat_transcript_by_case_id", "issue_soql_query", "issue_sosl_query",
}  # fmt: skip


@pytest.fixture(scope="module")
def base_url(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[str]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"


def token_of(base_url: str, username: str = "agent@example.com", password: str = "x") -> str:
    response = httpx.post(
        f"{base_url}/services/oauth2/token",
        data={"grant_type": "password", "username": username, "password": password},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["access_token"])


def sandbox_token(base_url: str, sandbox: str) -> str:
    made = httpx.post(
        f"{base_url}/__localforce/sandboxes",
        headers=ADMIN_HEADERS,
        json={"id": sandbox},
        timeout=60,
    )
    assert made.status_code == 201, made.text
    return token_of(base_url, f"agent@example.com.{sandbox}", made.json()["password"])


@asynccontextmanager
async def mcp_client(base_url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
        async with Client(transport) as client:
            yield client


def content_of(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def error_of(result: Any) -> str:
    """The Salesforce error a tool error carries, after the SDK's 'Error executing tool
    <name>: '."""
    assert result.is_error
    text = str(result.content[0].text)
    assert text.startswith("Error executing tool "), text
    return text.split(": ", 1)[1]


async def test_the_tools_are_listed(base_url: str) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        listed = await client.list_tools()
    assert {tool.name for tool in listed.tools} == TOOLS | CRMARENA_TOOLS
    assert len(CRMARENA_TOOLS) == 27
    hints = {
        tool.name: (tool.annotations.read_only_hint, tool.annotations.destructive_hint)
        for tool in listed.tools
        if tool.annotations is not None
    }
    writes = dict.fromkeys({"create_record", "update_record", *METADATA_WRITES}, (False, False))
    assert hints == {
        **dict.fromkeys(TOOLS | CRMARENA_TOOLS, (True, None)),
        **writes,
        "delete_record": (False, True),
    }


async def test_a_query_returns_every_record_of_every_page(base_url: str) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        query = {"query": "SELECT Id FROM OrderItem"}
        result = content_of(await client.call_tool("soql_query", query))
    assert result["done"] is True
    assert result["totalSize"] == len(result["records"]) == 7100  # four pages of 2,000


async def test_a_bad_query_is_the_salesforce_error(base_url: str) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        result = await client.call_tool("soql_query", {"query": "SELECT Nope FROM Case"})
    assert error_of(result).startswith("INVALID_FIELD: ")


async def test_search_describe_and_records_round_trip(base_url: str) -> None:
    token = sandbox_token(base_url, "mcp-crud")
    async with mcp_client(base_url, token) as client:
        found = content_of(
            await client.call_tool(
                "sosl_search", {"search": "FIND {shoes} IN ALL FIELDS RETURNING Product2(Id, Name)"}
            )
        )
        assert found["searchRecords"]
        objects = content_of(await client.call_tool("describe_global", {}))
        assert "Case" in {sobject["name"] for sobject in objects["sobjects"]}
        case = content_of(await client.call_tool("describe", {"sobject": "Case"}))
        assert "OwnerId" in {field["name"] for field in case["fields"]}
        created = content_of(
            await client.call_tool(
                "create_record", {"sobject": "Issue__c", "fields": {"Name": "Frayed laces"}}
            )
        )
        assert created["success"] is True and created["id"].startswith("a1M")
        issue = created["id"]
        updated = await client.call_tool(
            "update_record",
            {"sobject": "Issue__c", "record_id": issue, "fields": {"Name": "Broken laces"}},
        )
        assert content_of(updated) == {"id": issue, "success": True}
        read = content_of(
            await client.call_tool(
                "get_record", {"sobject": "Issue__c", "record_id": issue, "fields": ["Name"]}
            )
        )
        assert read["Name"] == "Broken laces"
        gone = {"sobject": "Issue__c", "record_id": issue}
        deleted = await client.call_tool("delete_record", gone)
        assert content_of(deleted) == {"id": issue, "success": True}
        read_again = await client.call_tool("get_record", gone)
        assert error_of(read_again) == "ENTITY_IS_DELETED: entity is deleted"


async def test_a_path_in_a_name_reaches_no_other_endpoint(base_url: str) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        result = await client.call_tool("describe", {"sobject": "../../../__localforce/sandboxes"})
    assert error_of(result) == "NOT_FOUND: The requested resource does not exist"


async def test_no_token_or_a_bad_one_is_an_invalid_session(base_url: str) -> None:
    for token in (None, "00D!forged"):
        async with mcp_client(base_url, token) as client:
            result = await client.call_tool("soql_query", {"query": "SELECT Id FROM Case"})
            assert error_of(result) == "INVALID_SESSION_ID: Session expired or invalid"
            answered = await client.call_tool("submit_answer", {"response": "None"})
            assert error_of(answered) == "INVALID_SESSION_ID: Session expired or invalid"


async def test_a_sandbox_token_reaches_its_own_sandbox_only(base_url: str) -> None:
    token_a, token_b = sandbox_token(base_url, "mcp-a"), sandbox_token(base_url, "mcp-b")
    async with mcp_client(base_url, token_a) as client:
        created = content_of(
            await client.call_tool(
                "create_record", {"sobject": "Issue__c", "fields": {"Name": "Only in A"}}
            )
        )
    query = {"query": "SELECT Id FROM Issue__c WHERE Name = 'Only in A'"}
    async with mcp_client(base_url, token_b) as client:
        in_b = content_of(await client.call_tool("soql_query", query))
        read = await client.call_tool(
            "get_record", {"sobject": "Issue__c", "record_id": created["id"]}
        )
    assert in_b["totalSize"] == 0
    assert error_of(read) == "NOT_FOUND: The requested resource does not exist"
    async with mcp_client(base_url, token_a) as client:
        assert content_of(await client.call_tool("soql_query", query))["totalSize"] == 1


BEST_REGION = {
    "idx": 0,
    "task": "best_region_identification",
    "answer": "CA",
    "persona": "Service Analyst",
    "metadata": {"required": "Today's date: 2024-01-01", "optional": ""},
    "reward_metric": "exact_match",
    "query": "Which state closed cases fastest?",
}


def start_episode(base_url: str, episode_id: str, task: dict[str, Any]) -> dict[str, Any]:
    made = httpx.post(
        f"{base_url}/__localforce/episodes",
        headers=ADMIN_HEADERS,
        json={"id": episode_id, "task": task},
    )
    assert made.status_code == 201, made.text
    return dict(made.json())


def result_of(base_url: str, episode_id: str) -> dict[str, Any]:
    """The operator's view of an episode's result."""
    shown = httpx.get(f"{base_url}/__localforce/episodes/{episode_id}", headers=ADMIN_HEADERS)
    assert shown.status_code == 200, shown.text
    return dict(shown.json()["result"])


async def test_submit_answer_grades_the_episode_once_and_only_an_episode(base_url: str) -> None:
    wrong_token = start_episode(base_url, "mcp-ep-wrong", BEST_REGION)["access_token"]
    right_made = start_episode(base_url, "mcp-ep", BEST_REGION)
    right_token = right_made["access_token"]
    async with mcp_client(base_url, wrong_token) as client:
        wrong = content_of(await client.call_tool("submit_answer", {"response": "TX"}))
    async with mcp_client(base_url, right_token) as client:
        right = content_of(await client.call_tool("submit_answer", {"response": "It is CA."}))
        # The first answer is final: the episode's token ended with it.
        again = await client.call_tool("submit_answer", {"response": "TX"})
        after = await client.call_tool("soql_query", {"query": "SELECT Id FROM Case LIMIT 1"})
    # The agent learns its reward and that the episode ended, never the expected answer.
    assert wrong == {
        "episode": "mcp-ep-wrong",
        "reward": 0.0,
        "metric": "exact_match",
        "done": True,
    }
    assert right == {"episode": "mcp-ep", "reward": 1.0, "metric": "exact_match", "done": True}
    assert error_of(again) == "INVALID_SESSION_ID: Session expired or invalid"
    assert error_of(after) == "INVALID_SESSION_ID: Session expired or invalid"
    # No session opens after the answer, not even with the episode's password.
    late = httpx.post(
        f"{base_url}/services/oauth2/token",
        data={
            "grant_type": "password",
            "username": right_made["username"],
            "password": right_made["password"],
        },
    )
    assert (late.status_code, late.json()) == (
        400,
        {"error": "invalid_grant", "error_description": "authentication failure"},
    )
    kept = result_of(base_url, "mcp-ep")
    assert (kept["reward"], kept["answer"], kept["expected"]) == (1.0, "It is CA.", "CA")
    assert kept["channel"] == "mcp"
    assert result_of(base_url, "mcp-ep-wrong")["reward"] == 0.0
    ended = httpx.post(
        f"{base_url}/__localforce/episodes/mcp-ep/answer",
        json={"response": "TX"},
        headers=ADMIN_HEADERS,
    )
    assert ended.status_code == 409
    assert ended.json()[0]["errorCode"] == "EPISODE_ENDED"
    assert result_of(base_url, "mcp-ep")["reward"] == 1.0  # the first answer stands
    async with mcp_client(base_url, sandbox_token(base_url, "mcp-not-an-episode")) as client:
        result = await client.call_tool("submit_answer", {"response": "CA"})
    assert error_of(result) == "NOT_FOUND: No episode has the id mcp-not-an-episode"


def refusal_of(result: Any) -> str:
    """The text of a call an episode's tool set refuses (no SDK prefix: it never ran)."""
    assert result.is_error
    return str(result.content[0].text)


async def test_a_read_tasks_episode_has_no_write_tool(base_url: str) -> None:
    made = start_episode(base_url, "mcp-read-task", BEST_REGION)
    assert [tool["name"] for tool in made["tools"]] == ["soql_query", "sosl_search", "respond"]
    async with mcp_client(base_url, made["access_token"]) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        issue = {"sobject": "Issue__c", "fields": {"Name": "Not in a read task"}}
        created = await client.call_tool("create_record", issue)
        case = content_of(
            await client.call_tool("soql_query", {"query": "SELECT Id FROM Case LIMIT 1"})
        )["records"][0]
        updated = await client.call_tool(
            "update_record",
            {"sobject": "Case", "record_id": case["Id"], "fields": {"Subject": "Mine"}},
        )
        deleted = await client.call_tool(
            "delete_record", {"sobject": "Case", "record_id": case["Id"]}
        )
    assert listed == (TOOLS | CRMARENA_TOOLS) - {
        "create_record", "update_record", "delete_record", *METADATA_WRITES
    }  # fmt: skip
    for tool, refused in (
        ("create_record", created),
        ("update_record", updated),
        ("delete_record", deleted),
    ):
        assert refusal_of(refused) == (
            f"TOOL_NOT_ALLOWED: {tool} is not a tool of this episode's task "
            "(best_region_identification); list_tools names the ones it has"
        )
    diff = httpx.get(
        f"{base_url}/__localforce/sandboxes/mcp-read-task/diff", headers=ADMIN_HEADERS
    ).json()
    assert diff == {"created": [], "updated": [], "deleted": []}


async def test_a_write_tasks_episode_updates_records_and_nothing_more(base_url: str) -> None:
    task = {
        **BEST_REGION,
        "task": "case_routing_write",
        "reward_metric": "diff_match",
        "persona": "Service Manager",
        "answer": [],
        "query": "Change nothing.",
    }
    made = start_episode(base_url, "mcp-write-task", task)
    assert [tool["name"] for tool in made["tools"]] == [
        "soql_query", "sosl_search", "update_record", "respond"
    ]  # fmt: skip
    async with mcp_client(base_url, made["access_token"]) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        created = await client.call_tool(
            "create_record", {"sobject": "Issue__c", "fields": {"Name": "Not mine to make"}}
        )
        query = {"query": "SELECT Id FROM Case ORDER BY Id LIMIT 1"}
        (case,) = content_of(await client.call_tool("soql_query", query))["records"]
        fields = {"sobject": "Case", "record_id": case["Id"], "fields": {"Subject": "Routed"}}
        updated = content_of(await client.call_tool("update_record", fields))
    assert listed == (TOOLS | CRMARENA_TOOLS) - {"create_record", "delete_record", *METADATA_WRITES}
    assert updated == {"id": case["Id"], "success": True}
    diff = httpx.get(
        f"{base_url}/__localforce/sandboxes/mcp-write-task/diff", headers=ADMIN_HEADERS
    ).json()
    assert [change["id"] for change in diff["updated"]] == [case["Id"]]
    assert diff["created"] == diff["deleted"] == []
    assert refusal_of(created).startswith(
        "TOOL_NOT_ALLOWED: create_record is not a tool of this episode's task (case_routing_write)"
    )


CHECKBOX = {
    "fullName": "Case.Warranty_Eligible__c",
    "label": "Warranty Eligible",
    "type": "Checkbox",
    "defaultValue": False,
}
ADMIN_TASK = {
    **BEST_REGION,
    "task": "custom_field_creation",
    "reward_metric": "diff_match",
    "persona": "Salesforce Administrator",
    "answer": [
        {
            "type": "CustomField",
            "id": "Case.Warranty_Eligible__c",
            "fields": {"label": "Warranty Eligible", "type": "Checkbox", "defaultValue": False},
        }
    ],
    "query": 'Create a Checkbox field on Case labelled "Warranty Eligible" (API name '
    "Warranty_Eligible__c), unchecked by default.",
}


async def test_an_admin_tasks_episode_changes_the_schema_and_nothing_more(base_url: str) -> None:
    made = start_episode(base_url, "mcp-admin-task", ADMIN_TASK)
    assert [tool["name"] for tool in made["tools"]] == [
        "soql_query", "sosl_search", "read_metadata", "create_metadata", "update_metadata",
        "respond",
    ]  # fmt: skip
    async with mcp_client(base_url, made["access_token"]) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        updated = await client.call_tool(
            "update_record",
            {"sobject": "Case", "record_id": "500000000000000AAA", "fields": {"Subject": "x"}},
        )
        bad = await client.call_tool(
            "create_metadata",
            {"metadata_type": "CustomField", "components": [{"fullName": "Case.Bad__c"}]},
        )
        bad_name = await client.call_tool(
            "create_metadata",
            {"metadata_type": "CustomField", "components": [{"a><b": "x"}]},
        )
        created = await client.call_tool(
            "create_metadata", {"metadata_type": "CustomField", "components": [CHECKBOX]}
        )
        read = await client.call_tool(
            "read_metadata",
            {"metadata_type": "CustomField", "full_names": [CHECKBOX["fullName"], "Case.No__c"]},
        )
        answered = content_of(await client.call_tool("submit_answer", {"response": "Done."}))
    assert listed == (TOOLS | CRMARENA_TOOLS) - {"create_record", "update_record", "delete_record"}
    assert refusal_of(updated).startswith(
        "TOOL_NOT_ALLOWED: update_record is not a tool of this episode's task "
        "(custom_field_creation)"
    )
    assert content_of(bad) == {
        "results": [
            {
                "errors": {
                    "fields": "type",
                    "message": "Must specify 'type' for a CustomField of type (none)",
                    "statusCode": "FIELD_INTEGRITY_EXCEPTION",
                },
                "fullName": "Case.Bad__c",
                "success": "false",
            }
        ]
    }
    assert error_of(bad_name) == "INVALID_INPUT: 'a><b' is not the name of a metadata element"
    assert content_of(created) == {
        "results": [{"fullName": "Case.Warranty_Eligible__c", "success": "true"}]
    }
    records = content_of(read)["records"]
    assert records[0]["label"] == "Warranty Eligible" and records[0]["defaultValue"] == "false"
    assert records[1] is None
    assert answered["reward"] == 1.0
    diff = httpx.get(
        f"{base_url}/__localforce/sandboxes/mcp-admin-task/diff", headers=ADMIN_HEADERS
    ).json()
    assert diff["schema"]["fields"] == {
        "Case": {
            "Warranty_Eligible__c": {
                "custom": True,
                "default": False,
                "label": "Warranty Eligible",
                "type": "boolean",
            }
        }
    }


async def test_the_schema_of_each_org_is_a_resource(base_url: str) -> None:
    async with mcp_client(base_url, token_of(base_url)) as client:
        listed = await client.list_resources()
        uris = {str(resource.uri) for resource in listed.resources}
        assert uris == {f"localforce://schema/{org}" for org in ("b2b", "b2c", "original")}
        read = await client.read_resource("localforce://schema/original")
    (content,) = read.contents
    assert isinstance(content, TextResourceContents)
    text = content.text
    assert text.startswith("# Salesforce instance description\n\nObjects: ")
    assert "## Case\n" in text and "- OwnerId: Owner ID\n" in text


async def test_64_sessions_at_once_each_see_their_own_sandbox(base_url: str) -> None:
    names = [f"mcp-c{n:02d}" for n in range(64)]
    async with httpx.AsyncClient(base_url=base_url, headers=ADMIN_HEADERS, timeout=120) as control:
        made = await asyncio.gather(
            *(control.post("/__localforce/sandboxes", json={"id": name}) for name in names)
        )
        assert [response.status_code for response in made] == [201] * 64
    passwords = [response.json()["password"] for response in made]
    tokens = [
        token_of(base_url, f"agent@example.com.{name}", password)
        for name, password in zip(names, passwords, strict=True)
    ]

    async def agent(name: str, token: str) -> list[str]:
        async with mcp_client(base_url, token) as client:
            fields = {"sobject": "Issue__c", "fields": {"Name": f"issue of {name}"}}
            content_of(await client.call_tool("create_record", fields))
            query = "SELECT Name FROM Issue__c WHERE Name LIKE 'issue of mcp-c%'"
            found = content_of(await client.call_tool("soql_query", {"query": query}))
        return [record["Name"] for record in found["records"]]

    seen = await asyncio.gather(*(agent(n, t) for n, t in zip(names, tokens, strict=True)))
    assert seen == [[f"issue of {name}"] for name in names]


async def test_a_get_is_refused_rather_than_held_open(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        response = await client.get("/mcp", headers={"Accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.json() == [
        {
            "errorCode": "METHOD_NOT_ALLOWED",
            "message": "HTTP Method 'GET' not allowed. Allowed are POST,DELETE",
        }
    ]


async def test_a_body_that_is_not_json_rpc_is_a_protocol_error(base_url: str) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=base_url, timeout=10) as client:
        response = await client.post("/mcp", content=b"garbage", headers=headers)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700  # JSON-RPC's parse error


async def test_making_the_app_leaves_the_process_logging_as_it_was(tmp_path: Path) -> None:
    # In a fresh interpreter: under pytest the root logger has handlers already, and the SDK's
    # setup (logging.basicConfig) does nothing then.
    script = (
        "import logging, sys\n"
        "from pathlib import Path\n"
        "from app.config import Settings\n"
        "from app.main import create_app\n"
        "create_app(Settings(data_dir=Path(sys.argv[1])))\n"
        "root = logging.getLogger()\n"
        "print(root.handlers, logging.getLevelName(root.level))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "[] WARNING\n"
