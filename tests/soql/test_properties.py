"""Property tests of the SOQL engine, on both backends.

1. Random well-formed queries over the seeded schema return exactly the rows that a small
   reference evaluator of Salesforce's semantics computes in plain Python from the generated
   records (`build_rows`), which are what the seeded database holds.
2. Any text sent as a query (random, mutated from valid queries, very long) gets a 200 or a
   Salesforce-format 4xx/501 error body, never a 500.

The reference semantics, as documented for Salesforce (see the spec, section C.1):
- text `=`, IN, LIKE, `<`... and ORDER BY ignore letter case (compared by their case keys:
  upper-cased character by character, by code point; test_unicode_text holds both back ends
  to it over any Unicode text);
- `''` is null; `= null` matches nulls; a checkbox is never null (`= null` means false);
- `!=` and NOT IN match nulls (NOT IN only when null is not in the list); `<`, `>`, LIKE never do;
- NOT is two-valued: NOT of "no match" is a match;
- a missing parent makes its fields null;
- nulls sort first unless NULLS LAST, in both directions.
Picklists are neither ordered nor compared with `<`: Salesforce orders them by their definition
order, which this reference does not model.

LOCALFORCE_PROPERTY_EXAMPLES raises the number of examples for a deeper local run.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest
import yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from app.metadata.model import SObjectDef
from app.metadata.values import to_json
from tests.conftest import API
from tests.soql.reference_aggregates import AggregateSpec, aggregate_queries, check_aggregate
from tests.soql.reference_model import (
    BATCH,
    OBJECTS,
    ROWS,
    Column,
    Condition,
    QuerySpec,
    Row,
    check_records,
    conditions,
    data_values,
    filterable,
    fold,
    matches,
    queries,
    reference,
)
from tests.soql.reference_subqueries import parent_child_queries, semi_join_queries
from tests.soql.reference_text import case_key

EXAMPLES = int(os.environ.get("LOCALFORCE_PROPERTY_EXAMPLES", "0")) or None
# httpx refuses a URL query component longer than 64 KiB.
MAX_URL_QUERY = 60_000


def property_settings(default_examples: int) -> settings:
    return settings(
        max_examples=EXAMPLES or default_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@property_settings(200)
@given(spec=queries())
def test_random_queries_return_what_salesforce_would(api: TestClient, spec: QuerySpec) -> None:
    assert_answers_as_the_reference(api, spec)


def assert_answers_as_the_reference(api: TestClient, spec: QuerySpec) -> None:
    """The query's records (or COUNT()) are exactly what the reference evaluator computes."""
    text = spec.soql()
    note(text)
    response = api.get(f"{API}/query", params={"q": text})
    assert response.status_code == 200, response.text
    body = response.json()
    expected = reference(spec)
    if spec.count_only:
        assert body == {"totalSize": len(expected), "done": True, "records": []}
    else:
        check_records(spec, body, expected)


# -- aggregate queries -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupSpec:
    sobject: SObjectDef
    group: Column
    measure: Column | None
    where: Condition | None

    def soql(self) -> str:
        measures = "COUNT(Id) n"
        if self.measure is not None:
            name = self.measure.field.name
            measures += f", MAX({name}) biggest, SUM({name}), COUNT({name})"
        query = f"SELECT {self.group.field.name}, {measures} FROM {self.sobject.name}"
        if self.where is not None:
            query += f" WHERE {self.where.soql()}"
        return f"{query} GROUP BY {self.group.field.name}"


# Objects with a number field whose values vary.
MEASURED_OBJECTS = [
    sobject
    for sobject in OBJECTS
    if any(
        c.kind == "number" and c.lookup is None and len(data_values(c)) > 1
        for c in filterable(sobject)
    )
]


@st.composite
def group_queries(draw: st.DrawFn) -> GroupSpec:
    chance = draw(st.randoms(use_true_random=True))
    sobject = chance.choice(MEASURED_OBJECTS if chance.random() < 0.6 else OBJECTS)
    own = [c for c in filterable(sobject) if c.lookup is None and c.field.groupable]
    numbers = [c for c in filterable(sobject) if c.lookup is None and c.kind == "number"]
    # Picklists, checkboxes and lookups make groups of several rows, where aggregates show.
    coarse = [c for c in own if c.kind in ("picklist", "boolean", "id") and c.field.name != "Id"]
    return GroupSpec(
        sobject=sobject,
        group=chance.choice(coarse if coarse and chance.random() < 0.7 else own),
        measure=chance.choice(numbers) if numbers and chance.random() < 0.7 else None,
        where=None if chance.random() < 0.3 else draw(conditions(sobject)),
    )


@property_settings(50)
@given(spec=group_queries())
def test_random_group_by_queries_count_what_salesforce_would(
    api: TestClient, spec: GroupSpec
) -> None:
    text = spec.soql()
    note(text)
    response = api.get(f"{API}/query", params={"q": text})
    rows = [
        row for row in ROWS[spec.sobject.name] if spec.where is None or matches(spec.where, row)
    ]
    groups: dict[Any, list[Row]] = {}
    for row in rows:
        groups.setdefault(fold(spec.group.kind, spec.group.value(row)), []).append(row)
    if len(groups) > BATCH:
        assert response.status_code == 400, response.text
        assert response.json()[0]["errorCode"] == "EXCEEDED_ID_LIMIT"
        return
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["totalSize"] == len(groups)

    def comparable(value: Any) -> Any:
        return case_key(value) if isinstance(value, str) and spec.group.kind != "id" else value

    # Text groups ignore case, so a group's value may be spelt as any of its members spell it.
    by_value = {comparable(spec.group.json(members[0])): key for key, members in groups.items()}
    seen = set()
    for record in body["records"]:
        assert record["attributes"] == {"type": "AggregateResult"}
        key = by_value[comparable(record[spec.group.field.name])]
        assert key not in seen
        seen.add(key)
        members = groups[key]
        assert record["n"] == len(members)
        if spec.measure is not None:
            numbers = [spec.measure.value(m) for m in members]
            present = [float(x) for x in numbers if x is not None]
            assert record["expr1"] == len(present)
            if present:
                assert record["biggest"] == to_json(spec.measure.field, max(present))
                assert math.isclose(record["expr0"], math.fsum(present), rel_tol=1e-9, abs_tol=1e-6)
            else:
                assert record["biggest"] is None and record["expr0"] is None
    assert len(seen) == len(groups)


@property_settings(40)
@given(spec=aggregate_queries())
def test_random_aggregate_queries_return_what_salesforce_would(
    api: TestClient, spec: AggregateSpec
) -> None:
    text = spec.soql()
    note(text)
    response = api.get(f"{API}/query", params={"q": text})
    check_aggregate(spec, response.status_code, response.json())


@property_settings(25)
@given(spec=parent_child_queries())
def test_random_child_subqueries_return_what_salesforce_would(
    api: TestClient, spec: QuerySpec
) -> None:
    assert_answers_as_the_reference(api, spec)


@property_settings(40)
@given(spec=semi_join_queries())
def test_random_semi_joins_return_what_salesforce_would(api: TestClient, spec: QuerySpec) -> None:
    assert_answers_as_the_reference(api, spec)


# -- anything sent as a query ----------------------------------------------------------------------

_CORPUS = Path(__file__).parent / "fixtures"
_REFS = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*(\.15|\.lower)?")


def corpus_queries() -> list[str]:
    """The corpus's queries, its fixture references replaced by ids of the seeded data."""
    found = []
    for path in sorted(_CORPUS.glob("corpus_*.yaml")):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]:
            if isinstance(case.get("q"), str):
                found.append(_REFS.sub(ROWS["Account"][0]["Id"], case["q"]))
    return found


SEED_QUERIES = corpus_queries()
_TOKEN = re.compile(
    r"'(?:[^'\\]|\\.)*'?|\d{4}-\d{2}-\d{2}(?:T[\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|<=|>=|<>|!=|\s+|.",
    re.DOTALL,
)
VOCABULARY = [
    "SELECT", "FROM", "WHERE", "AND", "OR", "NOT", "IN", "LIKE", "INCLUDES", "EXCLUDES",
    "GROUP BY", "HAVING", "ORDER BY", "ASC", "DESC", "NULLS FIRST", "NULLS LAST", "LIMIT",
    "OFFSET", "COUNT()", "COUNT(Id)", "SUM(", "(", ")", ",", ".", "=", "!=", "<", ">=", "null",
    "true", "FALSE", "TODAY", "LAST_N_DAYS:3", "'x'", "'%'", "'\\'", "5", "-1.5", "2024-01-01",
    "2024-01-01T00:00:00Z", ":", "*", ";", '"', "'", "\\", "Id", "Name", "Account.Name",
    "Owner.Name", "Account", "Case", "Group", "USING SCOPE", "WITH", "FOR VIEW", "TYPEOF",
    "(SELECT Id FROM Contacts)", "\u00e9", "\u0000", "\n", "\U0001f600",
]  # fmt: skip


@st.composite
def mutated_queries(draw: st.DrawFn) -> str:
    """A valid query with a few tokens deleted, duplicated, swapped, replaced or garbled."""
    base = draw(st.sampled_from(SEED_QUERIES)) if draw(st.booleans()) else draw(queries()).soql()
    tokens = _TOKEN.findall(base)
    for _ in range(draw(st.integers(1, 3))):
        if not tokens:
            break
        index = draw(st.integers(0, len(tokens) - 1))
        action = draw(st.integers(0, 6))
        if action == 0:
            del tokens[index]
        elif action == 1:
            tokens.insert(index, tokens[index])
        elif action == 2:
            other = draw(st.integers(0, len(tokens) - 1))
            tokens[index], tokens[other] = tokens[other], tokens[index]
        elif action == 3:
            tokens[index] = draw(st.sampled_from(VOCABULARY))
        elif action == 4:
            tokens.insert(index, " " + draw(st.sampled_from(VOCABULARY)) + " ")
        elif action == 5:
            tokens[index] = draw(st.text(max_size=4))
        else:
            tokens = tokens[:index]
    return "".join(tokens)


@st.composite
def long_queries(draw: st.DrawFn) -> str:
    """Very long or deeply nested queries (kept within what a URL can carry)."""
    n = draw(st.integers(50, 1500))
    leaf = draw(
        st.sampled_from(
            ["Name = 'x'", "Name != null", "(NOT Name LIKE 'a%')", "Id IN ('001Lf0000000001IAA')"]
        )
    )
    shape = draw(st.integers(0, 7))
    if shape == 0:
        return "SELECT Id FROM Account WHERE " + f" {draw(st.sampled_from(['AND', 'OR']))} ".join(
            [leaf] * n
        )
    if shape == 1:
        depth = draw(st.integers(1, 300))
        return "SELECT Id FROM Account WHERE " + "(" * depth + leaf + ")" * depth
    if shape == 2:
        depth = draw(st.integers(1, 300))
        return "SELECT Id FROM Account WHERE " + "NOT (" * depth + leaf + ")" * depth
    if shape == 3:
        values = ", ".join(f"'v{i}'" for i in range(n * 2))
        return f"SELECT Id FROM Account WHERE Name IN ({values})"
    if shape == 4:
        return (
            "SELECT Id FROM Account WHERE Name = '" + draw(st.sampled_from("x'\\%_é")) * n * 3 + "'"
        )
    if shape == 5:
        return "SELECT " + ", ".join(["Name"] * n) + " FROM Account"
    if shape == 6:
        return "SELECT Id FROM Account LIMIT " + "9" * draw(st.integers(1, 6000))
    depth = draw(st.integers(1, 150))
    return "SELECT Id FROM Account WHERE " + "(Name = 'x' OR " * depth + leaf + ")" * depth


ANY_TEXT = st.one_of(
    st.text(max_size=300),
    st.text(st.sampled_from(list("SELECTFROMWHERE ()',.=<>!%_\\:;*\"0123456789-TZ")), max_size=80),
    mutated_queries(),
    long_queries(),
)


@property_settings(250)
@given(text=ANY_TEXT)
def test_any_query_text_gets_a_salesforce_answer(api: TestClient, text: str) -> None:
    while len(quote_plus(text)) > MAX_URL_QUERY:
        text = text[: len(text) * 3 // 4]  # what the test client can put in a URL
    note(repr(text[:500]))
    response = api.get(f"{API}/query", params={"q": text})
    status = response.status_code
    assert status == 200 or 400 <= status < 500 or status == 501, response.text[:2000]
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    if status == 200:
        assert {"totalSize", "done", "records"} <= set(body)
        assert isinstance(body["records"], list)
        return
    assert isinstance(body, list) and len(body) == 1, body
    error = body[0]
    assert isinstance(error, dict) and {"message", "errorCode"} <= set(error), error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["errorCode"], str) and re.fullmatch(r"[A-Z_]+", error["errorCode"])


@pytest.mark.parametrize(
    "text",
    [
        "SELECT Id FROM Account WHERE " + " AND ".join(["Name != 'x'"] * 2500),
        "SELECT Id FROM Account WHERE " + " OR ".join(["Name = 'x'"] * 2500),
        "SELECT Id FROM Account LIMIT " + "9" * 5000,
        "SELECT Id FROM OrderItem WHERE Quantity < " + "9" * 5000,
        "SELECT Id FROM Account WHERE Name = 'a\\u0000b'",
        "SELECT Id FROM Account WHERE Name = 'a\\uD800'",
        "SELECT Id FROM Account WHERE CreatedDate > 9999-12-31T23:00:00-05:00",
        "SELECT Id FROM Knowledge__kav WHERE VersionNumber = 99999999999999999999",
    ],
    ids=[
        "and-2500",
        "or-2500",
        "limit-5000-digits",
        "number-5000-digits",
        "nul",
        "surrogate",
        "datetime-overflow",
        "int-overflow",
    ],
)
def test_extreme_queries_never_fail_with_500(api: TestClient, text: str) -> None:
    response = api.get(f"{API}/query", params={"q": text})
    assert response.status_code in (200, 400), response.text[:2000]
    if response.status_code == 400:
        assert response.json()[0]["errorCode"] == "MALFORMED_QUERY"
