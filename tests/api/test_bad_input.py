"""Bad input of every kind, at every route: always a Salesforce-format error, never a 500."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.storage.ids import make_id
from tests.conftest import API

GOOD_ACCOUNT = make_id("001", 1)
VERSIONS = ["v59.0", "v59", "vX.0", "v1000.0"]
SOBJECTS = ["Account", "Nope", "Account__x", "Case'--"]
RECORD_IDS = [GOOD_ACCOUNT, "xyz", "0" * 18, "001Lf0000zzzzzz", GOOD_ACCOUNT.lower()]
BODIES: list[bytes] = [
    b"",
    b"{",
    b"[]",
    b"null",
    b'"text"',
    b"\xff\xfe\x00",
    b'{"Name": {"nested": 1}}',
    b'{"Name": [1, 2]}',
    b'{"Foo__c": 1}',
    json.dumps({"Name": "x" * 70000}).encode(),
    b'{"OwnerId": "not-an-id"}',
    b'{"OwnerId": "001Lf0000000001AAA"}',
    b'{"CreatedDate": "2020-01-01"}',
    b'{"Name": "ok", "ShippingState": 12345678901234567890123456789012345678901234567890}',
    b'{"Name": "ok", "attributes": {"type": "Account"}}',
    b'{"Name": NaN}',
    b'{"Quantity": 1e400}',
    b'{"VersionNumber": 99999999999999999999999}',
    b'{"UnitPrice": -1e300}',
]
ROUTES = [
    ("GET", "/services/data/{version}"),
    ("GET", "/services/data/{version}/limits"),
    ("GET", "/services/data/{version}/limits/recordCount?sObjects={sobject}"),
    ("GET", "/services/data/{version}/sobjects"),
    ("GET", "/services/data/{version}/sobjects/{sobject}"),
    ("POST", "/services/data/{version}/sobjects/{sobject}"),
    ("GET", "/services/data/{version}/sobjects/{sobject}/describe"),
    ("GET", "/services/data/{version}/sobjects/{sobject}/{record_id}"),
    ("GET", "/services/data/{version}/sobjects/{sobject}/{record_id}?fields=Name,Bogus"),
    ("PATCH", "/services/data/{version}/sobjects/{sobject}/{record_id}"),
    ("DELETE", "/services/data/{version}/sobjects/{sobject}/{record_id}"),
    ("PUT", "/services/data/{version}/sobjects/{sobject}/{record_id}"),
]


def assert_salesforce_error(response: Any) -> None:
    assert response.status_code < 500 or response.status_code == 501, response.text
    assert response.headers["content-type"] == "application/json;charset=UTF-8"
    body = response.json()
    assert isinstance(body, list) and body, body
    for item in body:
        assert isinstance(item["message"], str) and item["message"]
        assert isinstance(item["errorCode"], str) and item["errorCode"].isupper()


@pytest.mark.parametrize(("method", "template"), ROUTES)
def test_every_route_answers_bad_input_with_salesforce_errors(
    api: TestClient, method: str, template: str
) -> None:
    with_body = method in {"POST", "PATCH", "PUT"}
    combos = itertools.product(VERSIONS, SOBJECTS, RECORD_IDS, BODIES if with_body else [b""])
    for version, sobject, record_id, body in combos:
        path = template.format(version=version, sobject=sobject, record_id=record_id)
        if method == "DELETE" and record_id == GOOD_ACCOUNT:
            continue  # deleting the shared record would change what later cases see
        response = api.request(method, path, content=body)
        if response.status_code in (200, 201, 204):
            continue
        assert_salesforce_error(response)


def test_no_route_answers_500_without_a_token(client: TestClient) -> None:
    for method, template in ROUTES:
        path = template.format(version="v59.0", sobject="Account", record_id=GOOD_ACCOUNT)
        response = client.request(method, path, content=b"{", headers={"Authorization": "Bearer x"})
        assert response.status_code in (401, 405), (method, path)
        assert_salesforce_error(response)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=5,
)
FIELD_NAMES = st.sampled_from(
    [
        "Name",
        "LastName",
        "FirstName",
        "Email",
        "Status",
        "Priority",
        "AccountId",
        "OwnerId",
        "ContactId",
        "Quantity",
        "UnitPrice",
        "IsActive",
        "EffectiveDate",
        "ValidFrom",
        "ToIds",
        "CreatedDate",
        "Id",
        "Subject",
        "Field__c",
        "bogus",
    ]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sobject=st.sampled_from(
        ["Account", "Contact", "Case", "OrderItem", "EmailMessage", "Pricebook2", "CaseHistory__c"]
    ),
    body=st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=5),
)
def test_random_bodies_create_or_fail_cleanly(
    api: TestClient, sobject: str, body: dict[str, Any]
) -> None:
    # json.dumps writes NaN and Infinity as bare tokens: the server must reject them cleanly.
    response = api.post(f"{API}/sobjects/{sobject}", content=json.dumps(body))
    if response.status_code == 201:
        created = response.json()
        assert created["success"] is True
        assert api.get(f"{API}/sobjects/{sobject}/{created['id']}").status_code == 200
        return
    assert response.status_code == 400, response.text
    assert_salesforce_error(response)
