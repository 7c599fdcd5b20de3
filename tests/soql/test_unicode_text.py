"""Text compared ignoring letter case over any Unicode text, on both back ends, against one
reference (reference_text.case_key): `=`, `!=`, IN, NOT IN, LIKE, `<`..., ORDER BY, GROUP BY,
COUNT_DISTINCT, MIN and MAX answer exactly what the reference computes.

The module's org holds a fixed set of Issue__c records named `Xuni <random text>` (and as many
Knowledge__kav articles with those URL names, a field indexed by its key), several
spellings of each (the case variants of a text: every character replaced by another with the
same key), drawn from the whole of Unicode and from characters whose case is tricky (sharp s
and its capital, the dotted capital and dotless small i, the long s, the Kelvin sign, final
sigma, titlecase digraphs, Greek with a subscript iota, Cherokee, Deseret, Adlam, control
characters, LIKE's wildcards). Hypothesis draws the values
queried: other spellings of the stored names, and random text.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from functools import cache
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from tests.conftest import API
from tests.soql.reference_text import case_key

PREFIX = "Xuni "
# Characters whose case is tricky, and a few plain ones, so that random names meet them often.
TRICKY = (
    "aAzZiIsSkK_%\\'\"é\u00c9üÜß\u1e9e\u0130\u0131\u017f\u212a\u212b\u00b5\u03bc\u039c"
    "\u03a3\u03c3\u03c2\u01c4\u01c5\u01c6\u1f80\u1f88\u1fb3\u1fbc\u0390\u0149\ufb01"
    "\u0416\u0436\u0531\u0561\u13a0\uab70\u10d0\u1c90\U00010400\U00010428\U0001e900"
    "\U0001e922\x01\x02\t\u00a0\u4e2d\U0001f600 0"
)
SQL_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b"}
EXAMPLES = 40


def quoted(value: str) -> str:
    """`value` as a SOQL string literal."""
    return "'" + "".join(SQL_ESCAPES.get(char, char) for char in value) + "'"


@cache
def same_key() -> dict[str, tuple[str, ...]]:
    """Every cased character's key, and all the characters that have it."""
    classes: dict[str, list[str]] = {}
    for code in range(1, 0x20000):
        if not 0xD800 <= code <= 0xDFFF:
            classes.setdefault(case_key(chr(code)), []).append(chr(code))
    return {key: tuple(chars) for key, chars in classes.items() if len(chars) > 1}


def variant(value: str, pick: random.Random) -> str:
    """Another spelling of `value`: each character swapped for one with the same key."""
    classes = same_key()
    return "".join(pick.choice(classes.get(case_key(char), (char,))) for char in value)


def random_char(pick: random.Random) -> str:
    if pick.random() < 0.6:
        return pick.choice(TRICKY)
    code = pick.choice([pick.randrange(0x80, 0x800), pick.randrange(0x800, 0x20000)])
    if 0xD800 <= code <= 0xDFFF:
        return "x"
    return chr(code)


def stored_names() -> list[str]:
    """The names of the module's records: random texts, each in one to three spellings, and the
    example every back end once got wrong."""
    pick = random.Random(2026)
    names = ["SÉMFIX ÜNÏCODE", "sémfix ünïcode"]
    for _ in range(30):
        text = "".join(random_char(pick) for _ in range(pick.randint(1, 8)))
        names.extend(variant(text, pick) for _ in range(pick.randint(1, 3)))
    return [PREFIX + name for name in names]


NAMES = stored_names()
IN_ORG = f"Name LIKE {quoted(PREFIX + '%')}"


def create(api: TestClient, sobject: str, field: str, extra: dict[str, str]) -> dict[str, str]:
    """A record of `sobject` per name, its `field` that name: the names by id."""
    body = {
        "allOrNone": True,
        "records": [{"attributes": {"type": sobject}, field: name, **extra} for name in NAMES],
    }
    response = api.post(f"{API}/composite/sobjects", json=body)
    assert response.status_code == 200, response.text
    results = response.json()
    assert all(result["success"] for result in results), results
    return {result["id"]: name for result, name in zip(results, NAMES, strict=True)}


@pytest.fixture(scope="module")
def records(api: TestClient) -> dict[str, str]:
    """The module's issues, created once per back end: their names by id."""
    return create(api, "Issue__c", "Name", {})


@pytest.fixture(scope="module")
def articles(api: TestClient) -> dict[str, str]:
    """The module's articles, named by URL name: a unique field, indexed by its key."""
    return create(api, "Knowledge__kav", "UrlName", {"Title": "Xuni article"})


def query(api: TestClient, soql: str) -> list[dict[str, Any]]:
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["done"] is True
    return [{k: v for k, v in row.items() if k != "attributes"} for row in body["records"]]


def ids(api: TestClient, where: str, sobject: str = "Issue__c", field: str = "Name") -> set[str]:
    note(where)
    in_org = f"{field} LIKE {quoted(PREFIX + '%')}"
    soql = f"SELECT Id FROM {sobject} WHERE {in_org} AND {where}"
    return {row["Id"] for row in query(api, soql)}


# -- what Hypothesis draws -------------------------------------------------------------------------


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """Another spelling of a stored name (which then matches it)."""
    name = draw(st.sampled_from(NAMES))
    return variant(name, random.Random(draw(st.integers(0, 2**32))))


texts = st.text(
    alphabet=st.one_of(
        st.sampled_from(TRICKY),
        st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    ),
    min_size=1,
    max_size=8,
).map(lambda text: PREFIX + text)
values = st.one_of(spellings(), texts)


def property_settings() -> settings:
    return settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


# -- comparisons -----------------------------------------------------------------------------------


def expected_ids(records: dict[str, str], test: Any) -> set[str]:
    return {record_id for record_id, name in records.items() if test(case_key(name))}


@property_settings()
@given(
    op=st.sampled_from(["=", "!=", "IN", "NOT IN"]), wanted=st.lists(values, min_size=1, max_size=3)
)
def test_equality_and_membership_follow_the_reference(
    api: TestClient, records: dict[str, str], op: str, wanted: list[str]
) -> None:
    assert_membership(api, "Issue__c", "Name", records, op, wanted)


@property_settings()
@given(
    op=st.sampled_from(["=", "!=", "IN", "NOT IN"]), wanted=st.lists(values, min_size=1, max_size=3)
)
def test_equality_on_a_field_indexed_by_its_key_follows_the_reference(
    api: TestClient, articles: dict[str, str], op: str, wanted: list[str]
) -> None:
    assert_membership(api, "Knowledge__kav", "UrlName", articles, op, wanted)


def assert_membership(
    api: TestClient, sobject: str, field: str, records: dict[str, str], op: str, wanted: list[str]
) -> None:
    if op in ("=", "!="):
        wanted = wanted[:1]
        where = f"{field} {op} {quoted(wanted[0])}"
    else:
        where = f"{field} {op} ({', '.join(quoted(value) for value in wanted)})"
    keys = {case_key(value) for value in wanted}
    inside = op in ("=", "IN")
    expected = expected_ids(records, lambda key: (key in keys) == inside)
    assert ids(api, where, sobject, field) == expected


@property_settings()
@given(op=st.sampled_from(["<", "<=", ">", ">="]), value=values)
def test_order_comparisons_follow_the_reference(
    api: TestClient, records: dict[str, str], op: str, value: str
) -> None:
    bound = case_key(value)
    tests = {
        "<": lambda key: key < bound,
        "<=": lambda key: key <= bound,
        ">": lambda key: key > bound,
        ">=": lambda key: key >= bound,
    }
    assert ids(api, f"Name {op} {quoted(value)}") == expected_ids(records, tests[op])


@st.composite
def like_patterns(draw: st.DrawFn) -> tuple[str, str]:
    """A LIKE pattern made from a spelling of a stored name (a character may become `_`, a run
    `%`): its SOQL literal, and the regular expression it means over keys."""
    text = draw(st.one_of(spellings(), texts))
    literal, regex = [], []
    index = 0
    while index < len(text):
        roll = draw(st.integers(0, 9))
        if roll == 0:
            literal.append("_")
            regex.append(".")
        elif roll == 1:
            literal.append("%")
            regex.append(".*")
            index += draw(st.integers(0, 3))
            continue
        else:
            char = text[index]
            literal.append("\\" + char if char in "%_" else SQL_ESCAPES.get(char, char))
            regex.append(re.escape(case_key(char)))
        index += 1
    return "'" + "".join(literal) + "'", "".join(regex)


@property_settings()
@given(pattern=like_patterns())
def test_like_follows_the_reference(
    api: TestClient, records: dict[str, str], pattern: tuple[str, str]
) -> None:
    literal, regex = pattern
    compiled = re.compile(regex, re.DOTALL)
    expected = expected_ids(records, lambda key: compiled.fullmatch(key) is not None)
    assert ids(api, f"Name LIKE {literal}") == expected


# -- sorting, grouping, aggregates -----------------------------------------------------------------


@pytest.mark.parametrize("direction", ["ASC", "DESC"])
def test_order_by_sorts_by_the_reference_key(
    api: TestClient, records: dict[str, str], direction: str
) -> None:
    rows = query(api, f"SELECT Name FROM Issue__c WHERE {IN_ORG} ORDER BY Name {direction}")
    assert Counter(row["Name"] for row in rows) == Counter(records.values())
    keys = [case_key(row["Name"]) for row in rows]
    assert keys == sorted(keys, reverse=direction == "DESC")


def test_group_by_makes_one_group_per_reference_key(
    api: TestClient, records: dict[str, str]
) -> None:
    rows = query(
        api, f"SELECT Name, COUNT(Id) n FROM Issue__c WHERE {IN_ORG} GROUP BY Name ORDER BY Name"
    )
    expected = Counter(case_key(name) for name in records.values())
    assert [case_key(row["Name"]) for row in rows] == sorted(expected)
    for row in rows:
        assert row["Name"] in records.values()  # a spelling of the group's own
        assert row["n"] == expected[case_key(row["Name"])]


@property_settings()
@given(wanted=st.lists(values, min_size=1, max_size=6))
def test_min_max_and_count_distinct_follow_the_reference(
    api: TestClient, records: dict[str, str], wanted: list[str]
) -> None:
    keys = {case_key(value) for value in wanted}
    where = f"Name IN ({', '.join(quoted(value) for value in wanted)})"
    note(where)
    (row,) = query(
        api,
        f"SELECT MIN(Name) lo, MAX(Name) hi, COUNT_DISTINCT(Name) d FROM Issue__c "
        f"WHERE {IN_ORG} AND {where}",
    )
    matched = [name for name in records.values() if case_key(name) in keys]
    assert row["d"] == len({case_key(name) for name in matched})
    if not matched:
        assert row["lo"] is None and row["hi"] is None
        return
    assert row["lo"] in matched and row["hi"] in matched
    assert case_key(row["lo"]) == min(map(case_key, matched))
    assert case_key(row["hi"]) == max(map(case_key, matched))
