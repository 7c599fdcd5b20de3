"""The standard fields' describe properties against real orgs' recorded describes, one row a
field (fixtures/recorded_field_properties.yaml, with each row's source), on both back ends; and
the property tables the server reads them from (app/metadata/field_properties/). What queries
do with them is in the SOQL corpus (tests/soql/fixtures/corpus_field_use.yaml)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.config import REPO_ROOT
from app.metadata.loader import (
    FIELD_PROPERTIES_DIR,
    STANDARD_OBJECTS_DIR,
    read_field_properties,
    with_address_parts,
)
from tests.conftest import API

FIXTURE = yaml.safe_load(
    (Path(__file__).parent / "fixtures" / "recorded_field_properties.yaml").read_text()
)
ROWS = FIXTURE["rows"]


@pytest.fixture(scope="module")
def described(api: TestClient) -> dict[str, dict[str, dict[str, Any]]]:
    """Each recorded object's fields as the server describes them, by name."""

    @cache
    def fields(sobject: str) -> dict[str, dict[str, Any]]:
        response = api.get(f"{API}/sobjects/{sobject}/describe")
        assert response.status_code == 200, response.text
        return {field["name"]: field for field in response.json()["fields"]}

    return {sobject: fields(sobject) for sobject in sorted({row["object"] for row in ROWS})}


@pytest.mark.parametrize("row", ROWS, ids=[f"{row['object']}.{row['field']}" for row in ROWS])
def test_a_standard_field_is_described_as_a_real_org_describes_it(
    described: dict[str, dict[str, dict[str, Any]]], row: dict[str, Any]
) -> None:
    assert row["source"] in FIXTURE["sources"]
    field = described[row["object"]][row["field"]]
    shown = {key: field[key] for key in row["expect"]}
    if "picklistValues" in shown:  # a row names the values, in order
        shown["picklistValues"] = [entry["value"] for entry in field["picklistValues"]]
    assert shown == row["expect"], FIXTURE["sources"][row["source"]]


def test_every_property_row_names_its_source_and_a_field_some_org_defines() -> None:
    definitions = [STANDARD_OBJECTS_DIR, *sorted((REPO_ROOT / "seed" / "orgs").glob("*/objects"))]
    defined: dict[str, set[str]] = {}
    for directory in definitions:
        for path in directory.glob("*.yaml"):
            raw = yaml.safe_load(path.read_text())
            defined.setdefault(raw["name"], set()).update(with_address_parts(raw["fields"]))
    tables = read_field_properties()
    assert sorted(tables) == sorted(path.stem for path in FIELD_PROPERTIES_DIR.glob("*.yaml"))
    for sobject, table in tables.items():
        for name, row in table["fields"].items():
            assert row["source"] in table["sources"], (sobject, name)
            assert name in defined[sobject], (sobject, name)
