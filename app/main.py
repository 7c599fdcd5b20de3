"""The application: create_app() builds the FastAPI app; resources come up in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api import auth, planned, query, sobjects, versions
from app.api.routing import SalesforceJSONResponse
from app.api.state import AppState
from app.config import Settings, get_settings
from app.errors import MethodNotAllowed, NotFound, SalesforceError
from app.metadata.registry import SchemaRegistry
from app.seeding.bootstrap import ensure_database
from app.storage.database import create_db_engine
from app.storage.tables import TableSet


def utc_now() -> datetime:
    """The org clock: UTC, naive, to the second (Salesforce stores milliseconds, always .000)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def org_clock(settings: Settings) -> Callable[[], datetime]:
    """The running clock, or the pinned instant of LOCALFORCE_CLOCK."""
    if settings.clock is None:
        return utc_now
    pinned = settings.clock
    if pinned.tzinfo is not None:
        pinned = pinned.astimezone(UTC).replace(tzinfo=None)
    pinned = pinned.replace(microsecond=0)
    return lambda: pinned


def build_state(settings: Settings) -> AppState:
    registry = SchemaRegistry.from_directory(settings.seed_dir / "orgs" / settings.org / "objects")
    engine = create_db_engine(settings.effective_database_url)
    return AppState(
        settings=settings,
        engine=engine,
        registry=registry,
        tables=TableSet(registry),
        clock=org_clock(settings),
    )


def _error_response(error: SalesforceError) -> SalesforceJSONResponse:
    return SalesforceJSONResponse(error.to_body(), status_code=error.status_code)


async def salesforce_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    assert isinstance(error, SalesforceError)
    return _error_response(error)


METHOD_ORDER = ("HEAD", "GET", "POST", "PATCH", "PUT", "DELETE")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette reports only the first route's)."""
    allowed = []
    for method in METHOD_ORDER:
        probe = {"type": "http", "path": request.url.path, "root_path": "", "method": method}
        if any(route.matches(probe)[0] is Match.FULL for route in request.app.routes):
            allowed.append(method)
    if "GET" in allowed and "HEAD" not in allowed:
        allowed.insert(0, "HEAD")  # Salesforce serves HEAD wherever it serves GET
    return allowed


async def http_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    assert isinstance(error, HTTPException)
    if error.status_code == 405:
        allowed = ",".join(_allowed_methods(request))
        return _error_response(
            MethodNotAllowed(f"HTTP Method '{request.method}' not allowed. Allowed are {allowed}")
        )
    if error.status_code == 404:
        return _error_response(NotFound())
    return _error_response(SalesforceError(str(error.detail), status_code=error.status_code))


async def validation_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    return _error_response(SalesforceError("Bad request", error_code="INVALID_INPUT"))


async def unexpected_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    return _error_response(
        SalesforceError(
            f"An unexpected error occurred: {type(error).__name__}",
            error_code="UNKNOWN_EXCEPTION",
            status_code=500,
        )
    )


class ApiUsageMiddleware:
    """Counts REST API calls and reports them in Sforce-Limit-Info, as Salesforce does."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/services/data/v"):
            await self.app(scope, receive, send)
            return
        self.state.api_requests += 1
        usage = f"api-usage={self.state.api_requests}/15000".encode()

        async def send_with_usage(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"sforce-limit-info", usage)]
            await send(message)

        await self.app(scope, receive, send_with_usage)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    state = build_state(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        ensure_database(state.engine, state.registry, state.tables, settings)
        yield
        state.engine.dispose()

    app = FastAPI(
        title="localforce",
        description="A self-hosted Salesforce org: the REST wire protocol over SQLite/PostgreSQL.",
        lifespan=lifespan,
        redirect_slashes=False,
        default_response_class=SalesforceJSONResponse,
    )
    app.state.localforce = state
    app.add_middleware(ApiUsageMiddleware, state=state)
    app.add_exception_handler(SalesforceError, salesforce_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, unexpected_error)
    for module in (auth, versions, sobjects, query, planned):
        app.include_router(module.router)
    return app
