"""The SOAP APIs beyond login: the partner API's calls, and the faults of everything else."""

from __future__ import annotations

from xml.etree.ElementTree import Element

import pytest
from defusedxml import ElementTree
from fastapi.testclient import TestClient

from tests.api.test_auth import soap_login
from tests.conftest import API

PARTNER = "/services/Soap/u/59.0"
NS = {
    "env": "http://schemas.xmlsoap.org/soap/envelope/",
    "p": "urn:partner.soap.sforce.com",
    "sf": "urn:sobject.partner.soap.sforce.com",
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
}
NIL = f"{{{NS['xsi']}}}nil"


def envelope(session_id: str, body: str, headers: str = "") -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?>'
        f'<env:Envelope xmlns:env="{NS["env"]}"><env:Header>'
        f'<SessionHeader xmlns="{NS["p"]}"><sessionId>{session_id}</sessionId></SessionHeader>'
        f"{headers}</env:Header><env:Body>{body}</env:Body></env:Envelope>"
    )


def call(
    client: TestClient, session_id: str, body: str, *, path: str = PARTNER, headers: str = ""
) -> tuple[int, Element]:
    response = client.post(
        path,
        content=envelope(session_id, body, headers),
        headers={"Content-Type": "text/xml; charset=UTF-8", "SOAPAction": '""'},
    )
    assert response.headers["content-type"].startswith("text/xml")
    return response.status_code, ElementTree.fromstring(response.content)


def fault(root: Element) -> tuple[str, str, str]:
    """(faultcode, exceptionCode, the detail's type) of a fault."""
    found = root.find("env:Body/env:Fault", NS)
    assert found is not None
    detail = found.find("detail")
    typed = None if detail is None else next(iter(detail), None)
    code = "" if typed is None else typed.findtext("{*}exceptionCode", "")
    kind = "" if typed is None else typed.tag.rsplit("}", 1)[-1]
    return found.findtext("faultcode", ""), code, kind


@pytest.fixture(scope="module")
def session_id(client: TestClient) -> str:
    response = soap_login(client, "agent@example.com", "x")
    root = ElementTree.fromstring(response.content)
    return str(root.findtext(".//p:sessionId", namespaces=NS))


def result_of(root: Element, operation: str) -> Element:
    found = root.find(f"env:Body/p:{operation}Response/p:result", NS)
    assert found is not None
    return found


def test_get_user_info_and_server_timestamp(client: TestClient, session_id: str) -> None:
    status, root = call(client, session_id, f'<getUserInfo xmlns="{NS["p"]}"/>')
    assert status == 200
    info = result_of(root, "getUserInfo")
    assert info.findtext("p:userName", namespaces=NS) == "agent@example.com"
    assert info.findtext("p:userId", namespaces=NS, default="").startswith("005")
    assert info.findtext("p:organizationId", namespaces=NS, default="").startswith("00D")
    status, root = call(client, session_id, f'<getServerTimestamp xmlns="{NS["p"]}"/>')
    assert status == 200
    stamp = result_of(root, "getServerTimestamp").findtext("p:timestamp", namespaces=NS)
    assert stamp is not None and len(stamp) == 24 and stamp.endswith("Z")


def test_query_writes_partner_records(client: TestClient, session_id: str) -> None:
    soql = (
        "SELECT Id, Name, Phone, Owner.Name, (SELECT LastName FROM Contacts) FROM Account"
        " ORDER BY Name LIMIT 2"
    )
    rest = client.get(
        f"{API}/query", params={"q": soql}, headers={"Authorization": f"Bearer {session_id}"}
    ).json()
    # Through the org-id form of the endpoint, as serverUrl gives it.
    org = session_id.split("!")[0]
    status, root = call(
        client,
        session_id,
        f'<query xmlns="{NS["p"]}"><queryString>{soql}</queryString></query>',
        path=f"{PARTNER}/{org}",
    )
    assert status == 200
    result = result_of(root, "query")
    assert result.findtext("p:done", namespaces=NS) == "true"
    assert result.find("p:queryLocator", NS).get(NIL) == "true"  # type: ignore[union-attr]
    assert result.findtext("p:size", namespaces=NS) == "2"
    records = result.findall("p:records", NS)
    assert len(records) == 2
    for record, expected in zip(records, rest["records"], strict=True):
        tags = [child.tag.rsplit("}", 1)[-1] for child in record]
        # type, the Id, then the selected fields in order (the Id again among them)
        assert tags == ["type", "Id", "Id", "Name", "Phone", "Owner", "Contacts"]
        assert record.findtext("sf:type", namespaces=NS) == "Account"
        assert record.findtext("sf:Id", namespaces=NS) == expected["Id"]
        assert record.findtext("sf:Name", namespaces=NS) == expected["Name"]
        phone = record.find("sf:Phone", NS)
        assert phone is not None
        assert (phone.text, phone.get(NIL)) in ((expected["Phone"], None), (None, "true"))
        owner = record.find("sf:Owner", NS)
        assert owner is not None
        assert owner.findtext("sf:type", namespaces=NS) == "User"
        assert owner.find("sf:Id", NS).get(NIL) == "true"  # type: ignore[union-attr]
        assert owner.findtext("sf:Name", namespaces=NS) == expected["Owner"]["Name"]
        contacts = record.find("sf:Contacts", NS)
        assert contacts is not None
        assert contacts.get(f"{{{NS['xsi']}}}type") == "QueryResult"
        names = [
            c.findtext("sf:LastName", namespaces=NS) for c in contacts.findall("p:records", NS)
        ]
        assert names == [c["LastName"] for c in expected["Contacts"]["records"]]


def test_query_more_pages_by_locator(client: TestClient, session_id: str) -> None:
    options = f'<QueryOptions xmlns="{NS["p"]}"><batchSize>200</batchSize></QueryOptions>'
    body = f'<query xmlns="{NS["p"]}"><queryString>SELECT Id FROM Case</queryString></query>'
    status, root = call(client, session_id, body, headers=options)
    assert status == 200
    result = result_of(root, "query")
    total = int(result.findtext("p:size", namespaces=NS, default="0"))
    assert total > 400 and result.findtext("p:done", namespaces=NS) == "false"
    seen = [r.findtext("sf:Id", namespaces=NS) for r in result.findall("p:records", NS)]
    assert len(seen) == 200
    locator = result.findtext("p:queryLocator", namespaces=NS)
    while locator:
        more = f'<queryMore xmlns="{NS["p"]}"><queryLocator>{locator}</queryLocator></queryMore>'
        status, root = call(client, session_id, more)
        assert status == 200
        result = result_of(root, "queryMore")
        seen += [r.findtext("sf:Id", namespaces=NS) for r in result.findall("p:records", NS)]
        locator = result.findtext("p:queryLocator", namespaces=NS)
    assert result.findtext("p:done", namespaces=NS) == "true"
    assert len(seen) == len(set(seen)) == total


@pytest.mark.parametrize(
    ("body", "faultcode", "code", "kind"),
    [
        (
            "<query xmlns='urn:partner.soap.sforce.com'><queryString>SELECT Nope FROM Case"
            "</queryString></query>",
            "sf:INVALID_FIELD",
            "INVALID_FIELD",
            "InvalidFieldFault",
        ),
        (
            "<query xmlns='urn:partner.soap.sforce.com'><queryString>SELECT Id FROM Nope"
            "</queryString></query>",
            "sf:INVALID_TYPE",
            "INVALID_TYPE",
            "InvalidSObjectFault",
        ),
        (
            "<queryMore xmlns='urn:partner.soap.sforce.com'><queryLocator>01gNOPE-200"
            "</queryLocator></queryMore>",
            "sf:INVALID_QUERY_LOCATOR",
            "INVALID_QUERY_LOCATOR",
            "InvalidQueryLocatorFault",
        ),
        (
            "<describeTabs xmlns='urn:partner.soap.sforce.com'/>",
            "sf:FUNCTIONALITY_NOT_ENABLED",
            "FUNCTIONALITY_NOT_ENABLED",
            "UnexpectedErrorFault",
        ),
        (
            "<undelete xmlns='urn:partner.soap.sforce.com'><ids>001000000000000</ids></undelete>",
            "sf:FUNCTIONALITY_NOT_ENABLED",
            "FUNCTIONALITY_NOT_ENABLED",
            "UnexpectedErrorFault",
        ),
    ],
    ids=["bad-field", "bad-type", "bad-locator", "describeTabs", "undelete"],
)
def test_faults_name_the_problem(
    client: TestClient, session_id: str, body: str, faultcode: str, code: str, kind: str
) -> None:
    status, root = call(client, session_id, body)
    assert status == 500
    assert fault(root) == (faultcode, code, kind)


def test_a_call_no_wsdl_has_is_a_client_fault(client: TestClient, session_id: str) -> None:
    status, root = call(client, session_id, f'<fooBar xmlns="{NS["p"]}"/>')
    assert status == 500
    assert fault(root) == ("soapenv:Client", "", "")
    assert root.findtext(".//faultstring") == (
        "No operation available for request {urn:partner.soap.sforce.com}fooBar, please check "
        "the WSDL for the service."
    )


@pytest.mark.parametrize(
    ("path", "body", "api"),
    [
        (PARTNER, f'<getUserInfo xmlns="{NS["p"]}"/>', None),
        (PARTNER, f'<describeTabs xmlns="{NS["p"]}"/>', None),
        ("/services/Soap/m/59.0", "<deploy/>", "the deploy() call of the Metadata API"),
        ("/services/Soap/T/59.0", "<query/>", "the Tooling SOAP API"),
        ("/services/Soap/s/59.0", "<executeAnonymous/>", "the Apex SOAP API"),
        ("/services/Soap/class/MyService", "<go/>", "Apex web services"),
    ],
)
def test_a_bad_session_is_told_first_and_unbuilt_apis_name_themselves(
    client: TestClient, session_id: str, path: str, body: str, api: str | None
) -> None:
    status, root = call(client, "00Dnope!nope", body, path=path)
    assert status == 500
    assert fault(root) == ("sf:INVALID_SESSION_ID", "INVALID_SESSION_ID", "UnexpectedErrorFault")
    assert root.findtext(".//faultstring") == (
        "INVALID_SESSION_ID: Invalid Session ID found in SessionHeader: Illegal Session"
    )
    if api is not None:
        status, root = call(client, session_id, body, path=path)
        assert status == 500
        assert fault(root)[1] == "FUNCTIONALITY_NOT_ENABLED"
        assert api in str(root.findtext(".//faultstring"))


def test_the_enterprise_api_answers_session_calls_but_names_its_queries(
    client: TestClient, session_id: str
) -> None:
    enterprise = "/services/Soap/c/59.0"
    status, root = call(
        client, session_id, "<getUserInfo xmlns='urn:enterprise.soap.sforce.com'/>", path=enterprise
    )
    assert status == 200
    status, root = call(
        client,
        session_id,
        "<query xmlns='urn:enterprise.soap.sforce.com'><queryString>SELECT Id FROM Case"
        "</queryString></query>",
        path=enterprise,
    )
    assert status == 500
    assert fault(root)[1] == "FUNCTIONALITY_NOT_ENABLED"
    assert "query() call of the enterprise SOAP API" in str(root.findtext(".//faultstring"))


def test_logout_ends_the_session_everywhere(client: TestClient) -> None:
    response = soap_login(client, "agent@example.com", "x")
    token = str(ElementTree.fromstring(response.content).findtext(".//p:sessionId", namespaces=NS))
    status, root = call(client, token, f'<logout xmlns="{NS["p"]}"/>')
    assert status == 200
    assert root.find("env:Body/p:logoutResponse", NS) is not None
    status, root = call(client, token, f'<getUserInfo xmlns="{NS["p"]}"/>')
    assert (status, fault(root)[1]) == (500, "INVALID_SESSION_ID")
    rest = client.get(f"{API}/limits", headers={"Authorization": f"Bearer {token}"})
    assert rest.status_code == 401
