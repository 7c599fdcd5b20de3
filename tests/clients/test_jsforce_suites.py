"""jsforce's own tests of a real org, repeated by our suites in tests/clients/js/suite/ (one a
jsforce test file: the same calls, the same checks) with jsforce from npm, unmodified, against
a running localforce server. Each suite prints each test's failure or null; every test passes.

What jsforce's files test with its test package (the custom objects BigTable__c and
UpsertTable__c) is done with a standard object instead, as each suite's header says.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from tests.clients.test_jsforce import JS_DIR, node_or_skip
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

# Each suite and how many tests it has (so that a test left out of a run is noticed).
SUITES = {
    "bulk": 16,
    "bulk2": 16,
    "connection-crud": 11,
    "quick-action": 6,
    "schema": 1,
    "sobject": 28,
}


@pytest.fixture(scope="module")
def base_url(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[str]:
    with serve_in_thread(private_org_app(database_factory, seeded_template)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_a_jsforce_suite_passes(base_url: str, suite: str) -> None:
    node = node_or_skip()
    completed = subprocess.run(
        [node, "run_suite.mjs", base_url, suite],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    results = json.loads(completed.stdout)
    failures = {r["title"]: r["failure"] for r in results if r["failure"] is not None}
    assert failures == {}
    assert len(results) == SUITES[suite]
