"""The application's state (`AppState`), built from the settings: the server's and the platform's
databases, the sandboxes and their templates, the cursors, the API usage count and the Bulk
job runner: made here, started by the app's lifespan (app.main)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import Engine

from app.api.state import AppState
from app.config import Settings
from app.sandbox.calllog import CallQueue
from app.sandbox.clock import SandboxClock, to_naive_utc
from app.sandbox.lifecycle import Sandboxes
from app.sandbox.model import DEFAULT_ID, SERVER_DATABASE, Sandbox, SandboxSettings
from app.sandbox.record import EpisodeRecord
from app.sandbox.schemas import Schema, Schemas
from app.sandbox.templates import Templates, TemplateSpec
from app.seeding.templates import fill_template_in_child
from app.services.bulk.runner import BulkRunner, RunnerSettings
from app.services.cursors import CursorStore
from app.services.usage import ApiUsage
from app.storage.backends import Copies, backend_for_url
from app.storage.database import create_db_engine
from app.tasks.results import ToolCallQueue
from app.tasks.split_files import SplitFiles


def server_clock(settings: Settings) -> SandboxClock:
    """The default clock: real time, or pinned to LOCALFORCE_CLOCK."""
    if settings.clock is None:
        return SandboxClock()
    return SandboxClock(start=to_naive_utc(settings.clock), pinned=True)


def build_state(settings: Settings) -> AppState:
    """The state of an app with these settings: made here, started by the app's lifespan."""
    schemas = Schemas(settings.seed_dir)
    schema = schemas(settings.org)
    url = settings.effective_database_url
    engine = create_db_engine(url)
    platform_url = settings.platform_database_url
    platform = engine if platform_url == url else create_db_engine(platform_url)
    copies: Copies = backend_for_url(url).copies(url, settings.data_dir)
    limits = sandbox_settings(settings)
    templates = Templates(
        platform=platform,
        server=engine,
        copies=copies,
        build_template=template_builder(schemas, copies, url),
        settings=limits,
    )
    calls = CallQueue(platform, settings.call_log_retention)
    sandboxes = Sandboxes(
        platform=platform,
        default=default_sandbox(settings, engine, schema),
        copies=copies,
        schema_for=schemas,
        templates=templates,
        calls=calls,
        settings=limits,
    )
    state = AppState(
        settings=settings,
        engine=engine,
        platform=platform,
        registry=schema.registry,
        tables=schema.tables,
        sandboxes=sandboxes,
        templates=templates,
        calls=calls,
        record=EpisodeRecord(platform=platform, lookup=sandboxes.get, calls=calls),
        tool_calls=ToolCallQueue(platform),
        cursors=CursorStore(
            platform,
            per_user=settings.max_cursors_per_user,
            idle_seconds=settings.cursor_idle_seconds,
        ),
        usage=ApiUsage(platform),
        splits=SplitFiles(settings.data_dir / "splits", settings.seed_dir),
    )
    if settings.bulk_runner:
        state.bulk = bulk_runner(settings, state)
    return state


def sandbox_settings(settings: Settings) -> SandboxSettings:
    return SandboxSettings(
        max_sandboxes=settings.max_sandboxes,
        idle_seconds=settings.sandbox_idle_seconds,
        pool_size=settings.sandbox_pool_size,
        max_templates=settings.max_templates,
        template_idle_seconds=settings.template_idle_seconds,
        pooled_sandboxes=settings.pooled_sandboxes,
    )


def default_sandbox(settings: Settings, engine: Engine, schema: Schema) -> Sandbox:
    """The server's own database, as the default sandbox."""
    return Sandbox(
        id=DEFAULT_ID,
        instance=uuid.uuid4().hex,  # the registry's, once it is read at start
        org=settings.org,
        seed=settings.seed,
        url=SERVER_DATABASE,
        engine=engine,
        clock=server_clock(settings),
        schema=schema,
    )


def template_builder(
    schemas: Schemas, copies: Copies, server_url: str
) -> Callable[[str, TemplateSpec], None]:
    """How a template is built: in a child process, from the org's definitions."""

    def build_template(template_url: str, spec: TemplateSpec) -> None:
        """Generate the org into a new template, or copy the server's imported org into it."""
        schemas(spec.org)  # an unknown org fails here, before anything is made
        copies.create_empty(template_url)
        try:
            fill_template_in_child(
                copies.database_url(template_url),
                objects_dir=schemas.objects_dir(spec.org),
                org=spec.org,
                seed=spec.seed,
                imported_from=server_url if spec.imported is not None else None,
            )
        except BaseException:
            copies.drop(template_url)  # a half-built template must not be cloned later
            raise

    return build_template


def bulk_runner(settings: Settings, state: AppState) -> BulkRunner:
    return BulkRunner(
        state.platform,
        state.cursors,
        state.open_job,
        RunnerSettings(
            stale=timedelta(seconds=settings.bulk_stale_seconds),
            poll_seconds=settings.bulk_poll_seconds,
        ),
    )
