"""`columns=true`: the table of tests/soql/fixtures/columns.yaml against the bound queries, then
the whole answer's shape through the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.soql.bind_context import LIMITS
from app.soql.binder import bind
from app.soql.columns import column_metadata
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.function_registry import FUNCTIONS
from app.soql.parser import parse
from tests.conftest import API, login

REGISTRY = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "original" / "objects")
CASES = yaml.safe_load((Path(__file__).parent / "fixtures" / "columns.yaml").read_text())["cases"]


def short(column: dict[str, Any]) -> dict[str, Any]:
    """A column in the fixture file's short form."""
    brief: dict[str, Any] = {"name": column["columnName"], "type": column["apexType"]}
    if column["displayName"] != column["columnName"]:
        brief["display"] = column["displayName"]
    if column["aggregate"]:
        brief["aggregate"] = True
    if column["joinColumns"]:
        brief["joins"] = [short(join) for join in column["joinColumns"]]
    return brief


def expected(column: dict[str, Any]) -> dict[str, Any]:
    brief = dict(column)
    if "joins" in brief:
        brief["joins"] = [expected(join) for join in brief["joins"]]
    return brief


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_columns_table(case: dict[str, Any]) -> None:
    answer = column_metadata(
        bind(
            REGISTRY,
            case["q"],
            parse(case["q"]),
            calendar=UTC_EPOCH_CALENDAR,
            functions=FUNCTIONS,
            limits=LIMITS,
        )
    )
    assert [short(column) for column in answer["columnMetadata"]] == [
        expected(column) for column in case["columns"]
    ]
    for key, answer_key in (("entity", "entityName"), ("groupBy", "groupBy")):
        if key in case:
            assert answer[answer_key] == case[key]
    if "idSelected" in case:
        assert answer["idSelected"] is case["idSelected"]


def test_columns_through_the_api(client: TestClient) -> None:
    headers = {"Authorization": f"Bearer {login(client)}"}
    response = client.get(
        f"{API}/query",
        params={"q": "SELECT Id, Account.Name FROM Case LIMIT 1", "columns": "true"},
        headers=headers,
    )
    assert response.status_code == 200
    leaf = {
        "aggregate": False,
        "apexType": "String",
        "booleanType": False,
        "columnName": "Name",
        "custom": False,
        "displayName": "Account.Name",
        "foreignKeyName": None,
        "insertable": True,
        "joinColumns": [],
        "numberType": False,
        "textType": True,
        "updatable": True,
    }
    assert response.json() == {
        "columnMetadata": [
            {
                "aggregate": False,
                "apexType": "Id",
                "booleanType": False,
                "columnName": "Id",
                "custom": False,
                "displayName": "Id",
                "foreignKeyName": None,
                "insertable": False,
                "joinColumns": [],
                "numberType": False,
                "textType": False,
                "updatable": False,
            },
            {
                **leaf,
                "apexType": "Account",
                "columnName": "Account",
                "displayName": "Account",
                "insertable": False,
                "joinColumns": [leaf],
                "textType": False,
                "updatable": False,
            },
        ],
        "entityName": "Case",
        "groupBy": False,
        "idSelected": True,
        "keyPrefix": "500",
    }
    # A query that would fail fails the same way when only its columns are asked for.
    for all_rows in ("query", "queryAll"):
        bad = client.get(
            f"{API}/{all_rows}",
            params={"q": "SELECT Nope FROM Case", "columns": "true"},
            headers=headers,
        )
        assert bad.status_code == 400
        assert bad.json()[0]["errorCode"] == "INVALID_FIELD"
