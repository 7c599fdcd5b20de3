"""Table-driven SOSL cases (fixtures/search_cases.txt) through GET /search, on every backend."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API

FIXTURES = Path(__file__).parent / "fixtures"
_ERROR_RE = re.compile(r"^([A-Z_]+): (.*?)(?: @ (\d+):(\d+))?$", re.DOTALL)


@dataclass(frozen=True)
class Case:
    statement: str
    expectations: tuple[tuple[str, str], ...]
    line: int

    @property
    def id(self) -> str:
        return f"L{self.line}"


def load_cases(name: str) -> list[Case]:
    cases = []
    lines = (FIXTURES / name).read_text(encoding="utf-8").split("\n")
    block: list[tuple[int, str]] = []
    for number, line in enumerate([*lines, ""], start=1):
        if line.strip():
            if not line.startswith("#"):
                block.append((number, line))
            continue
        if not block:
            continue
        statement = [text for _, text in block if not text.startswith("=>")]
        expectations = []
        for _, text in block:
            if text.startswith("=>"):
                key, _, value = text[2:].strip().partition(": ")
                expectations.append((key, value))
        assert statement and expectations, f"incomplete case at line {block[0][0]}"
        cases.append(Case("\n".join(statement), tuple(expectations), block[0][0]))
        block = []
    return cases


CASES = load_cases("search_cases.txt")


def label(record: dict[str, Any]) -> str:
    for key in ("Name", "Title", "Subject"):
        if key in record:
            return str(record[key])
    return str(record["Id"])


def record_id(record: dict[str, Any]) -> str:
    return str(record["attributes"]["url"].rsplit("/", 1)[-1])


def search(api: TestClient, statement: str) -> list[dict[str, Any]]:
    response = api.get(f"{API}/search", params={"q": statement})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json;charset=UTF-8"
    records: list[dict[str, Any]] = response.json()["searchRecords"]
    return records


def soql_ids(api: TestClient, soql: str) -> set[str]:
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["done"] is True
    return {record["Id"] for record in body["records"]}


def check_error(api: TestClient, case: Case, code: str, expected: str) -> None:
    response = api.get(f"{API}/search", params={"q": case.statement})
    assert response.status_code == 400
    body = response.json()
    assert len(body) == 1 and body[0]["errorCode"] == code, body
    match = _ERROR_RE.match(f"{code}: {expected}")
    assert match is not None
    reason, row, column = match.group(2), match.group(3), match.group(4)
    message = body[0]["message"]
    if row is None:
        assert message.rstrip() == reason.rstrip()  # an empty term is echoed as ""

    else:
        assert message.endswith(f"\nERROR at Row:{row}:Column:{column}\n{reason}"), message
        echo = message.split("\n")[1]
        assert echo in case.statement.split("\n")[int(row) - 1]


def check_records(api: TestClient, case: Case, key: str, value: str) -> None:
    records = search(api, case.statement)
    labels = [label(record) for record in records]
    if key == "count":
        assert len(records) == int(value), labels
    elif key == "first":
        assert labels and labels[0] == value, labels
    elif key == "includes":
        for wanted in value.split(" | "):
            assert wanted in labels, (wanted, labels)
    elif key == "excludes":
        for unwanted in value.split(" | "):
            assert unwanted not in labels, (unwanted, labels)
    elif key == "types":
        types = list(dict.fromkeys(record["attributes"]["type"] for record in records))
        assert types == value.split(", ")
    elif key == "keys":
        assert records
        for record in records:
            assert list(record) == value.split(", "), record
    elif key == "same as":
        expected = soql_ids(api, value)
        assert expected, "the oracle query must find something"
        assert {record_id(record) for record in records} == expected, labels
    elif key == "same as search":
        other = search(api, value)
        assert other, "the other search must find something"
        assert {record_id(r) for r in records} == {record_id(r) for r in other}, labels
    else:
        raise AssertionError(f"unknown expectation {key!r}")


def test_the_table_has_at_least_a_hundred_cases() -> None:
    assert len(CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_search_case(api: TestClient, case: Case) -> None:
    for key, value in case.expectations:
        if re.fullmatch(r"[A-Z_]+", key):
            check_error(api, case, key, value)
        else:
            check_records(api, case, key, value)
