"""/search and /parameterizedSearch: knowledge search quality, response shapes, parameters."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API

KNOWLEDGE_TOOL = (
    "FIND {{{term}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
    "WHERE PublishStatus='Online' AND Language='en_US')"
)
PRODUCT_TOOL = "FIND {{{term}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"


def search(api: TestClient, sosl: str, version: str = "v59.0") -> Any:
    response = api.get(f"/services/data/{version}/search", params={"q": sosl})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json;charset=UTF-8"
    return response.json()


def error_of(response: Any) -> dict[str, str]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert isinstance(body, list) and len(body) == 1
    return dict(body[0])


@pytest.fixture(scope="module")
def articles(api: TestClient) -> list[dict[str, Any]]:
    body = api.get(f"{API}/query", params={"q": "SELECT Id, Title FROM Knowledge__kav"}).json()
    assert body["totalSize"] == 45
    return list(body["records"])


def _rank(api: TestClient, term: str, article_id: str) -> int | None:
    records = search(api, KNOWLEDGE_TOOL.format(term=term))["searchRecords"]
    ids = [record["Id"] for record in records]
    return ids.index(article_id) + 1 if article_id in ids else None


def test_every_article_is_found_by_its_title(
    api: TestClient, articles: list[dict[str, Any]]
) -> None:
    """The acceptance bar: each article first or among the first three for its title's words."""
    ranks = {}
    for article in articles:
        words = " ".join(re.findall(r"[A-Za-z0-9]+", article["Title"]))
        ranks[article["Title"]] = _rank(api, words, article["Id"])
    assert all(rank is not None and rank <= 3 for rank in ranks.values()), ranks
    assert sum(rank == 1 for rank in ranks.values()) == len(articles), ranks


def test_every_article_is_found_by_two_words_of_its_title(
    api: TestClient, articles: list[dict[str, Any]]
) -> None:
    """What an agent types: the two most telling (longest) words of the title, lower-cased."""
    ranks = {}
    for article in articles:
        words = sorted(re.findall(r"[A-Za-z]+", article["Title"]), key=lambda w: (-len(w), w))
        term = " ".join(words[:2]).lower()
        ranks[term] = _rank(api, term, article["Id"])
    assert all(rank is not None and rank <= 3 for rank in ranks.values()), ranks


def test_tool_queries_shape_records_like_soql(api: TestClient) -> None:
    body = search(api, PRODUCT_TOOL.format(term="football cleats"))
    assert list(body) == ["searchRecords"]
    records = body["searchRecords"]
    assert records and all("Football Cleats" in record["Name"] for record in records)
    first = records[0]
    assert list(first) == ["attributes", "Id", "Name", "Description"]
    assert first["attributes"] == {
        "type": "Product2",
        "url": f"{API}/sobjects/Product2/{first['Id']}",
    }
    # The same record as SOQL gives it, values and all.
    soql = f"SELECT Id, Name, Description FROM Product2 WHERE Id = '{first['Id']}'"
    assert api.get(f"{API}/query", params={"q": soql}).json()["records"] == [first]


def test_relevance_then_id_is_stable(api: TestClient) -> None:
    statement = PRODUCT_TOOL.format(term="Yoga")
    first = search(api, statement)["searchRecords"]
    assert search(api, statement.replace("{Yoga}", "{yoga}"))["searchRecords"] == first
    # Names count more than descriptions: a yoga product named so outranks one that only
    # mentions yoga in its description.
    named = [i for i, record in enumerate(first) if "yoga" in record["Name"].lower()]
    unnamed = [i for i, record in enumerate(first) if "yoga" not in record["Name"].lower()]
    assert named and unnamed and max(named) < min(unnamed)


def test_api_35_answers_a_bare_array_and_urls_echo_the_version(api: TestClient) -> None:
    records = search(api, "FIND {rope} RETURNING Product2(Name)", version="v35.0")
    assert isinstance(records, list) and len(records) == 10
    assert records[0]["attributes"]["url"].startswith("/services/data/v35.0/sobjects/Product2/")
    body = search(api, "FIND {rope} RETURNING Product2(Name)", version="v36.0")
    assert len(body["searchRecords"]) == 10


def test_trailing_slash_and_simple_salesforce_style_query(api: TestClient) -> None:
    response = api.get(f"{API}/search/?q=FIND+%7Brope%7D+RETURNING+Product2%28Name%29")
    assert response.status_code == 200
    assert len(response.json()["searchRecords"]) == 10


def test_missing_or_empty_q_is_no_search_term(api: TestClient) -> None:
    expected = {
        "message": "No search term found. The search term must be enclosed in braces.",
        "errorCode": "MALFORMED_SEARCH",
    }
    assert error_of(api.get(f"{API}/search")) == expected
    assert error_of(api.get(f"{API}/search", params={"q": "  "})) == expected


def test_search_needs_a_session(client: TestClient) -> None:
    response = client.get(f"{API}/search", params={"q": "FIND {rope}"})
    assert response.status_code == 401
    assert response.json()[0]["errorCode"] == "INVALID_SESSION_ID"


def test_resources_list_both_search_resources(api: TestClient) -> None:
    body = api.get(f"{API}/").json()
    assert body["search"] == f"{API}/search"
    assert body["parameterizedSearch"] == f"{API}/parameterizedSearch"


def test_with_metadata_labels(api: TestClient) -> None:
    body = search(
        api,
        "FIND {rope} RETURNING Product2(Id, Name), Knowledge__kav(Title) WITH METADATA='LABELS'",
    )
    assert body["metadata"] == {
        "entityLabelMetadata": [
            {
                "entityName": "Product2",
                "entityFieldLabels": [
                    {"name": "Id", "value": "Record ID"},
                    {"name": "Name", "value": "Product Name"},
                ],
            },
            {
                "entityName": "Knowledge__kav",
                "entityFieldLabels": [{"name": "Title", "value": "Title"}],
            },
        ]
    }


def test_with_snippet_and_highlight_mark_the_words(api: TestClient) -> None:
    body = search(
        api,
        "FIND {recycling} RETURNING Knowledge__kav(Title, Summary) WITH SNIPPET(target_length=80)",
    )
    record = body["searchRecords"][0]
    assert record["highlight"] == {"Title": "Shoe <mark>Recycling</mark> Program"}
    assert "<mark>" in record["snippet"]["text"] or record["snippet"]["text"] == ""
    # Where only the body matched, the snippet is the body's plain text around the match; no
    # returned field matched, so nothing is highlighted.
    body = search(
        api, "FIND {recycled} RETURNING Knowledge__kav(Title) WITH SNIPPET(target_length=40)"
    )
    guide = next(r for r in body["searchRecords"] if r["Title"] == "Care Guide: Outerwear")
    assert list(guide) == ["attributes", "Title", "snippet"]
    text = guide["snippet"]["text"]
    assert "<mark>Recycled</mark>" in text and "<td>" not in text
    assert text.startswith("...") and text.endswith("...")
    body = search(api, "FIND {jump rope} RETURNING Product2(Name) WITH HIGHLIGHT")
    for record in body["searchRecords"]:
        assert "<mark>Jump</mark> <mark>Rope</mark>" in record["highlight"]["Name"]
    # Words with wildcards are not highlighted.
    body = search(api, "FIND {rop*} RETURNING Product2(Name) WITH HIGHLIGHT")
    assert all("highlight" not in record for record in body["searchRecords"])


# -- parameterized search --------------------------------------------------------------------


def psearch(api: TestClient, **params: Any) -> Any:
    response = api.get(f"{API}/parameterizedSearch", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_parameterized_get_as_documented(api: TestClient) -> None:
    body = psearch(api, q="rope", sobject="Product2", **{"Product2.fields": "id,name"})
    records = body["searchRecords"]
    assert len(records) == 10
    assert list(records[0]) == ["attributes", "Id", "Name"]
    body = psearch(
        api, q="rope", sobject="Product2", **{"Product2.fields": "Name", "Product2.limit": "3"}
    )
    assert len(body["searchRecords"]) == 3
    # With no fields, only Ids; with no sobject, every searchable object.
    assert list(psearch(api, q="recycling")["searchRecords"][0]) == ["attributes", "Id"]


def test_parameterized_get_every_parameter(api: TestClient) -> None:
    response = api.get(
        f"{API}/parameterizedSearch/",
        params=[
            ("q", "loyalty points"),
            ("sobject", "Case"),
            ("sobject", "Knowledge__kav"),
            ("fields", "Id"),
            ("Knowledge__kav.fields", "Title"),
            ("knowledge__kav.where", "PublishStatus = 'Online'"),
            ("Knowledge__kav.orderBy", "Title DESC"),
            ("defaultLimit", "2"),
            ("overallLimit", "3"),
            ("in", "all"),
            ("spellCorrection", "false"),
            ("division", "Global"),
            ("metadata", "LABELS"),
        ],
    )
    assert response.status_code == 200, response.text
    body = response.json()
    types = [record["attributes"]["type"] for record in body["searchRecords"]]
    assert types == ["Case", "Case", "Knowledge__kav"]
    assert list(body["searchRecords"][2]) == ["attributes", "Title"]
    assert [e["entityName"] for e in body["metadata"]["entityLabelMetadata"]] == [
        "Case",
        "Knowledge__kav",
    ]
    names = psearch(
        api, q="Charles West", sobject="Contact", **{"in": "NAME", "Contact.fields": "Name"}
    )
    assert [r["Name"] for r in names["searchRecords"]] == ["Charles West"]


def test_parameterized_post(api: TestClient) -> None:
    body = {
        "q": "climbing rope",
        "fields": ["Id", "Name"],
        "sobjects": [
            {"name": "Product2", "where": "Name LIKE '%Climbing%'", "orderBy": "Name", "limit": 3},
            {"name": "Knowledge__kav", "fields": ["Title"]},
        ],
        "in": "ALL",
        "overallLimit": 100,
        "defaultLimit": 10,
        "highlights": True,
    }
    response = api.post(f"{API}/parameterizedSearch", json=body)
    assert response.status_code == 200, response.text
    records = response.json()["searchRecords"]
    products = [record for record in records if record["attributes"]["type"] == "Product2"]
    names = [record["Name"] for record in products]
    assert names == sorted(names) and len(names) == 3
    assert all("<mark>Climbing</mark>" in record["highlight"]["Name"] for record in products)
    assert all(list(r)[:2] == ["attributes", "Title"] for r in records if r not in products)
    response = api.post(
        f"{API}/parameterizedSearch/", json={"q": "rope", "sobjects": [{"name": "Product2"}]}
    )
    assert len(response.json()["searchRecords"]) == 10


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        ({}, "MALFORMED_SEARCH", "Missing or empty search term: the 'q' parameter is required"),
        ({"q": "g"}, "INVALID_SEARCH", "search term must be longer than one character: g"),
        ({"q": "rope", "in": "BODY"}, "MALFORMED_SEARCH", "Invalid value for parameter 'in': BODY"),
        (
            {"q": "rope", "overallLimit": "many"},
            "MALFORMED_SEARCH",
            "Invalid value for parameter 'overallLimit': many",
        ),
        (
            {"q": "rope", "sobject": "Product2", "Product2.limit": "-1"},
            "MALFORMED_SEARCH",
            "Invalid value for parameter 'Product2.limit': -1",
        ),
        (
            {"q": "rope", "sobject": "Nope"},
            "INVALID_TYPE",
            "sObject type 'Nope' is not supported. If you are attempting to use a custom object, "
            "be sure to append the '__c' after the entity name. Please reference your WSDL or the "
            "describe call for the appropriate names.",
        ),
        (
            {"q": "rope", "sobject": "Product2", "Product2.fields": "Nope"},
            "INVALID_FIELD",
            "No such column 'Nope' on entity 'Product2'. If you are attempting to use a custom "
            "field, be sure to append the '__c' after the custom field name. Please reference "
            "your WSDL or the describe call for the appropriate names.",
        ),
        (
            {"q": "rope", "sobject": "Product2", "Product2.where": "Name ="},
            "MALFORMED_SEARCH",
            "unexpected token: '<EOF>'",
        ),
    ],
)
def test_parameterized_errors(
    api: TestClient, params: dict[str, str], code: str, message: str
) -> None:
    response = api.get(f"{API}/parameterizedSearch", params=params)
    assert error_of(response) == {"message": message, "errorCode": code}


def test_parameterized_post_errors(api: TestClient) -> None:
    response = api.post(f"{API}/parameterizedSearch", content=b"{")
    assert error_of(response)["errorCode"] == "JSON_PARSER_ERROR"
    response = api.post(f"{API}/parameterizedSearch", json={"q": "rope", "sobjects": "Product2"})
    assert error_of(response)["errorCode"] == "MALFORMED_SEARCH"
    response = api.post(f"{API}/parameterizedSearch", json={"q": 5})
    assert error_of(response)["errorCode"] == "MALFORMED_SEARCH"


def test_parameterized_search_arrived_in_36(api: TestClient) -> None:
    response = api.get("/services/data/v35.0/parameterizedSearch", params={"q": "rope"})
    assert response.status_code == 404
    assert response.json()[0]["errorCode"] == "NOT_FOUND"
