"""Random and mutated searches never produce a 500: always results or a Salesforce error.

LOCALFORCE_PROPERTY_EXAMPLES=2000 (as `make fuzz` sets it) runs a longer campaign than the
default.
"""

from __future__ import annotations

import json
import os
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import API
from tests.sosl.test_search_cases import CASES

SEEDS = [case.statement for case in CASES] + [
    "FIND {racing suit} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c WHERE "
    "PublishStatus='Online' AND Language='en_US')",
    "FIND {Joe Sm?th*} IN NAME FIELDS RETURNING Contact(Name, Account.Name ORDER BY Name DESC "
    "NULLS LAST LIMIT 5 OFFSET 1), Case(Subject WHERE Status IN ('New', 'Closed')) "
    "WITH SNIPPET(target_length=120) WITH METADATA='LABELS' LIMIT 20 UPDATE TRACKING",
]
# Pieces that make mutations likely to reach deep into the parsers.
PIECES = [
    "{", "}", "(", ")", "\\", '"', "'", "*", "?", ",", ".", "=", "!=", " AND ", " OR ",
    " AND NOT ", " NOT ", " IN ", " FIELDS ", " RETURNING ", " WHERE ", " ORDER BY ", " LIMIT ",
    " OFFSET ", " WITH ", " GROUP BY ", " USING ", " UPDATE ", "2001", "-1", "99999999999999999999",
    "Product2", "Knowledge__kav", "Nope__c", "Name", "Id", "Foo", "TODAY", "COUNT(Id)",
    "toLabel(Name)", "'\x00'", "\x00", "\n", "é", "東京", "😀", "%", "_", ";", "*" * 30, "(" * 40,
]  # fmt: skip
RESERVED = "(){}[]\"'\\*?&|!^~:+-_%;,.=<> \n\tabcAND ORNOT0123456789é"


def assert_answered(response: Any) -> None:
    assert response.status_code in (200, 400, 404, 501), (response.status_code, response.text)
    assert response.headers["content-type"] == "application/json;charset=UTF-8"
    body = response.json()
    if response.status_code == 200:
        assert isinstance(body, dict) and isinstance(body["searchRecords"], list)
        return
    assert isinstance(body, list) and body
    for item in body:
        assert isinstance(item["message"], str) and item["message"]
        assert isinstance(item["errorCode"], str) and item["errorCode"].isupper()


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "duplicate"]))
        if action == "insert":
            piece = draw(st.sampled_from(PIECES) | st.text(alphabet=RESERVED, max_size=6))
            text = text[:at] + piece + text[at:]
        elif action == "delete":
            end = at + draw(st.integers(min_value=1, max_value=12))
            text = text[:at] + text[end:]
        elif action == "replace":
            end = at + draw(st.integers(min_value=1, max_value=6))
            text = text[:at] + draw(st.sampled_from(PIECES)) + text[end:]
        else:
            end = at + draw(st.integers(min_value=1, max_value=20))
            text = text[:at] + text[at:end] * 2 + text[end:]
    return text


FUZZ = settings(
    max_examples=int(os.environ.get("LOCALFORCE_PROPERTY_EXAMPLES", "0")) or 120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@FUZZ
@given(statement=mutated())
def test_mutated_statements(api: TestClient, statement: str) -> None:
    assert_answered(api.get(f"{API}/search", params={"q": statement}))


@FUZZ
@given(term=st.text(alphabet=RESERVED, max_size=60) | st.text(max_size=60))
def test_random_terms(api: TestClient, term: str) -> None:
    statement = f"FIND {{{term}}} IN ALL FIELDS RETURNING Product2(Id, Name), Contact(Name)"
    assert_answered(api.get(f"{API}/search", params={"q": statement}))
    assert_answered(api.get(f"{API}/parameterizedSearch", params={"q": term, "sobject": "Case"}))


@FUZZ
@given(text=st.text(max_size=120))
def test_random_text(api: TestClient, text: str) -> None:
    assert_answered(api.get(f"{API}/search", params={"q": text}))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=RESERVED, max_size=20),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["name", "fields", "where", "limit", "x"]), children)
    ),
    max_leaves=6,
)


BODY_KEYS = ["q", "fields", "sobjects", "in", "overallLimit", "defaultLimit", "offset"]
BODY_KEYS += ["highlights", "snippet", "metadata", "pricebookId", "dataCategories", "division"]


@FUZZ
@given(body=st.dictionaries(st.sampled_from(BODY_KEYS), JSON_VALUES, max_size=6))
def test_random_parameterized_bodies(api: TestClient, body: dict[str, Any]) -> None:
    body.setdefault("q", "rope")
    response = api.post(f"{API}/parameterizedSearch", content=json.dumps(body))
    assert_answered(response)


def test_extreme_terms(api: TestClient) -> None:
    extremes = [
        "x" * 3000,  # longer than PostgreSQL indexes a word
        " OR ".join(["rope", "yoga"] * 600),  # past 4,000 characters: operators dropped
        "rope " * 2500,  # past 10,000 characters: nothing found
        "(" * 300 + "rope" + ")" * 300,
        "r*" * 10 + " " + "?" * 50,
        "\\" * 101,
    ]
    for term in extremes:
        response = api.get(f"{API}/search", params={"q": f"FIND {{{term}}} RETURNING Product2"})
        assert_answered(response)
    long_or = " OR ".join(["rope", "yoga"] * 600)
    body = api.get(f"{API}/search", params={"q": f"FIND {{{long_or}}} RETURNING Product2"}).json()
    short = api.get(f"{API}/search", params={"q": "FIND {rope OR yoga} RETURNING Product2"})
    assert body == short.json()  # every rope and every yoga product
