"""A new SQL-backed SOQL function through the registry alone: one spec (below) and one corpus
file (fixtures/registry/corpus_name_length.yaml). The app is built with the extended registry;
the same query on the built-in one is an unknown function."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Integer

from app.main import create_app
from app.metadata.model import FieldType
from app.soql.function_registry import FUNCTIONS
from app.soql.function_spec import EVERY_CLAUSE, FunctionKind, FunctionSpec, sql_per_dialect
from tests.conftest import API, login, make_settings
from tests.databases import DatabaseFactory
from tests.soql.test_corpus import (
    FIXTURES,
    Org,
    assert_error,
    assert_records,
    create_fixtures,
    load_corpus,
)

NAME_LENGTH = FunctionSpec(
    name="NAME_LENGTH",
    kind=FunctionKind.ROW,
    clauses=EVERY_CLAUSE,
    argument_types=frozenset({FieldType.STRING, FieldType.TEXTAREA}),
    result_type=FieldType.INT,
    sql=sql_per_dialect({"sqlite": "length({0})", "postgresql": "char_length({0})"}, Integer()),
)
CORPUS = load_corpus(FIXTURES / "registry" / "corpus_name_length.yaml")
RECORD_CASES = [case for case in CORPUS.cases if "errorCode" not in case]
ERROR_CASES = [case for case in CORPUS.cases if "errorCode" in case]


@pytest.fixture(scope="module")
def org(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[Org]:
    url = database_factory.new_url(template=seeded_template)
    settings = make_settings(url, database_factory.workdir)
    app = create_app(settings, functions=FUNCTIONS.with_specs(NAME_LENGTH))
    with TestClient(app, base_url="https://testserver") as client:
        api = TestClient(
            app,
            base_url="https://testserver",
            headers={"Authorization": f"Bearer {login(client)}"},
        )
        yield Org(api, create_fixtures(api, CORPUS))


@pytest.mark.parametrize("case", RECORD_CASES, ids=[case["name"] for case in RECORD_CASES])
def test_the_new_function_answers(org: Org, case: dict[str, Any]) -> None:
    assert_records(org, case)


@pytest.mark.parametrize("case", ERROR_CASES, ids=[case["name"] for case in ERROR_CASES])
def test_the_new_function_refuses(org: Org, case: dict[str, Any]) -> None:
    assert_error(org.client, CORPUS, case)


def test_without_the_spec_it_is_an_unknown_function(api: TestClient) -> None:
    query = RECORD_CASES[0]["q"]
    response = api.get(f"{API}/query", params={"q": query})
    assert response.status_code == 400
    [error] = response.json()
    assert error["errorCode"] == "MALFORMED_QUERY"
    assert error["message"].endswith("Unknown function: NAME_LENGTH")


def test_a_spec_cannot_replace_a_built_in_function() -> None:
    with pytest.raises(ValueError, match="calendar_year is a SOQL function already"):
        FUNCTIONS.with_specs(FunctionSpec("calendar_year", FunctionKind.ROW, EVERY_CLAUSE))
