"""simple-salesforce's search calls, unmodified, the way CRMArena's connector makes them."""

from __future__ import annotations

import ast
from typing import Any

import pytest
import requests
from simple_salesforce.api import Salesforce
from simple_salesforce.exceptions import SalesforceMalformedRequest

from tests.clients.test_simple_salesforce import server_port, session

__all__ = ["server_port", "session"]  # fixtures, shared with the client tests


def connect(session: requests.Session) -> Any:
    return Salesforce(
        username="agent@example.com", password="pw", security_token="", session=session
    )


def test_search_and_quick_search(session: requests.Session) -> None:
    sf = connect(session)
    result = sf.search(
        "FIND {football cleats} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"
    )
    names = [record["Name"] for record in result["searchRecords"]]
    assert names and all("Football Cleats" in name for name in names)
    quick = sf.quick_search("Recycling")
    types = {record["attributes"]["type"] for record in quick["searchRecords"]}
    assert "Knowledge__kav" in types


def test_errors_parse_as_the_crmarena_connector_parses_them(session: requests.Session) -> None:
    """run_query does `ast.literal_eval(str(e).split("Response content:")[1])[0]`."""
    sf = connect(session)
    with pytest.raises(SalesforceMalformedRequest) as raised:
        sf.search("FIND rope RETURNING Product2")
    error = ast.literal_eval(str(raised.value).split("Response content:")[1])[0]
    assert error == {
        "message": "No search term found. The search term must be enclosed in braces.",
        "errorCode": "MALFORMED_SEARCH",
    }
