"""Sessions mean what they say: stored as hashes, ended by inactivity (here on a pinned
clock moved by hand), by revoke, and by a change of the strict credentials."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.api.state import AppState
from app.main import create_app
from app.services.auth import SESSIONS
from tests.api.test_auth import soap_login
from tests.conftest import API, login, make_settings, open_client
from tests.databases import DatabaseFactory

IDLE_SECONDS = 600


@pytest.fixture(scope="module")
def pinned(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[TestClient]:
    yield from open_client(
        database_factory,
        seeded_template,
        clock="2024-06-01T09:00:00Z",
        session_idle_seconds=IDLE_SECONDS,
    )


def state_of(client: TestClient) -> AppState:
    state: AppState = client.app.state.localforce  # type: ignore[attr-defined]
    return state


def move_clock(client: TestClient, seconds: int) -> None:
    state = state_of(client)
    clock = state.sandboxes.default.clock
    assert clock.pinned and clock.start is not None
    clock.start += timedelta(seconds=seconds)
    state.sessions.clear()  # what a second of waiting would do


def works(client: TestClient, token: str) -> int:
    response = client.get(f"{API}/limits", headers={"Authorization": f"Bearer {token}"})
    return int(response.status_code)


def test_the_session_table_holds_hashes_not_tokens(pinned: TestClient) -> None:
    token = login(pinned)
    with state_of(pinned).platform.connect() as conn:
        stored = set(conn.execute(select(SESSIONS.c.token)).scalars())
    assert token not in stored
    assert hashlib.sha256(token.encode()).hexdigest() in stored
    assert works(pinned, token) == 200


def test_a_session_unused_for_the_idle_time_ends(pinned: TestClient) -> None:
    token = login(pinned)
    move_clock(pinned, IDLE_SECONDS - 1)
    assert works(pinned, token) == 200  # used: the idle time counts again from here
    move_clock(pinned, IDLE_SECONDS - 1)
    assert works(pinned, token) == 200
    move_clock(pinned, IDLE_SECONDS)
    assert works(pinned, token) == 401
    move_clock(pinned, -10 * IDLE_SECONDS)  # ended is ended, even if the clock goes back
    assert works(pinned, token) == 401


def test_the_soap_login_says_how_long_a_session_lasts(pinned: TestClient) -> None:
    response = soap_login(pinned, "agent@example.com", "x")
    assert f"<sessionSecondsValid>{IDLE_SECONDS}</sessionSecondsValid>" in response.text


def test_revoke_ends_a_session(pinned: TestClient) -> None:
    token = login(pinned)
    assert pinned.post("/services/oauth2/revoke", data={"token": token}).status_code == 200
    assert works(pinned, token) == 401


def test_changing_the_strict_credentials_ends_the_sessions_they_let_in(
    database_factory: DatabaseFactory, seeded_template: str
) -> None:
    url = database_factory.new_url(template=seeded_template)
    form = {"grant_type": "password", "username": "admin@localforce.test"}

    def server(password: str, token: str = "") -> TestClient:
        username = "admin@localforce.test" if password else ""
        logins = {"username": username, "password": password, "security_token": token}
        settings = make_settings(url, database_factory.workdir, **logins)
        return TestClient(create_app(settings), base_url="https://testserver")

    with server("") as open_mode:
        open_token = login(open_mode)
    with server("first") as first:
        assert works(first, open_token) == 401  # an open server's sessions end under strict
        old = first.post("/services/oauth2/token", data={**form, "password": "first"})
        old_token = old.json()["access_token"]
        assert works(first, old_token) == 200
    with server("first") as same:
        assert works(same, old_token) == 200  # a restart with the same login keeps it
    with server("second") as changed:
        assert works(changed, old_token) == 401
    with server("first", token="TOK") as with_token:
        assert works(with_token, old_token) == 401  # a token added is a change too
