"""jsforce's own tests of a real org, repeated by our suites in tests/clients/js/suite/ (one a
jsforce test file: the same calls, the same checks) with jsforce from npm, unmodified, against
a running localforce server. Each suite prints each test's failure or null; every test passes.

What jsforce's files test with its test package (the custom objects BigTable__c and
UpsertTable__c) is done with a standard object instead, as each suite's header says.
"""

from __future__ import annotations

import pytest

from tests.clients.test_jsforce import base_url as base_url  # the fixture: a server of its own
from tests.clients.test_jsforce import run_script

# Each suite and how many tests it has (so that a test left out of a run is noticed).
SUITES = {
    "bulk": 16,
    "bulk2": 16,
    "connection-crud": 11,
    "metadata": 10,
    "quick-action": 6,
    "schema": 1,
    "sobject": 28,
    "tooling": 8,
}


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_a_jsforce_suite_passes(base_url: str, suite: str) -> None:
    results = run_script("run_suite.mjs", base_url, suite, timeout=300)
    failures = {r["title"]: r["failure"] for r in results if r["failure"] is not None}
    assert failures == {}
    assert len(results) == SUITES[suite]
