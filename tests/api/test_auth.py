"""OAuth and SOAP login, in the default open mode and in strict mode."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from xml.dom import minidom
from xml.sax.saxutils import escape

import httpx2
import pytest
from fastapi.testclient import TestClient

from tests.conftest import API, open_client
from tests.databases import DatabaseFactory

SOAP_LOGIN = """<?xml version="1.0" encoding="utf-8" ?>
<env:Envelope xmlns:xsd="http://www.w3.org/2001/XMLSchema"
    xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xmlns:env="http://schemas.xmlsoap.org/soap/envelope/"
    xmlns:urn="urn:partner.soap.sforce.com">
  <env:Header><urn:CallOptions><urn:client>simple-salesforce</urn:client></urn:CallOptions></env:Header>
  <env:Body><n1:login xmlns:n1="urn:partner.soap.sforce.com">
    <n1:username>{username}</n1:username><n1:password>{password}</n1:password>
  </n1:login></env:Body>
</env:Envelope>"""
TOKEN = re.compile(r"^(00D\w{12,15})![.\w]*$")  # what @salesforce/core accepts as a token


def soap_login(
    client: TestClient, username: str, password: str, version: str = "59.0"
) -> httpx2.Response:
    response: httpx2.Response = client.post(
        f"/services/Soap/u/{version}",
        content=SOAP_LOGIN.format(username=escape(username), password=escape(password)),
        headers={"Content-Type": "text/xml; charset=UTF-8", "SOAPAction": "login"},
    )
    return response


def tag(document: minidom.Document, name: str) -> str:
    node = document.getElementsByTagName(name)[0].firstChild
    return node.nodeValue if node is not None else ""  # type: ignore[return-value]


def test_oauth_password_grant(client: TestClient) -> None:
    response = client.post(
        "/services/oauth2/token/",
        data={
            "grant_type": "password",
            "username": "any@one.com",
            "password": "pw",
            "client_id": "x",
        },
        headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": "org.example.com:8443"},
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "access_token",
        "instance_url",
        "id",
        "token_type",
        "issued_at",
        "signature",
        "scope",
    }
    assert TOKEN.match(body["access_token"])
    assert body["instance_url"] == "https://org.example.com:8443"
    assert re.fullmatch(r"https://org\.example\.com:8443/id/00D\w{15}/005\w{15}", body["id"])
    assert body["token_type"] == "Bearer"
    assert body["issued_at"].isdigit()
    works = client.get(
        f"{API}/sobjects", headers={"Authorization": f"Bearer {body['access_token']}"}
    )
    assert works.status_code == 200
    legacy = client.get(
        f"{API}/sobjects", headers={"Authorization": f"OAuth {body['access_token']}"}
    )
    assert legacy.status_code == 200


def test_oauth_client_credentials_with_basic_auth(client: TestClient) -> None:
    basic = base64.b64encode(b"key:secret").decode()
    response = client.post(
        "/services/oauth2/token",
        data={"grant_type": "client_credentials"},
        headers={"Authorization": f"Basic {basic}"},
    )
    assert response.status_code == 200
    assert TOKEN.match(response.json()["access_token"])


def test_oauth_unsupported_grant(client: TestClient) -> None:
    for data in ({"grant_type": "magic"}, {}):
        response = client.post("/services/oauth2/token", data=data)
        assert response.status_code == 400
        assert response.json() == {
            "error": "unsupported_grant_type",
            "error_description": "grant type not supported",
        }


def test_soap_login_returns_a_working_session(client: TestClient) -> None:
    response = soap_login(client, "agent@example.com", "secret&token")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/xml")
    document = minidom.parseString(response.text)
    session_id = tag(document, "sessionId")
    assert TOKEN.match(session_id)
    assert tag(document, "serverUrl").startswith("https://testserver/services/Soap/u/59.0/00D")
    assert tag(document, "passwordExpired") == "false"
    assert tag(document, "userId").startswith("005")
    assert tag(document, "organizationId").startswith("00D")
    works = client.get(f"{API}/limits", headers={"Authorization": f"Bearer {session_id}"})
    assert works.status_code == 200


def test_soap_login_rejects_garbage_with_a_fault(client: TestClient) -> None:
    response = client.post(
        "/services/Soap/u/59.0", content=b"<not xml", headers={"SOAPAction": "login"}
    )
    assert response.status_code == 500
    document = minidom.parseString(response.text)
    assert tag(document, "sf:exceptionCode") == "INVALID_LOGIN"


def test_revoked_token_stops_working(client: TestClient) -> None:
    token = client.post(
        "/services/oauth2/token", data={"grant_type": "password", "username": "a", "password": "b"}
    ).json()["access_token"]
    assert client.post("/services/oauth2/revoke", data={"token": token}).status_code == 200
    response = client.get(f"{API}/sobjects", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401


INVALID_TOKEN = {"error": "invalid_token", "error_description": "invalid token"}


@pytest.mark.parametrize("form", [{"token": "nope"}, {}, {"token": ""}])
def test_revoking_what_is_not_a_live_session_is_invalid_token(
    client: TestClient, form: dict[str, str]
) -> None:
    response = client.post("/services/oauth2/revoke", data=form)
    assert response.status_code == 400
    assert response.json() == INVALID_TOKEN


def test_a_token_is_revoked_once_and_by_the_blind_get_too(client: TestClient) -> None:
    token = client.post(
        "/services/oauth2/token", data={"grant_type": "password", "username": "a", "password": "b"}
    ).json()["access_token"]
    first = client.get("/services/oauth2/revoke", params={"token": token})
    assert first.status_code == 200 and first.content == b""
    again = client.get("/services/oauth2/revoke", params={"token": token})
    assert again.status_code == 400 and again.json() == INVALID_TOKEN
    response = client.get(f"{API}/sobjects", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401


@pytest.fixture(scope="module")
def strict_client(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[TestClient]:
    yield from open_client(
        database_factory,
        seeded_template,
        username="admin@localforce.test",
        password="s3cret",
        security_token="TOKEN",
    )


def test_strict_login_accepts_only_the_configured_user(strict_client: TestClient) -> None:
    ok = strict_client.post(
        "/services/oauth2/token",
        data={
            "grant_type": "password",
            "username": "Admin@localforce.test",
            "password": "s3cretTOKEN",
        },
    )
    assert ok.status_code == 200
    bad = strict_client.post(
        "/services/oauth2/token",
        data={"grant_type": "password", "username": "admin@localforce.test", "password": "wrong"},
    )
    assert bad.status_code == 400
    assert bad.json() == {"error": "invalid_grant", "error_description": "authentication failure"}
    basic = base64.b64encode(b"someone:else").decode()
    bad_client = strict_client.post(
        "/services/oauth2/token",
        data={"grant_type": "client_credentials"},
        headers={"Authorization": f"Basic {basic}"},
    )
    assert bad_client.status_code == 400
    assert bad_client.json() == {
        "error": "invalid_client",
        "error_description": "invalid client credentials",
    }


def test_strict_soap_login_fault(strict_client: TestClient) -> None:
    response = soap_login(strict_client, "admin@localforce.test", "nope")
    assert response.status_code == 500
    document = minidom.parseString(response.text)
    assert tag(document, "faultcode") == "sf:INVALID_LOGIN"
    assert tag(document, "sf:exceptionCode") == "INVALID_LOGIN"
    assert tag(document, "sf:exceptionMessage") == (
        "Invalid username, password, security token; or user locked out."
    )
    assert soap_login(strict_client, "admin@localforce.test", "s3cretTOKEN").status_code == 200


@pytest.mark.parametrize("password", ["s3cret", "s3cretTOKENx", "s3cretXOKEN", "s3cretTOKEN "])
def test_strict_login_checks_the_security_token_exactly(
    strict_client: TestClient, password: str
) -> None:
    response = strict_client.post(
        "/services/oauth2/token",
        data={"grant_type": "password", "username": "admin@localforce.test", "password": password},
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_grant",
        "error_description": "authentication failure",
    }
    assert soap_login(strict_client, "admin@localforce.test", password).status_code == 500


def test_strict_login_without_a_token_takes_the_password_alone(
    database_factory: DatabaseFactory, seeded_template: str
) -> None:
    for client in open_client(
        database_factory, seeded_template, username="admin@localforce.test", password="s3cret"
    ):
        for password, status in (("s3cret", 200), ("s3cretANYTHING", 400), ("s3cre", 400)):
            form = {"grant_type": "password", "username": "admin@localforce.test"}
            response = client.post("/services/oauth2/token", data={**form, "password": password})
            assert response.status_code == status, password


@pytest.mark.parametrize(
    ("inside_login", "element"),
    [
        (
            "<n1:username>a@example.com</n1:username><n1:username>b@example.com</n1:username>"
            "<n1:password>x</n1:password>",
            "username",
        ),
        (
            "<n1:username>a@example.com</n1:username><n1:password>x</n1:password>"
            "<n1:password>y</n1:password>",
            "password",
        ),
        ("<n1:password>x</n1:password><n1:username>a@example.com</n1:username>", "password"),
        (
            "<n1:username>a@example.com</n1:username><n1:orgId>00D</n1:orgId>"
            "<n1:password>x</n1:password>",
            "orgId",
        ),
    ],
)
def test_a_login_with_unexpected_elements_is_a_client_fault(
    client: TestClient, inside_login: str, element: str
) -> None:
    envelope = SOAP_LOGIN.replace(
        "<n1:username>{username}</n1:username><n1:password>{password}</n1:password>",
        inside_login,
    )
    response = client.post(
        "/services/Soap/u/59.0", content=envelope, headers={"SOAPAction": "login"}
    )
    assert response.status_code == 500
    document = minidom.parseString(response.text)
    assert tag(document, "faultcode") == "soapenv:Client"
    assert tag(document, "faultstring") == (
        f"Element {{urn:partner.soap.sforce.com}}{element} invalid at this location"
    )
