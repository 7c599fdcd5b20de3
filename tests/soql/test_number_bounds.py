"""Numbers past what a column holds, and nesting past what the parsers take, in SOQL and SOSL.

A number literal compares by value: one no column can hold matches what the same query without
it matches (never a driver's overflow, a 500). Each case pairs a hostile query with a plain one
that must answer the same records, on both back ends. Numbers the API bounds (OFFSET) and
nesting past the parsers' depth answer their exact errors, and the server answers afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API

PAST_64_BITS = "9" * 300
PAST_FLOAT = "9" * 5000  # past 4,300 digits too: Python's int refuses to read it
HAVING_COUNT = "SELECT CaseId__c, COUNT(Id) FROM CaseHistory__c GROUP BY CaseId__c"
# The seeded org's int fields are empty: the module writes a few accounts to compare with.
MARK = "Numberbounds"
EMPLOYEES = [1, 7, 99999999]  # 8 digits: the field's most
OWN = f"SELECT Id FROM Account WHERE Name LIKE '{MARK}%' AND"

# (hostile query, a plain query that answers the same records)
SAME_AS: list[tuple[str, str]] = [
    (f"{HAVING_COUNT} HAVING COUNT(Id) = {PAST_64_BITS}", f"{HAVING_COUNT} HAVING COUNT(Id) = -1"),
    (f"{HAVING_COUNT} HAVING COUNT(Id) < {PAST_64_BITS}", HAVING_COUNT),
    (f"{HAVING_COUNT} HAVING COUNT(Id) > -{PAST_64_BITS}", HAVING_COUNT),
    (f"{HAVING_COUNT} HAVING COUNT(Id) < 9223372036854775808", HAVING_COUNT),
    (
        f"{HAVING_COUNT} HAVING COUNT(Id) IN (2, {PAST_64_BITS})",
        f"{HAVING_COUNT} HAVING COUNT(Id) IN (2)",
    ),
    (f"{HAVING_COUNT} HAVING COUNT(Id) IN (3000000000)", f"{HAVING_COUNT} HAVING COUNT(Id) = -1"),
    (
        f"SELECT COUNT_DISTINCT(Name) FROM Account HAVING COUNT_DISTINCT(Name) < {PAST_64_BITS}",
        "SELECT COUNT_DISTINCT(Name) FROM Account",
    ),
    (f"{OWN} NumberOfEmployees IN (1, {PAST_64_BITS})", f"{OWN} NumberOfEmployees IN (1)"),
    (f"{OWN} NumberOfEmployees IN (7, -{PAST_FLOAT})", f"{OWN} NumberOfEmployees = 7"),
    (
        f"{OWN} NumberOfEmployees IN (2147483648, -2147483649, 1.5, 7.0000000001)",
        f"{OWN} NumberOfEmployees = -1",
    ),
    (f"{OWN} NumberOfEmployees NOT IN ({PAST_64_BITS}, 1.5)", f"{OWN} NumberOfEmployees != null"),
    (f"{OWN} NumberOfEmployees < {PAST_64_BITS}", f"{OWN} NumberOfEmployees != null"),
    (f"{OWN} NumberOfEmployees > -{PAST_FLOAT}", f"{OWN} NumberOfEmployees != null"),
    (f"{OWN} NumberOfEmployees = 2147483648", f"{OWN} NumberOfEmployees = -1"),
    (
        f"SELECT COUNT() FROM OrderItem WHERE Quantity IN (1, {PAST_64_BITS}.5)",
        "SELECT COUNT() FROM OrderItem WHERE Quantity IN (1)",
    ),
    (
        f"SELECT COUNT() FROM OrderItem WHERE UnitPrice < {PAST_FLOAT}",
        "SELECT COUNT() FROM OrderItem WHERE UnitPrice != null",
    ),
    (f"{OWN} CALENDAR_YEAR(CreatedDate) IN ({PAST_64_BITS})", f"{OWN} NumberOfEmployees = -1"),
    (f"{OWN} NumberOfEmployees != null LIMIT {PAST_FLOAT}", f"{OWN} NumberOfEmployees != null"),
    (f"{OWN} NumberOfEmployees != null LIMIT {PAST_64_BITS}", f"{OWN} NumberOfEmployees != null"),
]


@pytest.fixture(scope="module", autouse=True)
def own_accounts(api: TestClient) -> None:
    for employees in EMPLOYEES:
        body = {"Name": f"{MARK} West {employees}", "NumberOfEmployees": employees}
        assert api.post(f"{API}/sobjects/Account", json=body).status_code == 201


def answer(api: TestClient, text: str) -> tuple[int, list[dict[str, Any]]]:
    response = api.get(f"{API}/query", params={"q": text})
    assert response.status_code == 200, response.text[:500]
    body = response.json()
    return body["totalSize"], sorted(body["records"], key=str)


@pytest.mark.parametrize(("hostile", "plain"), SAME_AS, ids=[h[:70] for h, _ in SAME_AS])
def test_a_number_no_column_holds_compares_by_value(
    api: TestClient, hostile: str, plain: str
) -> None:
    assert answer(api, hostile) == answer(api, plain)


def test_the_plain_queries_answer_records(api: TestClient) -> None:
    """The cases above compare answers with records in them, not two empty ones."""
    assert answer(api, f"{HAVING_COUNT} HAVING COUNT(Id) IN (2)")[0] > 0
    assert answer(api, f"{OWN} NumberOfEmployees IN (1)")[0] == 1
    assert answer(api, f"{OWN} NumberOfEmployees != null")[0] == len(EMPLOYEES)


def search_records(api: TestClient, path: str, params: dict[str, str]) -> list[Any]:
    response = api.get(f"{API}/{path}", params=params)
    assert response.status_code == 200, response.text[:500]
    return sorted(response.json()["searchRecords"], key=str)


@pytest.mark.parametrize(
    ("hostile", "plain", "found"),
    [
        (f"NumberOfEmployees IN (1, {PAST_64_BITS})", "NumberOfEmployees IN (1)", 1),
        (f"NumberOfEmployees NOT IN ({PAST_64_BITS})", "NumberOfEmployees != null", 3),
        (f"NumberOfEmployees < {PAST_FLOAT}", "NumberOfEmployees != null", 3),
    ],
)
def test_search_filters_compare_huge_numbers_by_value(
    api: TestClient, hostile: str, plain: str, found: int
) -> None:
    def sosl(where: str) -> dict[str, str]:
        return {"q": f"FIND {{{MARK}}} RETURNING Account(Id WHERE {where})"}

    def parameterized(where: str) -> dict[str, str]:
        return {"q": MARK, "sobject": "Account", "Account.where": where}

    plain_found = search_records(api, "search", sosl(plain))
    assert len(plain_found) == found
    assert search_records(api, "search", sosl(hostile)) == plain_found
    hostile_found = search_records(api, "parameterizedSearch", parameterized(hostile))
    assert hostile_found == search_records(api, "parameterizedSearch", parameterized(plain))


def error_of(response: Any) -> tuple[int, str, str]:
    [error] = response.json()
    return response.status_code, error["errorCode"], error["message"]


@pytest.mark.parametrize(
    "text",
    [
        f"SELECT Id FROM Account OFFSET {PAST_64_BITS}",
        f"SELECT Id FROM Account OFFSET {PAST_FLOAT}",
        "SELECT Id FROM Account OFFSET 9223372036854775808",
    ],
)
def test_an_offset_past_the_maximum_is_out_of_range(api: TestClient, text: str) -> None:
    response = api.get(f"{API}/query", params={"q": text})
    assert error_of(response) == (
        400,
        "NUMBER_OUTSIDE_VALID_RANGE",
        "Maximum SOQL offset allowed is 2000",
    )


# Depths that used to reach Python's recursion limit, or would without the parsers' bound.
@pytest.mark.parametrize("depth", [150, 600, 3000])
@pytest.mark.parametrize(
    ("shape", "column"),
    [
        (lambda n: "(" * n + "Name = 'x'" + ")" * n, 131),
        (lambda n: "(NOT " * n + "Name = 'x'" + ")" * n, 281),
    ],
    ids=["parentheses", "not"],
)
def test_a_query_nested_too_deeply_is_malformed(
    api: TestClient, depth: int, shape: Any, column: int
) -> None:
    response = api.get(f"{API}/query", params={"q": "SELECT Id FROM Account WHERE " + shape(depth)})
    status, code, message = error_of(response)
    assert (status, code) == (400, "MALFORMED_QUERY")
    assert message.endswith(f"ERROR at Row:1:Column:{column}\nquery is nested too deeply")
    assert (
        api.get(f"{API}/query", params={"q": "SELECT Id FROM Account LIMIT 1"}).status_code == 200
    )


@pytest.mark.parametrize("depth", [600, 3000])
def test_a_search_where_nested_too_deeply_is_refused(api: TestClient, depth: int) -> None:
    where = "(" * depth + "Name = 'x'" + ")" * depth
    response = api.get(
        f"{API}/search", params={"q": f"FIND {{acme}} RETURNING Account(Id WHERE {where})"}
    )
    status, code, message = error_of(response)
    assert (status, code) == (400, "MALFORMED_SEARCH")
    assert message.endswith("ERROR at Row:1:Column:141\nquery is nested too deeply")
    assert api.get(f"{API}/search", params={"q": f"FIND {{{MARK}}}"}).status_code == 200
