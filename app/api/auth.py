"""OAuth 2.0 endpoints: token (password, client_credentials) and revoke; the logins they and
SOAP's login (app.api.soap_calls) make."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC
from typing import Any
from urllib.parse import parse_qs

from fastapi import Request, Response

from app.api.deps import RawBodyDep, StateDep
from app.api.openapi import parameter, query_parameters
from app.api.routing import JSON, SalesforceJSONResponse, SalesforceRouter, public_base_url
from app.api.state import AppState
from app.services import auth
from app.services.auth import ORG_ID, Credentials, LoginFailed, Session
from app.tasks.results import answered

router = SalesforceRouter()
SUPPORTED_GRANTS = {"password", "client_credentials"}
FORM = "application/x-www-form-urlencoded"
OAUTH_FAILURE = {
    "description": "OAuth's own error object: unsupported_grant_type, invalid_grant, ...",
    "content": {
        JSON: {
            "schema": {
                "type": "object",
                "required": ["error", "error_description"],
                "properties": {
                    "error": {"type": "string"},
                    "error_description": {"type": "string"},
                },
            }
        }
    },
}
TOKEN_FORM = {
    "required": True,
    "content": {
        FORM: {
            "schema": {
                "type": "object",
                "required": ["grant_type"],
                "properties": {
                    "grant_type": {"type": "string", "enum": sorted(SUPPORTED_GRANTS)},
                    "username": {"type": "string"},
                    "password": {"type": "string"},
                    "client_id": {"type": "string"},
                    "client_secret": {"type": "string"},
                },
            }
        }
    },
}
REVOKE_FORM = {
    "required": True,
    "content": {
        FORM: {
            "schema": {
                "type": "object",
                "required": ["token"],
                "properties": {"token": {"type": "string"}},
            }
        }
    },
}


def _oauth_error(error: str, description: str) -> SalesforceJSONResponse:
    return SalesforceJSONResponse(
        {"error": error, "error_description": description}, status_code=400
    )


def _basic_credentials(request: Request) -> tuple[str, str] | None:
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        client_id, _, secret = base64.b64decode(encoded).decode().partition(":")
    except ValueError:
        return None
    return client_id, secret


def _token_response(base_url: str, session: Session, issued_at: int) -> dict[str, Any]:
    identity = f"{base_url}/id/{ORG_ID}/{session.user_id}"
    signature = hmac.new(
        session.token.encode(), f"{identity}{issued_at}".encode(), hashlib.sha256
    ).digest()
    return {
        "access_token": session.token,
        "instance_url": base_url,
        "id": identity,
        "token_type": "Bearer",
        "issued_at": str(issued_at),
        "signature": base64.b64encode(signature).decode(),
        "scope": "api web full",
    }


def sandbox_login(
    state: AppState,
    *,
    username: str,
    password: str,
    credentials: Credentials | None,
) -> Session:
    """Log in (see app.services.auth.sandbox_login), within this thread-pool call; no one logs
    in to an answered episode's sandbox again."""
    return auth.sandbox_login(
        state.sandboxes,
        state.platform,
        username=username,
        password=password,
        credentials=credentials,
        clock=state.clock,
        closed=answered,
    )


@router.post(
    "/services/oauth2/token",
    responses={400: OAUTH_FAILURE},
    openapi_extra={"requestBody": TOKEN_FORM},
)
def oauth_token(request: Request, raw: RawBodyDep, state: StateDep) -> SalesforceJSONResponse:
    form = {key: values[0] for key, values in parse_qs(raw.decode("utf-8", "replace")).items()}
    grant_type = form.get("grant_type", "")
    if grant_type not in SUPPORTED_GRANTS:
        return _oauth_error("unsupported_grant_type", "grant type not supported")
    now = state.clock()
    credentials = state.credentials
    if grant_type == "password":
        username, password = form.get("username", ""), form.get("password", "")
    else:
        # client_credentials runs as the configured user; in strict mode the client id and
        # secret must be that user's username and password.
        client_id, secret = _basic_credentials(request) or (
            form.get("client_id", ""),
            form.get("client_secret", ""),
        )
        if credentials is not None and not credentials.accept(client_id, secret):
            return _oauth_error("invalid_client", "invalid client credentials")
        username, password, credentials = state.settings.username, "", None
    try:
        session = sandbox_login(
            state, username=username, password=password, credentials=credentials
        )
    except LoginFailed:
        return _oauth_error("invalid_grant", "authentication failure")
    issued_at = int(now.replace(tzinfo=UTC).timestamp() * 1000)
    return SalesforceJSONResponse(_token_response(public_base_url(request), session, issued_at))


REVOKED: dict[int | str, dict[str, Any]] = {
    200: {"description": "Revoked", "content": {}},
    400: OAUTH_FAILURE,
}


def _revoke(tokens: list[str], state: AppState) -> Response:
    """200 when a token named a live session, now ended; Salesforce answers every other case
    (no token, an unknown or already revoked one) with a 400 `invalid_token`."""
    revoked = auth.end_sessions(state.platform, tokens)
    state.sessions.clear()
    if not revoked:
        return _oauth_error("invalid_token", "invalid token")
    return Response(status_code=200)


@router.post(
    "/services/oauth2/revoke",
    response_class=Response,
    responses=REVOKED,
    openapi_extra={"requestBody": REVOKE_FORM},
)
def oauth_revoke(raw: RawBodyDep, state: StateDep) -> Response:
    return _revoke(parse_qs(raw.decode("utf-8", "replace")).get("token", []), state)


@router.get(
    "/services/oauth2/revoke",
    response_class=Response,
    responses=REVOKED,
    openapi_extra=query_parameters(parameter("token", "The token to end", required=True)),
)
def oauth_revoke_get(request: Request, state: StateDep) -> Response:
    """The "blind GET" Salesforce also serves: the token in the query string."""
    return _revoke(request.query_params.getlist("token"), state)
