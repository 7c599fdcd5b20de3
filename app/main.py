"""The application: create_app() builds the FastAPI app; resources come up in the lifespan."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from app.admin_key import check_control_plane, with_admin_key
from app.agents.mcp import McpEndpoint, build_mcp
from app.agents.openenv_endpoint import OpenEnvEndpoint
from app.api import (
    auth,
    bulk1,
    bulk2,
    composite,
    control,
    episodes,
    identity,
    openapi,
    planned,
    query,
    search,
    soap_calls,
    soap_metadata,
    sobjects,
    tooling,
    ui,
    versions,
)
from app.api.deps import session_of
from app.api.middleware import (
    ApiCallMiddleware,
    HeadMiddleware,
    PathMiddleware,
)
from app.api.routing import SalesforceJSONResponse, error_response, salesforce_error, serves
from app.api.state import AppState
from app.api.threads import REQUEST_THREADS
from app.config import Settings, get_settings
from app.console import routes as console
from app.errors import InvalidSession, MethodNotAllowed, NotFound, SalesforceError
from app.sandbox.calllog import FLUSH_SECONDS
from app.sandbox.schemas import Schemas
from app.seeding.bootstrap import ensure_database
from app.seeding.loading import ProgressCallback
from app.seeding.pipeline import SeedResult
from app.services import org
from app.serving import set_read_timeouts
from app.soql.function_registry import FUNCTIONS, FunctionRegistry
from app.state import build_state
from app.storage.database import (
    migrate_platform,
    restrict_to_owner,
    write_transaction,
)
from app.storage.text_keys import upgrade_keys
from app.tuning import (
    collect_garbage_forever,
    freeze_startup_objects,
    release_free_memory_forever,
    tune_process,
    unfreeze_objects,
)

logger = logging.getLogger("localforce")


METHOD_ORDER = ("HEAD", "GET", "POST", "PATCH", "PUT", "DELETE")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette reports only the first route's)."""
    allowed = []
    for method in METHOD_ORDER:
        if serves(request.app.routes, request.url.path, method):
            allowed.append(method)
    if "GET" in allowed and "HEAD" not in allowed:
        allowed.insert(0, "HEAD")  # Salesforce serves HEAD wherever it serves GET
    return allowed


async def http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if error.status_code == 405:
        allowed = _allowed_methods(request)
        # RFC 9110: a 405 says what is allowed, and OPTIONS answers with just that.
        allow_header = {"Allow": ", ".join([*allowed, "OPTIONS"])}
        if request.method == "OPTIONS":
            return Response(status_code=200, headers=allow_header)
        listed = ",".join(allowed)
        return error_response(
            MethodNotAllowed(f"HTTP Method '{request.method}' not allowed. Allowed are {listed}"),
            headers=allow_header,
        )
    if error.status_code == 404:
        if await _unauthenticated(request):
            return error_response(InvalidSession())
        return error_response(NotFound())
    return error_response(SalesforceError(str(error.detail), status_code=error.status_code))


# Paths under /services/ that a client calls before it has a session: everything else asks for
# one before it is looked up, so a bad token on a path that does not exist is told so (401), as
# Salesforce answers. OPTIONS carries no session (a browser's preflight), and is answered
# without one.
OPEN_PATHS = ("/services/oauth2/", "/services/Soap/")
OPEN_EXACT = ("/services/data", "/services/data/")


async def _unauthenticated(request: Request) -> bool:
    path = request.url.path
    if request.method == "OPTIONS" or not path.startswith("/services/"):
        return False
    if path in OPEN_EXACT or path.startswith(OPEN_PATHS):
        return False
    try:
        await session_of(request)
    except InvalidSession:
        return True
    return False


async def validation_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    assert isinstance(error, RequestValidationError)
    problems = "; ".join(
        f"{'.'.join(str(part) for part in item.get('loc', ()))}: {item.get('msg', 'invalid')}"
        for item in error.errors()
    )
    return error_response(SalesforceError(f"Bad request: {problems}", error_code="INVALID_INPUT"))


async def unexpected_error(request: Request, error: Exception) -> SalesforceJSONResponse:
    return error_response(
        SalesforceError(
            f"An unexpected error occurred: {type(error).__name__}",
            error_code="UNKNOWN_EXCEPTION",
            status_code=500,
        )
    )


def prepare_databases(
    state: AppState, on_progress: ProgressCallback | None = None, *, reseed: bool = False
) -> SeedResult | None:
    """Bring the server's database (seeding it on first run, or anew with `reseed`) and the
    platform database to the current schema. `serve` does it once before starting workers, so
    they never race at it. A database holding another org is refused before either is written."""
    result = ensure_database(
        state.engine, state.registry, state.tables, state.settings, on_progress, reseed=reseed
    )
    if state.platform is not state.engine:
        migrate_platform(state.platform)
    # Keys of rows another tool wrote (the sqlite3 shell, psql) are put right before serving.
    with write_transaction(state.engine) as conn:
        upgrade_keys(conn)
    state.sandboxes.copies.upgrade_storage(upgrade_keys)
    for engine in {state.engine, state.platform}:  # the sessions' file, and the org's
        restrict_to_owner(engine)
    return result


def flush_state(state: AppState) -> None:
    state.cursors.spill()
    state.calls.flush()
    state.tool_calls.flush()
    if state.usage.due():
        state.usage.flush()


async def flush_forever(state: AppState) -> None:
    """Write the queued call log entries and tool calls, the API usage count and the rows of
    the query locators opened, every FLUSH_SECONDS."""
    while True:
        await asyncio.sleep(FLUSH_SECONDS)
        queued = state.calls.pending() or state.tool_calls.pending()
        if queued or state.usage.due() or state.cursors.spills_due():
            try:
                await run_in_threadpool(flush_state, state)
            except Exception:  # a failed batch must not stop the flusher; the next one retries
                logger.exception("writing the call log and usage count failed")


def create_app(
    settings: Settings | None = None, functions: FunctionRegistry = FUNCTIONS
) -> FastAPI:
    """The application; `functions` are the SOQL functions its queries may call."""
    settings = settings or get_settings()
    check_control_plane(settings)
    tune_process(settings)  # before the request threads start
    set_read_timeouts(settings.header_timeout_seconds, settings.body_timeout_seconds)
    state = build_state(settings)
    state.functions = functions

    # A lifespan starts and stops the state's threads and engines, so two at once would stop
    # each other's (an app entered by two test clients, or by a LocalOrg and a test client).
    one_lifespan = threading.Lock()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not one_lifespan.acquire(blocking=False):
            raise RuntimeError(
                "This app's lifespan is running already: one app serves one lifespan at a time"
            )
        try:
            async with serving(app):
                yield
        finally:
            one_lifespan.release()

    @asynccontextmanager
    async def serving(app: FastAPI) -> AsyncIterator[None]:
        to_thread.current_default_thread_limiter().total_tokens = settings.request_threads
        REQUEST_THREADS.resize(settings.request_threads)
        prepare_databases(state)
        # `localforce serve` resolved the key already; an app made otherwise resolves it
        # here, once its data directory is known to hold its org (a refused start writes
        # nothing there, not even a key).
        state.settings = with_admin_key(state.settings)
        state.sandboxes.start()
        if state.bulk is not None:
            state.bulk.start()
        background = [asyncio.create_task(flush_forever(state))]
        if settings.gc_collect_seconds > 0:
            freeze_startup_objects()
            collect = collect_garbage_forever(settings.gc_collect_seconds)
            background.append(asyncio.create_task(collect))
        if settings.malloc_trim_seconds > 0:
            trim = release_free_memory_forever(settings.malloc_trim_seconds)
            background.append(asyncio.create_task(trim))
        async with mcp.running(), openenv.running():
            yield
        for task in background:
            task.cancel()
        if settings.gc_collect_seconds > 0:
            unfreeze_objects()
        if state.bulk is not None:
            await run_in_threadpool(state.bulk.stop)
        state.cursors.spill(everything=True)
        state.usage.flush()
        state.calls.flush()
        state.tool_calls.flush()
        state.sandboxes.close()
        state.engine.dispose()
        state.platform.dispose()

    app = FastAPI(
        title="localforce",
        description="A self-hosted Salesforce org: the REST wire protocol over SQLite/PostgreSQL.",
        lifespan=lifespan,
        redirect_slashes=False,
        default_response_class=SalesforceJSONResponse,
    )
    app.state.localforce = state
    app.add_middleware(HeadMiddleware)  # inside the usage count: the log says HEAD
    app.add_middleware(PathMiddleware)
    app.add_middleware(ApiCallMiddleware, state=state)
    app.add_exception_handler(SalesforceError, salesforce_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(Exception, unexpected_error)
    # Routes are matched in order, one at a time: the busiest first (their paths overlap no
    # other module's), the catch-alls of `planned` last.
    routers = (
        query.router,
        ui.router,  # before sobjects: its paths would read as record and external ids there
        planned.sobject_router,  # and these as records' relationships
        sobjects.router,
        bulk2.router,
        bulk1.router,
        search.router,
        composite.router,
        versions.router,
        auth.router,
        identity.router,
        soap_calls.router,
        soap_metadata.router,
        control.router,
        episodes.router,
        tooling.router,
        planned.router,
    )
    for router in routers:
        app.include_router(router)
    console.install(app)
    orgs = sorted(Schemas(settings.seed_dir).known())
    mcp = McpEndpoint(build_mcp(app, state, orgs))
    app.state.mcp = mcp  # where the OpenEnv environment's tool calls find it (app_link)
    openenv = OpenEnvEndpoint(app, settings.openenv_max_sessions)
    app.state.openenv = openenv  # its link reaches the app on the loop its lifespan runs in
    # Before the catch-alls of `planned`.
    app.router.routes[0:0] = [mcp.route(), openenv.route()]
    openapi.install(
        app,
        path_values={
            "version": {"enum": [f"v{item['version']}" for item in org.versions()]},
            "sobject": {"enum": sorted(definition.name for definition in state.registry)},
            "record_id": openapi.RECORD_ID,
            "sandbox_id": openapi.SANDBOX_ID,
        },
        model_values={
            "SandboxCreate": openapi.sandbox_values(orgs),
            "EpisodeCreate": {
                **openapi.sandbox_values(orgs),
                **openapi.episode_values(settings.task_file is not None),
            },
            "SnapshotCreate": {"name": openapi.SANDBOX_ID},
        },
    )
    return app
