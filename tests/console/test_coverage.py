"""The coverage report (app/console/coverage): the committed files are what `make coverage`
writes now, every route is in it once, the construct catalog is whole, and support is computed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts

from app.config import REPO_ROOT, Settings
from app.console import coverage
from app.console.coverage.constructs import (
    Schemas,
    detector,
    example_text,
    load_catalog,
    support,
)
from app.console.coverage.markdown import render_markdown
from app.console.coverage.routes import Route, app_routes, display_path, route_pattern
from app.main import create_app

STALE = "{} is stale: run `make coverage` and commit the result"
# The date functions of the reference's section C.3.
DATE_FUNCTIONS = [
    *("CALENDAR_MONTH", "CALENDAR_QUARTER", "CALENDAR_YEAR"),
    *("DAY_IN_MONTH", "DAY_IN_WEEK", "DAY_IN_YEAR", "DAY_ONLY"),
    *("FISCAL_MONTH", "FISCAL_QUARTER", "FISCAL_YEAR"),
    *("HOUR_IN_DAY", "WEEK_IN_MONTH", "WEEK_IN_YEAR"),
]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    """The app as `localforce coverage` builds it, for its route table."""
    data_dir = tmp_path_factory.mktemp("coverage")
    settings = Settings(database_url="", data_dir=data_dir, org="original", bulk_runner=False)
    built = create_app(settings)
    yield built
    built.state.localforce.engine.dispose()
    built.state.localforce.platform.dispose()


@pytest.fixture(scope="module")
def report(app: FastAPI) -> dict[str, Any]:
    return coverage.build(REPO_ROOT, app)


def resources(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for api in report["apis"] for item in api["resources"]]


def test_the_committed_files_are_current(report: dict[str, Any]) -> None:
    for rel, text in coverage.outputs(report).items():
        path = REPO_ROOT / rel
        assert path.is_file(), STALE.format(rel.as_posix())
        assert path.read_text(encoding="utf-8") == text, STALE.format(rel.as_posix())


def test_the_packaged_report_loads(report: dict[str, Any]) -> None:
    assert coverage.load() == report


def test_every_route_of_the_app_is_listed_once(report: dict[str, Any], app: FastAPI) -> None:
    listed = [(item["path"], method) for item in resources(report) for method in item["methods"]]
    shown = {path for path, _ in listed}
    for context in iter_route_contexts(app.routes):
        path = display_path(context.path or "")
        assert any(item == path or item.startswith(path + "/") for item in shown), path
    for route in app_routes(app):
        for method in route.methods:
            assert listed.count((route.shown, method)) == 1, (route.path, method)
    paths = [item["path"] for item in resources(report)]
    assert len(paths) == len(set(paths))


def test_the_summary_counts_the_rows(report: dict[str, Any]) -> None:
    summary = report["summary"]
    rows = resources(report)
    assert summary["routes"] == len(rows)
    assert summary["routes_supported"] == sum(item["supported"] for item in rows)
    for key in ("soql", "sosl"):
        assert summary[key] == len(report[key])
        assert summary[f"{key}_supported"] == sum(item["supported"] for item in report[key])


def test_every_construct_has_a_section_an_example_and_a_detector() -> None:
    catalog = load_catalog()
    assert set(catalog) == {"soql", "sosl"}
    for language, sections in (("soql", {"C.1", "C.2", "C.3"}), ("sosl", {"C.4"})):
        names = [entry["construct"] for entry in catalog[language]]
        assert len(names) == len(set(names)), language
        for entry in catalog[language]:
            assert entry["section"] in sections, entry
            assert isinstance(entry["example"], str) and entry["example"].strip(), entry
            assert detector(entry).search(example_text(entry)), entry["construct"]
            allowed = {"construct", "section", "example", "detect", "schema", "rejected", "pad_to"}
            assert set(entry) <= allowed, entry["construct"]
    sections_used = {entry["section"] for entry in catalog["soql"]}
    assert sections_used == {"C.1", "C.2", "C.3"}


def test_every_date_literal_and_date_function_of_the_reference_is_listed() -> None:
    names = {entry["construct"] for entry in load_catalog()["soql"]}
    for period in ("WEEK", "MONTH", "QUARTER", "YEAR", "FISCAL_QUARTER", "FISCAL_YEAR"):
        for word in ("LAST", "THIS", "NEXT"):
            assert f"{word}_{period}" in names
    for period in ("DAYS", "WEEKS", "MONTHS", "QUARTERS", "YEARS"):
        for template in ("LAST_N_{}:n", "NEXT_N_{}:n", "N_{}_AGO:n"):
            assert template.format(period) in names
        if period in ("QUARTERS", "YEARS"):
            for template in ("LAST_N_FISCAL_{}:n", "NEXT_N_FISCAL_{}:n", "N_FISCAL_{}_AGO:n"):
                assert template.format(period) in names
    for function in DATE_FUNCTIONS:
        assert any(name.startswith(f"{function}()") for name in names), function


def test_a_planned_route_is_reported_unsupported(report: dict[str, Any]) -> None:
    by_path = {item["path"]: item for item in resources(report)}
    tooling = by_path["/services/data/vXX.X/tooling"]
    assert tooling["supported"] is False
    assert tooling["note"] == "localforce does not support the Tooling API yet"
    assert by_path["/services/apexrest/{rest:path}"]["supported"] is False
    assert by_path["/services/data/vXX.X/query"]["supported"] is True


def test_like_is_supported_and_proved_by_tests(report: dict[str, Any]) -> None:
    like = next(item for item in report["soql"] if item["construct"] == "LIKE with % and _")
    assert like["supported"] is True and like["note"] == ""
    assert like["tests"], like
    assert "tests/soql/test_corpus.py::test_query_returns_the_expected_records" in like["tests"]
    assert all(re.fullmatch(r"tests/[\w/]+\.py::[\w:]+", test) for test in like["tests"])


def test_an_unsupported_construct_says_why(report: dict[str, Any]) -> None:
    listview = next(item for item in report["sosl"] if "USING LISTVIEW" in item["construct"])
    assert listview["supported"] is False
    assert listview["note"].startswith("FUNCTIONALITY_NOT_ENABLED: ")


def test_support_follows_the_pipeline(tmp_path: Path) -> None:
    schemas = Schemas(REPO_ROOT, tmp_path)
    accepted = {"construct": "x", "section": "C.1", "example": "SELECT Id FROM Account"}
    bad = {**accepted, "example": "SELECT Id FROM Nowhere__c"}
    assert support("soql", accepted, schemas) == (True, "")
    supported, note = support("soql", bad, schemas)
    assert not supported and note.startswith("INVALID_TYPE: ")
    assert support("soql", {**bad, "rejected": "INVALID_TYPE"}, schemas) == (True, "")
    assert support("soql", {**accepted, "rejected": True}, schemas) == (
        False,
        "accepted; Salesforce answers an error",
    )


def test_a_string_names_the_route_it_ends_with() -> None:
    record = Route("/services/data/{version}/sobjects/{sobject}/{record_id:record}", ("GET",), None)
    pattern = route_pattern(record)
    assert pattern.search("{}/sobjects/Account/{}")
    assert pattern.search("/services/data/v60.0/sobjects/Account/001000000000001AAA?fields=Name")
    assert pattern.search("/sobjects/Contact/003000000000001AAA")
    assert not pattern.search("/services/data/v60.0/sobjects/Account/describe")
    assert not pattern.search("/services/data/v60.0/sobjects/Account")
    assert not pattern.search("{}/jobs/sobjects/Account/x")
    mount = Route("/openenv/{path:path}", ("*",), None, mount=True)
    assert route_pattern(mount).search("http://127.0.0.1:8000/openenv")
    assert route_pattern(mount).search("{}/openenv/reset")


def test_rendering_escapes_pipes_and_cuts_long_test_lists() -> None:
    tests = [f"tests/test_x.py::test_{n}" for n in range(7)]
    report = {
        "apis": [
            {
                "api": "A|B",
                "resources": [
                    {
                        "path": "/a|b",
                        "methods": ["GET"],
                        "supported": False,
                        "note": "no | way",
                        "tests": tests,
                    }
                ],
            }
        ],
        "soql": [
            {
                "construct": "x | y",
                "section": "C.1",
                "example": "SELECT Id FROM Account",
                "supported": True,
                "note": "",
                "tests": [],
            }
        ],
        "sosl": [],
        "task_types": [],
        "summary": {
            "routes": 1,
            "routes_supported": 0,
            "soql": 1,
            "soql_supported": 1,
            "sosl": 0,
            "sosl_supported": 0,
        },
    }
    text = render_markdown(report)
    assert "### A\\|B" in text
    row = next(line for line in text.splitlines() if line.startswith("| `/a"))
    assert row.startswith("| `/a\\|b` | GET | no: no \\| way | ")
    assert row.endswith(" and 2 more |")
    assert "`tests/test_x.py::test_4`" in row and "test_5" not in row
    # Four cells: the pipes left unescaped are the separators.
    assert len(re.findall(r"(?<!\\)\|", row)) == 5
    assert "| x \\| y | C.1 | yes | none |" in text
    assert "do not edit by hand" in text
