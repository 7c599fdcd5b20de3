"""What the lifespan builds and every request reads: settings, engine, schema, tables, clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Engine

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.sandbox.calllog import CallQueue
from app.sandbox.lifecycle import Sandboxes
from app.sandbox.model import Sandbox
from app.sandbox.record import EpisodeRecord
from app.sandbox.templates import Templates
from app.services.auth import Credentials, Session, SessionPolicy, fingerprint_of
from app.services.bulk.jobs import Job
from app.services.bulk.runner import BulkRunner
from app.services.context import OrgContext, TableSet
from app.services.cursors import CursorStore
from app.services.usage import ApiUsage
from app.soql.date_literals import OrgCalendar
from app.soql.function_registry import FUNCTIONS, FunctionRegistry
from app.tasks.episodes import EpisodeCaller
from app.tasks.results import ToolCallQueue
from app.tasks.split_files import SplitFiles

# How long a token's session and sandbox are trusted without asking the platform database.
SESSION_CACHE_SECONDS = 1.0
SESSION_CACHE_SIZE = 10_000


@dataclass(frozen=True)
class Resolved:
    session: Session
    sandbox: Sandbox | None
    # The sandbox's episode, which its agent's tool calls are checked against (None: none's).
    episode: EpisodeCaller | None = None


class SessionCache:
    """Tokens resolved lately, so that a client's burst of requests asks the database once a
    second, not once a request. Thread-safe; forgotten whole on any revoke or delete here."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, Resolved]] = {}
        self._lock = threading.Lock()

    def get(self, token: str) -> Resolved | None:
        with self._lock:
            entry = self._entries.get(token)
        if entry is None or time.monotonic() > entry[0]:
            return None
        return entry[1]

    def put(self, token: str, resolved: Resolved) -> None:
        with self._lock:
            if len(self._entries) >= SESSION_CACHE_SIZE:
                self._entries.clear()
            self._entries[token] = (time.monotonic() + SESSION_CACHE_SECONDS, resolved)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


@dataclass
class AppState:
    """Everything here is rebuilt from settings and databases: no request's state lives only
    in this process (sessions, sandboxes, cursors and usage are in the platform database;
    `sessions` is a cache of it)."""

    settings: Settings
    engine: Engine
    # The platform database (the same engine as `engine` on PostgreSQL).
    platform: Engine
    registry: SchemaRegistry
    tables: TableSet
    sandboxes: Sandboxes
    # Templates and their warm pool (the sandboxes' lifecycle uses them too).
    templates: Templates
    # This process's calls on their way to the sandboxes' logs.
    calls: CallQueue
    # What each sandbox's episode did: its call log, its diff, its snapshots.
    record: EpisodeRecord
    # This process's tool calls on their way to the episodes' trajectories.
    tool_calls: ToolCallQueue
    cursors: CursorStore
    usage: ApiUsage
    # The task files of the splits' parts episodes have named, drawn on first use.
    splits: SplitFiles
    sessions: SessionCache = field(default_factory=SessionCache)
    # The first user (id, username) of a new sandbox of each template.
    first_users: dict[str, tuple[str, str]] = field(default_factory=dict)
    # The SOQL functions of this application's queries.
    functions: FunctionRegistry = FUNCTIONS
    # The Bulk job runner of this process (None when LOCALFORCE_BULK_RUNNER is off).
    bulk: BulkRunner | None = None

    @contextmanager
    def open_job(self, job: Job) -> Iterator[tuple[Sandbox, OrgContext] | None]:
        """The sandbox a Bulk job runs in, leased for the run, and the org as the job's
        creator sees it; None when the sandbox is gone (or is a later namesake)."""
        sandbox = self.sandboxes.find(job.sandbox_id)
        if sandbox is None or sandbox.instance != job.sandbox_instance or not sandbox.lease():
            yield None
            return
        try:
            now = sandbox.clock.now()
            settings = self.settings
            yield (
                sandbox,
                OrgContext(
                    registry=sandbox.schema.registry,
                    tables=sandbox.schema.tables,
                    user_id=job.created_by,
                    now=now,
                    base_path=f"/services/data/{job.api_version}",
                    sandbox_id=sandbox.instance,
                    calendar=OrgCalendar.at(
                        now, settings.timezone, settings.fiscal_year_start_month
                    ),
                    functions=self.functions,
                ),
            )
        finally:
            sandbox.release()

    def clock(self) -> datetime:
        """Real time (or the pinned server clock): when sessions are issued."""
        return self.sandboxes.default.clock.now()

    @property
    def session_policy(self) -> SessionPolicy:
        return SessionPolicy(
            idle=timedelta(seconds=self.settings.session_idle_seconds),
            credentials=fingerprint_of(self.credentials),
        )

    @property
    def credentials(self) -> Credentials | None:
        if not self.settings.strict_login:
            return None
        settings = self.settings
        return Credentials(settings.username, settings.password, settings.security_token)
