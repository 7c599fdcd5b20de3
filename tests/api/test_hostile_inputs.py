"""Hostile input, table-driven (fixtures/hostile_inputs.yaml): each case answers exactly the
Salesforce error it lists, and the org is unchanged afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.api.state import AppState
from app.seeding.pipeline import stored_content_hash
from tests.conftest import API

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "fixtures" / "hostile_inputs.yaml").read_text()
)
PLACEHOLDERS = {"<5000 nines>": "9" * 5000, "<1000 deep>": "[" * 1000 + "]" * 1000}


def expand(text: str) -> str:
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    return text


def url(case: dict[str, Any]) -> str:
    path: str = case["path"]
    return path if path.startswith(("/services/", "/__localforce/")) else API + path


def org_fingerprint(api: TestClient) -> str:
    state: AppState = api.app.state.localforce  # type: ignore[attr-defined]
    with state.engine.connect() as conn:
        return stored_content_hash(conn, state.registry, state.tables)


@pytest.fixture(scope="module")
def fingerprint_before(api: TestClient) -> str:
    return org_fingerprint(api)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_hostile_input_answers_the_listed_error(
    api: TestClient, fingerprint_before: str, case: dict[str, Any]
) -> None:
    headers = {"Content-Type": "application/json"} if "body" in case else {}
    body = expand(case["body"]).encode() if "body" in case else None
    response = api.request(
        case["method"],
        url(case),
        params=case.get("params"),
        content=body,
        headers=headers,
    )
    assert response.status_code == case["status"], response.text
    assert response.headers["content-type"] == "application/json;charset=UTF-8"
    [error] = response.json()
    assert error["errorCode"] == case["errorCode"]
    expected: str = case["message"]
    if expected.endswith("..."):
        assert error["message"].startswith(expected.removesuffix("...")), error["message"]
    else:
        assert error["message"] == expected


def test_the_org_is_unchanged_after_every_case(api: TestClient, fingerprint_before: str) -> None:
    for case in CASES:
        body = expand(case["body"]).encode() if "body" in case else None
        api.request(case["method"], url(case), params=case.get("params"), content=body)
    assert org_fingerprint(api) == fingerprint_before
