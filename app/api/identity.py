"""Who am I: the identity URL (`/id/{org}/{user}`, from a token response's `id`) and OAuth's
OpenID `userinfo`. Both take the token from the Authorization header or an `oauth_token`
parameter, and refuse a bad one as Salesforce's identity service does: 403 in plain text."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response
from fastapi.responses import PlainTextResponse

from app.api.deps import bearer_token, sandbox_of, session_for
from app.api.openapi import parameter, query_parameters
from app.api.routing import SalesforceJSONResponse, SalesforceRouter, public_base_url
from app.api.threads import run_in_request_thread
from app.errors import InvalidSession
from app.sandbox.model import Sandbox
from app.services.auth import ORG_ID, Session
from app.services.identity import UserFacts, identity_document, read_user, userinfo_document

router = SalesforceRouter()
TOKEN_PARAMETERS = query_parameters(
    parameter("oauth_token", "The access token, when no Authorization header carries it"),
    parameter("version", "An API version to write into the `urls` in place of {version}"),
)
FORBIDDEN: dict[int | str, dict[str, Any]] = {
    403: {
        "description": "The token is missing or bad, or the id is not the token's user",
        "content": {
            "text/plain": {
                "schema": {
                    "type": "string",
                    "enum": ["Missing_OAuth_Token", "Bad_OAuth_Token", "Bad_Id"],
                }
            }
        },
    }
}


def _forbidden(reason: str) -> Response:
    return PlainTextResponse(reason, status_code=403)


def _read_facts(sandbox: Sandbox, session: Session, base_url: str) -> UserFacts:
    with sandbox.engine.connect() as conn:
        fields = read_user(conn, sandbox.schema.tables, session.user_id)
    return UserFacts(session=session, base_url=base_url, fields=fields, now=sandbox.clock.now())


async def _user(request: Request) -> UserFacts | Response:
    token = bearer_token(request) or request.query_params.get("oauth_token")
    if not token:
        return _forbidden("Missing_OAuth_Token")
    try:
        session = await session_for(request, token)
        sandbox = await sandbox_of(request)
    except InvalidSession:
        return _forbidden("Bad_OAuth_Token")
    return await run_in_request_thread(_read_facts, sandbox, session, public_base_url(request))


def _answer(request: Request, document: dict[str, Any]) -> Response:
    version = request.query_params.get("version")
    if version:  # the identity service writes the asked-for version into its URLs
        urls = document["urls"]
        document["urls"] = {key: url.replace("{version}", version) for key, url in urls.items()}
    return SalesforceJSONResponse(document)


@router.get("/id/{org_id}/{user_id}", responses=FORBIDDEN, openapi_extra=TOKEN_PARAMETERS)
async def identity(org_id: str, user_id: str, request: Request) -> Response:
    user = await _user(request)
    if isinstance(user, Response):
        return user
    if org_id not in (ORG_ID, ORG_ID[:15]) or user_id[:15] != user.session.user_id[:15]:
        return _forbidden("Bad_Id")
    return _answer(request, identity_document(user))


@router.get("/services/oauth2/userinfo", responses=FORBIDDEN, openapi_extra=TOKEN_PARAMETERS)
async def userinfo(request: Request) -> Response:
    user = await _user(request)
    if isinstance(user, Response):
        return user
    return _answer(request, userinfo_document(user))
