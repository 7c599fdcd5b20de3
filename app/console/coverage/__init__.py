"""The coverage report: which Salesforce resources and which SOQL and SOSL constructs localforce
serves, which task types it generates, and which tests prove each, for the console's
/console/coverage and docs/coverage.md.

It is computed, never declared (see routes, constructs, tasks and sources): the route table of
the app, the constructs of the reference's checklist run through localforce's own pipeline, the
task types' registry, and the test sources read statically. `localforce coverage` (`make
coverage`) writes the two files; the test suite fails when they are stale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from app.console.coverage.constructs import constructs, load_catalog
from app.console.coverage.markdown import render_markdown
from app.console.coverage.routes import apis, app_routes
from app.console.coverage.sources import TestIndex
from app.console.coverage.tasks import task_types

JSON_FILE = Path("app") / "console" / "coverage.json"
MARKDOWN_FILE = Path("docs") / "coverage.md"
PACKAGED = Path(__file__).resolve().parent.parent / "coverage.json"


def build(root: Path, app: FastAPI) -> dict[str, Any]:
    """The report: `app`'s routes, the constructs, the task types, and the tests under
    root/tests."""
    tests = TestIndex.scan(root)
    resources_by_api = apis(app_routes(app), tests)
    catalog = load_catalog()
    soql = constructs("soql", catalog["soql"], root, tests)
    sosl = constructs("sosl", catalog["sosl"], root, tests)
    resources = [resource for api in resources_by_api for resource in api["resources"]]
    summary = {
        "routes": len(resources),
        "routes_supported": sum(1 for item in resources if item["supported"]),
        "soql": len(soql),
        "soql_supported": sum(1 for item in soql if item["supported"]),
        "sosl": len(sosl),
        "sosl_supported": sum(1 for item in sosl if item["supported"]),
    }
    return {
        "apis": resources_by_api,
        "soql": soql,
        "sosl": sosl,
        "task_types": task_types(tests),
        "summary": summary,
    }


def load() -> dict[str, Any]:
    """The packaged report (app/console/coverage.json), as `make coverage` last wrote it."""
    report: dict[str, Any] = json.loads(PACKAGED.read_text(encoding="utf-8"))
    return report


def dump_json(report: dict[str, Any]) -> str:
    return json.dumps(report, indent=1, sort_keys=True) + "\n"


def outputs(report: dict[str, Any]) -> dict[Path, str]:
    """The files of the report, by their path in the repository."""
    return {JSON_FILE: dump_json(report), MARKDOWN_FILE: render_markdown(report)}


def stale_files(root: Path, report: dict[str, Any]) -> list[Path]:
    """The report's files under `root` that differ from `report`."""
    stale = []
    for rel, text in outputs(report).items():
        path = root / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(rel)
    return stale


def write(root: Path, report: dict[str, Any]) -> list[Path]:
    """Write the stale files; which they were."""
    written = stale_files(root, report)
    for rel in written:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(outputs(report)[rel], encoding="utf-8")
    return written
