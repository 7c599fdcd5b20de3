"""Semi-joins and anti-joins: `Id [NOT] IN (SELECT AccountId FROM Contact WHERE ...)`, on Id and
reference fields, with Salesforce's restrictions, on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API, login, open_client
from tests.databases import DatabaseFactory

Org = tuple[TestClient, dict[str, str]]


def _create(api: TestClient, sobject: str, body: dict[str, Any]) -> str:
    response = api.post(f"{API}/sobjects/{sobject}", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.fixture(scope="module")
def org(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[Org]:
    """Accounts SJ-A1 (contacts "match" and "other", an order), SJ-A2 (contact "other"),
    SJ-A3 (nothing); a contact "orphan" with no account; one deleted contact "match" on SJ-A2."""
    for client in open_client(database_factory, seeded_template):
        api = TestClient(
            client.app,
            base_url=str(client.base_url),
            headers={"Authorization": f"Bearer {login(client)}"},
        )
        ids = {name: _create(api, "Account", {"Name": f"SJ-{name}"}) for name in ("A1", "A2", "A3")}
        contacts = {
            "c1": ("A1", "SJ-match"),
            "c2": ("A1", "SJ-other"),
            "c3": ("A2", "SJ-other"),
            "orphan": (None, "SJ-match"),
            "gone": ("A2", "SJ-match"),
        }
        for ref, (account, last_name) in contacts.items():
            body: dict[str, Any] = {"LastName": last_name}
            if account is not None:
                body["AccountId"] = ids[account]
            ids[ref] = _create(api, "Contact", body)
        response = api.delete(f"{API}/sobjects/Contact/{ids['gone']}")
        assert response.status_code == 204, response.text
        ids["o1"] = _create(
            api, "Order", {"AccountId": ids["A1"], "EffectiveDate": "2024-01-01", "Status": "Draft"}
        )
        yield api, ids


def _query(org: Org, soql: str) -> Any:
    api, ids = org
    for ref, record_id in ids.items():
        soql = soql.replace(f"${ref}", record_id)
    return api.get(f"{API}/query", params={"q": soql})


def _refs(org: Org, soql: str) -> set[str]:
    response = _query(org, soql)
    assert response.status_code == 200, response.text
    by_id = {record_id: ref for ref, record_id in org[1].items()}
    return {by_id[record["Id"]] for record in response.json()["records"]}


ACCOUNTS = "SELECT Id FROM Account WHERE Name LIKE 'SJ-%' AND "
CONTACTS = "SELECT Id FROM Contact WHERE LastName LIKE 'SJ-%' AND "
CASES = [
    (ACCOUNTS + "Id IN (SELECT AccountId FROM Contact WHERE LastName = 'SJ-match')", {"A1"}),
    (ACCOUNTS + "Id IN (SELECT AccountId FROM Contact WHERE LastName LIKE 'SJ-%')", {"A1", "A2"}),
    (
        ACCOUNTS + "Id NOT IN (SELECT AccountId FROM Contact WHERE LastName = 'SJ-match')",
        {"A2", "A3"},
    ),
    # The orphan contact's null AccountId excludes nothing.
    (ACCOUNTS + "Id NOT IN (SELECT AccountId FROM Contact WHERE LastName LIKE 'SJ-%')", {"A3"}),
    (ACCOUNTS + "Id IN (SELECT AccountId FROM Contact WHERE Account.Name = 'SJ-A2')", {"A2"}),
    (
        ACCOUNTS + "Id IN (SELECT AccountId FROM Contact WHERE LastName LIKE 'SJ-%') "
        "AND Id IN (SELECT AccountId FROM Order)",
        {"A1"},
    ),
    (
        ACCOUNTS + "Id IN (SELECT AccountId FROM Contact WHERE LastName LIKE 'SJ-%') "
        "AND Id NOT IN (SELECT AccountId FROM Order)",
        {"A2"},
    ),
    (CONTACTS + "AccountId IN (SELECT Id FROM Account WHERE Name = 'SJ-A1')", {"c1", "c2"}),
    # NOT IN matches a null reference, as NOT IN with a list of values does.
    (
        CONTACTS + "AccountId NOT IN (SELECT Id FROM Account WHERE Name = 'SJ-A1')",
        {"c3", "orphan"},
    ),
    (CONTACTS + "AccountId IN (SELECT AccountId FROM Order WHERE Status = 'Draft')", {"c1", "c2"}),
    (
        "SELECT Id FROM Contact WHERE AccountId IN (SELECT Id FROM Account WHERE Name = 'SJ-A2') "
        "AND (LastName = 'SJ-other' OR LastName = 'SJ-match')",
        {"c3"},
    ),
]


@pytest.mark.parametrize(("soql", "expected"), CASES)
def test_semi_join(org: Org, soql: str, expected: set[str]) -> None:
    assert _refs(org, soql) == expected


def test_semi_join_in_an_aggregate_query(org: Org) -> None:
    response = _query(
        org,
        "SELECT COUNT(Id) n FROM Contact WHERE AccountId IN "
        "(SELECT Id FROM Account WHERE Name LIKE 'SJ-%')",
    )
    assert response.status_code == 200, response.text
    assert response.json()["records"][0]["n"] == 3


SUB = "(SELECT AccountId FROM Contact)"
ERRORS = [
    (
        f"SELECT Id FROM Account WHERE Name = 'x' OR Id IN {SUB}",
        "MALFORMED_QUERY",
        "Semi join sub-selects are not allowed with the 'OR' operator",
    ),
    (
        f"SELECT Id FROM Account WHERE Name = 'x' AND (Name = 'y' OR Id NOT IN {SUB})",
        "MALFORMED_QUERY",
        "Semi join sub-selects are not allowed with the 'OR' operator",
    ),
    (
        f"SELECT Id FROM Account WHERE NOT Id IN {SUB}",
        "MALFORMED_QUERY",
        "Semi join sub-selects are only allowed at the top level WHERE expressions",
    ),
    (
        f"SELECT Id FROM Account WHERE Id IN {SUB} AND Id IN {SUB} AND Id IN {SUB}",
        "MALFORMED_QUERY",
        "Maximum 2 semi join sub-selects are allowed",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact WHERE "
        "Id IN (SELECT ContactId FROM Case))",
        "MALFORMED_QUERY",
        "Nesting of semi join sub-selects is not supported",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT Id FROM Account)",
        "INVALID_TYPE",
        "The inner and outer selects should not be on the same object type",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId, Id FROM Contact)",
        "MALFORMED_QUERY",
        "can only select one Id or reference field",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT LastName FROM Contact)",
        "INVALID_FIELD",
        "can only select an Id or reference field",
    ),
    (
        f"SELECT Id FROM Account WHERE Name IN {SUB}",
        "INVALID_FIELD",
        "Id or reference field on the left",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact LIMIT 5)",
        "MALFORMED_QUERY",
        "LIMIT",
    ),
    (
        "SELECT Id FROM Account WHERE Id IN (SELECT AccountId FROM Contact ORDER BY LastName)",
        "MALFORMED_QUERY",
        "ORDER BY",
    ),
]


@pytest.mark.parametrize(("soql", "code", "message"), ERRORS)
def test_semi_join_errors(org: Org, soql: str, code: str, message: str) -> None:
    response = _query(org, soql)
    assert response.status_code == 400, response.text
    error = response.json()[0]
    assert error["errorCode"] == code
    assert message in error["message"]
