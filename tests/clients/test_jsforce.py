"""jsforce from npm, unmodified, against a running localforce server.

`make install` (and so `make test` and CI) runs `npm ci` in tests/clients/js; the test runs
tests/clients/js/scenario.mjs with the machine's Node.js and asserts on the JSON it prints.
Without node or the installed packages the test skips, except in CI (CI=true), where it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

JS_DIR = Path(__file__).parent / "js"


def node_or_skip() -> str:
    node = shutil.which("node")
    problem = None
    if node is None:
        problem = "node is not on PATH"
    elif not (JS_DIR / "node_modules" / "jsforce" / "package.json").is_file():
        problem = "jsforce is not installed: run `make install` (npm ci in tests/clients/js)"
    if problem is not None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(problem)
        pytest.skip(problem)
    assert node is not None
    return node


@pytest.fixture(scope="module")
def base_url(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[str]:
    with serve_in_thread(private_org_app(database_factory, seeded_template)) as port:
        yield f"http://127.0.0.1:{port}"


def run_script(*args: str, timeout: float = 120) -> Any:
    """A script of tests/clients/js run with the machine's Node.js: the JSON it prints."""
    completed = subprocess.run(
        [node_or_skip(), *args],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_jsforce_scenario(base_url: str) -> None:
    summary: dict[str, Any] = run_script("scenario.mjs", base_url)

    assert summary["soap"]["instanceUrl"] == base_url
    assert summary["soap"]["hasToken"] is True
    assert summary["soap"]["userId"].startswith("005")
    assert summary["soap"]["organizationId"].startswith("00D")

    oauth = summary["oauth"]
    assert oauth["instanceUrl"] == base_url
    assert oauth["userId"] == summary["soap"]["userId"]
    assert oauth["organizationId"] == summary["soap"]["organizationId"]
    assert oauth["identity"] == {
        "user_id": oauth["userId"],
        "organization_id": oauth["organizationId"],
        "username": "agent@example.com",
    }

    assert summary["query"] == {
        "totalSize": 22000,
        "fetched": 22000,
        "unique": 22000,
        "done": True,
        "cappedFetched": 2500,
        "firstPageSize": 2000,
        "firstPageDone": False,
        "hasNextRecordsUrl": True,
        "moreSize": 2000,
    }

    assert summary["crud"] == {
        "created": {"success": True, "idPrefix": "003", "idLength": 18},
        "retrievedName": "Grace Hopper",
        "updated": True,
        "updatedName": "Grace Murray Hopper",
        "destroyed": True,
        "retrieveDeleted": "ENTITY_IS_DELETED",
    }

    assert summary["describe"] == {
        "name": "Case",
        "keyPrefix": "500",
        "hasSubject": True,
        "globalHas": ["Case", "Contact", "Product2", "Knowledge__kav"],
    }

    assert summary["search"]["count"] > 0
    assert summary["search"]["types"] == ["Product2"]
    assert summary["search"]["named"] is True

    error = summary["error"]
    assert error["errorCode"] == "INVALID_FIELD"
    assert "No such column 'Nope__c' on entity 'Case'" in error["message"]

    assert summary["bulk2"] == {
        "successful": [["true", "Jsbulk One"], ["true", "Jsbulk Two"]],
        "failed": ["REQUIRED_FIELD_MISSING:Required fields are missing: [LastName]:LastName --"],
        "unprocessed": 0,
        "queried": [
            ["Jsbulk One", "one@jsbulk.example"],
            ["Jsbulk Two", "two@jsbulk.example"],
        ],
        "idsMatch": True,
    }

    assert summary["bulk1"] == {
        "loaded": [[True, 0], [False, 1]],
        "queried": [["Jsbulkone A", True]],
    }

    calls = summary["soapCalls"]
    assert (calls["userId"], calls["organizationId"]) == (
        summary["soap"]["userId"],
        summary["soap"]["organizationId"],
    )
    assert calls["userName"] == "agent@example.com"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", calls["timestamp"])
    assert calls["describeTabs"]["name"] == "sf:FUNCTIONALITY_NOT_ENABLED"  # the faultcode
    assert "describeTabs() call of the partner SOAP API" in calls["describeTabs"]["message"]
    assert calls["loggedOut"] is True
    assert calls["queryAfterLogout"] == "INVALID_SESSION_ID"
