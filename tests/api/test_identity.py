"""Who am I: the identity URL and OAuth's userinfo, from the session's User record."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.services.auth import ORG_ID
from tests.conftest import API, login

BASE = "https://testserver"
IDENTITY_KEYS = {
    "id", "asserted_user", "user_id", "organization_id", "username", "nick_name",
    "display_name", "email", "email_verified", "first_name", "last_name", "timezone",
    "photos", "addr_street", "addr_city", "addr_state", "addr_country", "addr_zip",
    "mobile_phone", "mobile_phone_verified", "is_lightning_login_user", "status", "urls",
    "active", "user_type", "language", "locale", "utcOffset", "last_modified_date",
    "is_app_installed",
}  # fmt: skip
USERINFO_KEYS = {
    "sub", "user_id", "organization_id", "preferred_username", "nickname", "name", "email",
    "email_verified", "given_name", "family_name", "zoneinfo", "photos", "profile", "picture",
    "address", "is_salesforce_integration_user", "urls", "active", "user_type", "language",
    "locale", "utcOffset", "updated_at", "is_app_installed",
}  # fmt: skip
URL_KEYS = {
    "enterprise", "metadata", "partner", "rest", "sobjects", "search", "query", "recent",
    "tooling_soap", "tooling_rest", "profile", "feeds", "groups", "users", "feed_items",
    "feed_elements", "custom_domain",
}  # fmt: skip


@pytest.fixture(scope="module")
def token(client: TestClient) -> str:
    return login(client)


def user_record(client: TestClient, token: str, user_id: str) -> dict[str, Any]:
    response = client.get(
        f"{API}/sobjects/User/{user_id}", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200
    return dict(response.json())


def identity_url(client: TestClient) -> str:
    response = client.post(
        "/services/oauth2/token",
        data={"grant_type": "password", "username": "agent@example.com", "password": "x"},
    )
    return str(response.json()["id"])


def test_the_identity_url_describes_the_user(client: TestClient, token: str) -> None:
    url = identity_url(client)
    response = client.get(url, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == IDENTITY_KEYS
    user = user_record(client, token, body["user_id"])
    assert body["id"] == url
    assert (body["organization_id"], body["username"]) == (ORG_ID, "agent@example.com")
    assert body["display_name"] == user["Name"]
    assert (body["first_name"], body["last_name"]) == (user["FirstName"], user["LastName"])
    assert body["email"] == user["Email"]
    assert body["timezone"] == user["TimeZoneSidKey"] == "America/Los_Angeles"
    assert body["utcOffset"] in (-8 * 3600_000, -7 * 3600_000)  # standard or daylight time
    assert body["last_modified_date"] == user["LastModifiedDate"]
    assert (body["active"], body["user_type"], body["locale"]) == (True, "STANDARD", "en_US")
    assert set(body["urls"]) == URL_KEYS
    assert body["urls"]["rest"] == f"{BASE}/services/data/v{{version}}/"
    assert body["urls"]["partner"] == f"{BASE}/services/Soap/u/{{version}}/{ORG_ID}"
    assert set(body["photos"]) == {"picture", "thumbnail"}


def test_userinfo_says_the_same_in_openid_terms(client: TestClient, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    identity = client.get(identity_url(client), headers=headers).json()
    response = client.get("/services/oauth2/userinfo", headers=headers)
    assert response.status_code == 200
    info = response.json()
    assert set(info) == USERINFO_KEYS
    assert info["sub"] == identity["id"]
    assert info["preferred_username"] == identity["username"]
    assert (info["given_name"], info["family_name"]) == (
        identity["first_name"],
        identity["last_name"],
    )
    assert (info["name"], info["email"]) == (identity["display_name"], identity["email"])
    assert info["zoneinfo"] == identity["timezone"]
    assert info["urls"] == identity["urls"]
    assert info["address"] == {}  # the seeded user has no address
    assert info["updated_at"].endswith("Z")


def test_the_token_may_come_as_a_parameter_and_the_version_is_written_in(
    client: TestClient, token: str
) -> None:
    """jsforce asks `?format=json&oauth_token=...`; `version` fills the URLs' {version}."""
    url = identity_url(client)
    for path in (url, "/services/oauth2/userinfo"):
        response = client.get(path, params={"oauth_token": token, "version": "62.0"})
        assert response.status_code == 200, path
        assert response.json()["urls"]["sobjects"] == f"{BASE}/services/data/v62.0/sobjects/"


def test_a_bad_token_is_refused_in_plain_text(client: TestClient, token: str) -> None:
    url = identity_url(client)
    for path in (url, "/services/oauth2/userinfo"):
        missing = client.get(path)
        assert (missing.status_code, missing.text) == (403, "Missing_OAuth_Token")
        bad = client.get(path, headers={"Authorization": "Bearer 00Dnope!nope"})
        assert (bad.status_code, bad.text) == (403, "Bad_OAuth_Token")
        assert bad.headers["content-type"].startswith("text/plain")
    org_id, user_id = url.rsplit("/", 2)[-2:]
    headers = {"Authorization": f"Bearer {token}"}
    # Another user's identity, or another org's, is not this token's to read.
    for path in (f"/id/{org_id}/005000000000001AAA", f"/id/00D000000000001AAA/{user_id}"):
        other = client.get(path, headers=headers)
        assert (other.status_code, other.text) == (403, "Bad_Id")
    # The 15-character ids name the same user.
    short = client.get(f"/id/{org_id[:15]}/{user_id[:15]}", headers=headers)
    assert short.status_code == 200


def test_a_path_with_repeated_slashes_is_served(client: TestClient, token: str) -> None:
    """Clients join an instance URL ending in `/` to an absolute path (the Salesforce CLI
    sends `//services/data/...`)."""
    headers = {"Authorization": f"Bearer {token}"}
    for path in ("//services/data", f"/{API}/sobjects//Account/describe"):
        response = client.get(BASE + path, headers=headers)
        assert response.status_code == 200, path
