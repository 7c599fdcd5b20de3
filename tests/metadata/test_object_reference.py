"""The standard fields of the objects no recorded describe covers, against Salesforce's Object
Reference: one fixture per object (fixtures/object_reference/<Object>.yaml), each row a field's
Type and Properties line as the page gives them, and the page it was read from. Every org that
defines the field must describe it so; the default org's describe over REST, on both back ends,
is the one checked here without a server. A row's `left_out` names a property not compared, and
why."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.config import REPO_ROOT
from app.metadata.describe import describe_sobject
from app.metadata.registry import SchemaRegistry
from tests.conftest import API

FIXTURES = Path(__file__).parent / "fixtures" / "object_reference"
TABLES = {
    path.stem: yaml.safe_load(path.read_text(encoding="utf-8"))
    for path in sorted(FIXTURES.glob("*.yaml"))
}
ORGS = ("original", "b2b", "b2c")
DEFAULT_ORG = "original"

# A Properties word of the Object Reference: the describe key it sets. A word a field's line
# lacks is false in its describe.
PROPERTIES = {
    "Create": "createable",
    "Filter": "filterable",
    "Group": "groupable",
    "Nillable": "nillable",
    "Sort": "sortable",
    "Update": "updateable",
    "Defaulted on create": "defaultedOnCreate",
    "idLookup": "idLookup",
    "Autonumber": "autoNumber",
}
RESTRICTED = "Restricted picklist"  # said only of picklists


@cache
def registry(org: str) -> SchemaRegistry:
    return SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / org / "objects")


@cache
def described(org: str, sobject: str) -> dict[str, dict[str, Any]] | None:
    """`sobject`'s fields as `org` describes them, by name (None where the org lacks it)."""
    definition = registry(org).get(sobject)
    if definition is None:
        return None
    result = describe_sobject(definition, API, "https://example.test")
    return {field["name"]: field for field in result["fields"]}


def expected(row: dict[str, Any]) -> dict[str, Any]:
    """The describe keys a row's Type and Properties fix."""
    words = set(row["properties"])
    expect: dict[str, Any] = {"type": row["type"]}
    expect.update({key: word in words for word, key in PROPERTIES.items()})
    if row["type"] == "picklist":
        expect["restrictedPicklist"] = RESTRICTED in words
    if "relationshipName" in row:
        expect["relationshipName"] = row["relationshipName"]
    for key in row.get("left_out", {}):
        expect.pop(key)
    return expect


CASES = [
    (org, sobject, name)
    for sobject, table in TABLES.items()
    for name in table["fields"]
    for org in ORGS
    if (described(org, sobject) or {}).get(name) is not None
]


@pytest.mark.parametrize(("org", "sobject", "name"), CASES, ids=[".".join(c) for c in CASES])
def test_a_standard_field_is_described_as_the_object_reference_gives_it(
    org: str, sobject: str, name: str
) -> None:
    table = TABLES[sobject]
    row = table["fields"][name]
    field = described(org, sobject)[name]  # type: ignore[index]
    expect = expected(row)
    assert {key: field[key] for key in expect} == expect, table["sources"][row["source"]]


def test_every_row_names_its_source_words_the_table_knows_and_a_field_some_org_defines() -> None:
    known = {*PROPERTIES, RESTRICTED, "External ID", "Unique"}
    for sobject, table in TABLES.items():
        assert table["object"] == sobject
        for name, row in table["fields"].items():
            assert row["source"] in table["sources"], (sobject, name)
            assert set(row["properties"]) <= known, (sobject, name)
            assert set(row.get("left_out", {})) <= {*PROPERTIES.values(), "type"}, (sobject, name)
            assert any((described(org, sobject) or {}).get(name) for org in ORGS), (sobject, name)


@pytest.mark.parametrize("sobject", sorted(t for t in TABLES if described(DEFAULT_ORG, t)))
def test_the_default_org_serves_the_same_describe(api: TestClient, sobject: str) -> None:
    response = api.get(f"{API}/sobjects/{sobject}/describe")
    assert response.status_code == 200, response.text
    served = {field["name"]: field for field in response.json()["fields"]}
    for name, row in TABLES[sobject]["fields"].items():
        if name in served:
            expect = expected(row)
            assert {key: served[name][key] for key in expect} == expect, (sobject, name)
