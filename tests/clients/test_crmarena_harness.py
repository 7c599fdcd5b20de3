"""CRMArena's connector, reproduced, against a running localforce (crmarena.md sections 6 and 8).

The harness builds `Salesforce(username, password, security_token)` itself: a SOAP login at
https://login.salesforce.com, then REST on the instance. `localforce.routing.install()` (one call)
routes both to localforce. The connector runs `FIND ...` through `sf.search` and everything else
through `sf.query_all`, strips `attributes` at the top level only, drops columns null in every
row, and turns errors into `"<errorCode>: <message>"` by parsing what follows
"Response content:" in the exception text.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

import pytest
from localforce import routing
from simple_salesforce.api import Salesforce

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import build_rows
from tests.conftest import TEST_SEED
from tests.crmarena import tool_queries
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
KNOWLEDGE_TOOL = (
    "FIND {{{term}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
    "WHERE PublishStatus='Online' AND Language='en_US')"
)
PRODUCT_TOOL = "FIND {{{term}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"


class SalesforceConnector:
    """CRMArena's connector, as its source behaves (crmarena.md 6.1)."""

    def __init__(self, username: str, password: str, security_token: str) -> None:
        self.sf: Any = Salesforce(
            username=username, password=password, security_token=security_token
        )

    def run_query(self, query: str) -> tuple[Any, int]:
        try:
            if query.startswith("FIND"):
                result = self.sf.search(query)["searchRecords"]
            else:
                query = query.replace("```sql", "").replace("```", "")
                result = self.sf.query_all(query)["records"]
            for record in result:
                record.pop("attributes", None)
            if result:
                empty = [key for key in result[0] if all(r.get(key) is None for r in result)]
                for record in result:
                    for key in empty:
                        record.pop(key, None)
            return result, 1
        except Exception as error:
            parsed = ast.literal_eval(str(error).split("Response content:")[1])[0]
            return f"{parsed['errorCode']}: {parsed['message']}", 0


@pytest.fixture(scope="module")
def connector(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[Any]:
    with serve_in_thread(private_org_app(database_factory, seeded_template)) as port:
        routing.install(f"http://127.0.0.1:{port}")
        try:
            yield SalesforceConnector("agent@example.com", "password", "TOKEN123")
        finally:
            routing.uninstall()


@pytest.fixture(scope="module")
def queries() -> dict[str, str]:
    return tool_queries(build_rows(REGISTRY, "original", TEST_SEED))


def test_login_went_through_soap_to_localforce(connector: Any) -> None:
    assert connector.sf.session_id
    assert connector.sf.sf_instance.startswith("127.0.0.1:")


def test_every_tool_query_answers(connector: Any, queries: dict[str, str]) -> None:
    answers = {}
    for name, query in queries.items():
        result, ok = connector.run_query(query)
        assert ok == 1, (name, result)
        assert isinstance(result, list)
        assert all("attributes" not in record for record in result), name
        answers[name] = result
    assert len(answers["get_issues"]) == 10
    assert set(answers["get_issues"][0]) == {"Id", "Name"}
    assert answers["get_agent_handled_cases_by_period"]
    assert answers["get_order_item_ids_by_product"]
    assert len(answers["get_account_id_by_contact_id"]) == 1
    counts = answers["get_issue_counts"]
    assert counts and set(counts[0]) == {"IssueId__c", "IssueCount"}
    assert [c["IssueCount"] for c in counts] == sorted(
        (c["IssueCount"] for c in counts), reverse=True
    )
    assert answers["get_purchase_history"]


def test_search_tools(connector: Any) -> None:
    products, ok = connector.run_query(PRODUCT_TOOL.format(term="football cleats"))
    assert ok == 1 and products
    assert set(products[0]) <= {"Id", "Name", "Description"}
    articles, ok = connector.run_query(KNOWLEDGE_TOOL.format(term="return policy"))
    assert ok == 1
    assert all(set(article) <= {"Id", "Title", "FAQ_Answer__c"} for article in articles)


def test_top_level_attributes_only_and_count(connector: Any) -> None:
    result, ok = connector.run_query("```sql\nSELECT Id, Account.Name FROM Contact LIMIT 2```")
    assert ok == 1 and len(result) == 2
    assert "attributes" not in result[0]
    assert result[0]["Account"]["attributes"]["type"] == "Account"
    assert connector.run_query("SELECT COUNT() FROM Case") == ([], 1)


def test_errors_parse_as_the_harness_parses_them(connector: Any) -> None:
    message, ok = connector.run_query("SELECT Id FROM Nope__c")
    assert ok == 0
    assert message.startswith("INVALID_TYPE: \nSELECT Id FROM Nope__c\n")
    assert "sObject type 'Nope__c' is not supported." in message
    message, ok = connector.run_query("SELECT Id FROM Case WHERE")
    assert ok == 0
    assert message.startswith("MALFORMED_QUERY: ")
    message, ok = connector.run_query("FIND {x")
    assert ok == 0
    assert message.split(":")[0] in {"MALFORMED_SEARCH", "INVALID_SEARCH"}
