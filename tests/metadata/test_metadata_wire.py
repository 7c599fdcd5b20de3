"""The Metadata API's XML as the agents' tools and the reference agent write and read it."""

from __future__ import annotations

from typing import Any

import pytest

from app.metadata.metadata_wire import (
    InvalidElementName,
    MetadataFault,
    components_body,
    envelope,
    read_body,
    read_records,
    results,
)

ENVELOPE = (
    '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xmlns="http://soap.sforce.com/2006/04/metadata"><soapenv:Body>{}</soapenv:Body>'
    "</soapenv:Envelope>"
)


def test_a_call_names_its_session_operation_and_components() -> None:
    body = components_body(
        "CustomField",
        [{"fullName": "Case.A__c", "label": "A & B", "required": True, "valueSet": None}],
    )
    assert body == (
        '<metadata xsi:type="CustomField"><fullName>Case.A__c</fullName>'
        "<label>A &amp; B</label><required>true</required></metadata>"
    )
    assert read_body("CustomField", ["Case.A__c", "Case.B__c"]) == (
        "<type>CustomField</type><fullNames>Case.A__c</fullNames><fullNames>Case.B__c</fullNames>"
    )
    call = envelope("00D<token>", "createMetadata", body).decode()
    assert "<SessionHeader><sessionId>00D&lt;token&gt;</sessionId></SessionHeader>" in call
    assert f"<createMetadata>{body}</createMetadata>" in call


@pytest.mark.parametrize("name", ["a><b", "1st", "", "a b", "x:y"])
def test_an_element_name_that_would_write_other_xml_is_refused(name: str) -> None:
    with pytest.raises(InvalidElementName) as refused:
        components_body("CustomField", [{name: "x"}])
    assert str(refused.value) == f"{name!r} is not the name of a metadata element"


@pytest.mark.parametrize(
    ("response", "found"),
    [
        (
            '<readMetadataResponse><result><records xsi:type="CustomField"><fullName>Case.A__c'
            "</fullName><valueSet><value><fullName>x</fullName></value><value><fullName>y"
            '</fullName></value></valueSet></records><records xsi:nil="true"/></result>'
            "</readMetadataResponse>",
            [
                {
                    "fullName": "Case.A__c",
                    "valueSet": {"value": [{"fullName": "x"}, {"fullName": "y"}]},
                },
                None,
            ],
        ),
        (
            '<readMetadataResponse><result><records xsi:type="CustomField"><fullName>Case.A__c'
            "</fullName></records></result></readMetadataResponse>",
            [{"fullName": "Case.A__c"}],
        ),
        ("<readMetadataResponse><result/></readMetadataResponse>", []),
    ],
)
def test_read_records_are_in_the_order_named(response: str, found: list[Any]) -> None:
    assert read_records(results(ENVELOPE.format(response))) == found


def test_a_fault_is_raised_with_its_code() -> None:
    fault = (
        "<soapenv:Fault><faultcode>sf:INVALID_SESSION_ID</faultcode><faultstring>Invalid "
        "Session ID found in SessionHeader</faultstring></soapenv:Fault>"
    )
    with pytest.raises(MetadataFault) as raised:
        results(ENVELOPE.format(fault))
    assert (raised.value.code, raised.value.message) == (
        "INVALID_SESSION_ID",
        "Invalid Session ID found in SessionHeader",
    )
