"""The sandboxes' lifecycle: create, look up, reset, restore and delete sandboxes, and expire
idle ones.

A sandbox is a clone of a template (app.sandbox.templates), with its own clock and call log
(app.sandbox.record). The default sandbox is the server's own database and always exists.

Stateless: the registry (which sandboxes exist, their clocks, snapshots and tokens), the pool
and the templates are rows of the platform database, so every worker and replica serves every
sandbox, and a restart loses none. This process keeps only what it can rebuild from those rows:
an engine per sandbox it has served.

Safe under concurrency: writes, reset, snapshot and restore of one sandbox are transactions
that hold its write lock (`write_transaction`), so they serialise and never see each other
half-done; delete waits for this process's requests in flight (each holds a lease).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine

from app.errors import NotFound, SalesforceError
from app.sandbox.calllog import CallQueue, call_time
from app.sandbox.clock import SandboxClock, utc_now
from app.sandbox.model import (
    DEFAULT_ID,
    SANDBOX_ID,
    Sandbox,
    SandboxBusy,
    SandboxLimitReached,
    SandboxSettings,
    new_sandbox_id,
)
from app.sandbox.registry import (
    SandboxRow,
    all_sandboxes,
    begin_episode,
    count_sandboxes,
    find_sandbox,
    idle_sandboxes,
    insert_sandbox,
    put_default,
    referenced_urls,
    remove_sandbox,
    set_schema_changes,
    set_url,
    touch_sandbox,
    use_template,
)
from app.sandbox.schemas import Schemas, changed_tables, store_schema
from app.sandbox.templates import Templates
from app.storage.backends import Copies, copy_age
from app.storage.bulk_jobs import delete_sandbox_jobs
from app.storage.database import platform_transaction, write_transaction
from app.storage.journal import undo_all
from app.storage.schema_ddl import drop_changed_copies
from app.storage.snapshots import restore_snapshot, snapshot_names

# How long delete waits for a sandbox's requests in flight before it refuses.
DRAIN_SECONDS = 30.0
# A sandbox's last use is written at most this often per process (not on every request).
TOUCH_SECONDS = 30.0
# A clone no row names is left alone this long: another worker may be about to register it.
ORPHAN_GRACE_SECONDS = 120.0
RECLAIM_EVERY_SECONDS = 60.0
# Creates expire idle sandboxes at most this often (listing always does).
EXPIRE_EVERY_SECONDS = 5.0
# How often each process sweeps idle sandboxes and templates away, requests or none: what
# is idle goes within its idle time and this (or half a shorter idle time, but no more often
# than the least).
SWEEP_SECONDS = 5.0
LEAST_SWEEP_SECONDS = 0.5
LOG = logging.getLogger(__name__)


class Sandboxes:
    """The sandboxes as this process serves them: created, found, reset, restored, deleted,
    and expired when idle (each process sweeps them on a thread of its own)."""

    def __init__(
        self,
        *,
        platform: Engine,
        default: Sandbox,
        copies: Copies,
        schema_for: Schemas,
        templates: Templates,
        calls: CallQueue,
        settings: SandboxSettings,
    ) -> None:
        self.platform = platform
        self.default = default
        self.copies = copies
        self.schema_for = schema_for
        self.templates = templates
        self.calls = calls
        self.settings = settings
        # Guards `_live` and `_pooled` only; never held across I/O, nor with another lock, so
        # lookups never wait on a build.
        self._lock = threading.Lock()
        self._live: dict[str, Sandbox] = {default.instance: default}
        self._pooled: OrderedDict[str, Sandbox] = OrderedDict()
        self._sweeper: threading.Thread | None = None
        self._stopped = threading.Event()
        self._last_reclaim = 0.0
        self._last_expiry = 0.0

    def start(self) -> None:
        """Once the databases are ready: register the default sandbox, the templates earlier
        runs left, and reclaim storage a crash left without a sandbox."""
        default = self.default
        with default.engine.connect() as conn:
            default.snapshots = snapshot_names(conn)
        with platform_transaction(self.platform) as conn:
            put_default(conn, self._row_of(default))
            row = find_sandbox(conn, DEFAULT_ID)
            assert row is not None
            self.templates.register_found(conn, utc_now())
        with self._lock:
            self._live = {row.instance: default}
        default.instance = row.instance
        default.schema = self.schema_for(row.org, row.schema_changes)
        default.clock.origin = row.clock_origin
        self._forget_lost_sandboxes()
        self.reclaim_orphans()
        self._sweeper = threading.Thread(
            target=self._sweep_forever, name="sandbox-sweeper", daemon=True
        )
        self._sweeper.start()

    def _sweep_forever(self) -> None:
        shortest_idle = min(self.settings.idle_seconds, self.settings.template_idle_seconds)
        period = max(LEAST_SWEEP_SECONDS, min(SWEEP_SECONDS, shortest_idle / 2))
        while not self._stopped.wait(period):
            try:
                self.expire_idle()
            except Exception:  # e.g. the database unreachable for a while: the next sweep
                LOG.exception("Expiring idle sandboxes and templates failed")

    def _forget_lost_sandboxes(self) -> None:
        """Rows whose storage is gone (removed by hand, or a crash mid-create) are forgotten."""
        with self.platform.connect() as conn:
            rows = [r for r in all_sandboxes(conn) if r.id != DEFAULT_ID]
        lost = [r for r in rows if not r.url or not self.copies.exists(r.url)]
        # A reservation younger than the grace time may be a create in flight elsewhere.
        grace = utc_now() - timedelta(seconds=ORPHAN_GRACE_SECONDS)
        lost = [r for r in lost if r.url or r.created_at < grace]
        if lost:
            with platform_transaction(self.platform) as conn:
                for row in lost:
                    remove_sandbox(conn, row)

    @staticmethod
    def _row_of(sandbox: Sandbox) -> SandboxRow:
        now = utc_now()
        return SandboxRow(
            id=sandbox.id,
            instance=sandbox.instance,
            org=sandbox.org,
            seed=sandbox.seed,
            url=sandbox.url,
            template=sandbox.template,
            clock_start=sandbox.clock.start,
            clock_pinned=sandbox.clock.pinned,
            clock_origin=sandbox.clock.origin,
            created_at=sandbox.created_at,
            last_used=now,
            snapshots=json.dumps(sandbox.snapshots),
        )

    # -- lookup ---------------------------------------------------------------------------

    def _materialize(self, row: SandboxRow) -> Sandbox:
        """The live object for a registry row (made once per instance in this process), with
        the clock and snapshots as the row now says."""
        with self._lock:
            sandbox = self._live.get(row.instance)
        if sandbox is None:
            sandbox = Sandbox(
                id=row.id,
                instance=row.instance,
                org=row.org,
                seed=row.seed,
                url=row.url,
                engine=self.copies.engine_for(row.url, row.template),
                clock=SandboxClock(row.clock_start, row.clock_pinned, row.clock_origin),
                schema=self.schema_for(row.org, row.schema_changes),
                template=row.template,
                password_hash=row.password_hash,
                created_at=row.created_at,
            )
            with self._lock:
                sandbox = self._live.setdefault(row.instance, sandbox)
        sandbox.clock.origin = row.clock_origin
        sandbox.snapshots = json.loads(row.snapshots)
        if sandbox.schema.changes != row.schema_changes:  # changed by another process
            sandbox.schema = self.schema_for(row.org, row.schema_changes)
        self.served(sandbox)
        return sandbox

    def served(self, sandbox: Sandbox) -> None:
        """Note that a request is served from the sandbox: the most recently served ones keep
        their connections open between requests."""
        if sandbox.is_default:
            return
        with self._lock:
            self._pooled[sandbox.instance] = sandbox
            self._pooled.move_to_end(sandbox.instance)
            idle = []
            # Past the setting, the least recently served sandbox's pool closes (its engine
            # opens connections again on its next request): idle ones hold no connection.
            while len(self._pooled) > self.settings.pooled_sandboxes:
                idle.append(self._pooled.popitem(last=False)[1])
        for stale in idle:
            self.copies.release(stale.engine)  # connections checked out finish, then close

    def find(self, sandbox_id: str) -> Sandbox | None:
        with self.platform.connect() as conn:
            row = find_sandbox(conn, sandbox_id)
        if row is None or not row.url:  # no url yet: still being created
            return None
        return self._materialize(row)

    def get(self, sandbox_id: str) -> Sandbox:
        sandbox = self.find(sandbox_id)
        if sandbox is None:
            raise NotFound(f"No sandbox with id {sandbox_id}")
        return sandbox

    def in_use(self, row: SandboxRow | None) -> Sandbox | None:
        """The sandbox of a registry row just read (None: no such sandbox, or one still being
        created), its use noted (for idle expiry) at most every TOUCH_SECONDS here."""
        if row is None or not row.url:
            return None
        sandbox = self._materialize(row)
        now = time.monotonic()
        if now - sandbox.touched >= TOUCH_SECONDS:
            sandbox.touched = now
            with platform_transaction(self.platform) as conn:
                touch_sandbox(conn, sandbox.id, utc_now())
        return sandbox

    def all(self) -> list[Sandbox]:
        self.expire_idle()
        with self.platform.connect() as conn:
            rows = all_sandboxes(conn)
        return [self._materialize(row) for row in rows if row.url]

    # -- lifecycle -------------------------------------------------------------------------

    def create(
        self,
        *,
        sandbox_id: str | None,
        org: str,
        seed: int,
        clock: SandboxClock,
        password_hash: str,
    ) -> Sandbox:
        """A new sandbox whose logins need the password of `password_hash` (the caller keeps
        the password: the registry holds its hash only)."""
        if time.monotonic() - self._last_expiry > EXPIRE_EVERY_SECONDS:
            self.expire_idle()
        if sandbox_id is None:
            sandbox_id = new_sandbox_id()
        if not SANDBOX_ID.match(sandbox_id):
            raise SalesforceError(
                f"Invalid sandbox id: {sandbox_id}. Use 1 to 40 letters, digits, '-' or '_'.",
                error_code="INVALID_INPUT",
            )
        self.schema_for(org)  # an unknown org is refused before anything is reserved
        now = utc_now()
        # The row is written first, with no storage yet: it reserves the id for every worker.
        reservation = SandboxRow(
            id=sandbox_id,
            instance=uuid.uuid4().hex,
            org=org,
            seed=seed,
            url="",
            template="",
            clock_start=clock.start,
            clock_pinned=clock.pinned,
            clock_origin=now,
            created_at=now,
            last_used=now,
            password_hash=password_hash,
        )
        # The common case, a template known ready with a copy in the pool, takes one
        # transaction: reserve the id and claim the copy together.
        ready = self.templates.known_ready(org, seed)
        with platform_transaction(self.platform) as conn:
            if not insert_sandbox(conn, reservation):
                raise SalesforceError(
                    f"A sandbox with id {sandbox_id} already exists",
                    error_code="DUPLICATE_VALUE",
                    status_code=409,  # the control plane's own REST answer to a taken name
                )
            if count_sandboxes(conn) > self.settings.max_sandboxes:  # this one counted
                self._last_expiry = 0.0  # expire the idle ones before the next try
                raise SandboxLimitReached(
                    f"The limit of {self.settings.max_sandboxes} live sandboxes is reached: "
                    "delete one, or wait for idle ones to expire."
                )
            pooled = self.templates.claim(conn, ready, now) if ready else None
            row = reservation
            if pooled:
                row = replace(reservation, url=pooled, template=ready)
                set_url(conn, sandbox_id, pooled, ready)
        if pooled is not None:
            self.templates.refill(ready)
            return self._materialize(row)
        try:
            row = self._attach_clone(sandbox_id, org, seed)
        except BaseException:
            with platform_transaction(self.platform) as conn:
                remove_sandbox(conn, reservation)
            raise
        return self._materialize(row)

    def _attach_clone(self, sandbox_id: str, org: str, seed: int) -> SandboxRow:
        """The reserved sandbox's row once it has a copy of its template."""
        self.templates.attach(sandbox_id, org, seed)
        with self.platform.connect() as conn:
            row = find_sandbox(conn, sandbox_id)
        if row is None:  # deleted while it was being made
            raise NotFound(f"No sandbox with id {sandbox_id}")
        return row

    def delete(self, sandbox_id: str) -> None:
        """Remove a sandbox once this process's requests in flight on it have ended; its
        tokens, cursors and call log go with it."""
        sandbox = self.get(sandbox_id)
        if sandbox.is_default:
            raise SalesforceError(
                "The default sandbox cannot be deleted; reset it instead.",
                error_code="INVALID_OPERATION",
            )
        if not sandbox.close(timeout=DRAIN_SECONDS):
            raise SandboxBusy(
                f"Sandbox {sandbox_id} still has requests in flight after {DRAIN_SECONDS:g} "
                "seconds; try again."
            )
        with platform_transaction(self.platform) as conn:
            row = find_sandbox(conn, sandbox_id)
            if row is None or row.instance != sandbox.instance:
                raise NotFound(f"No sandbox with id {sandbox_id}")
            remove_sandbox(conn, row)
            if row.template:  # its idle time counts from the last sandbox's end
                use_template(conn, row.template, utc_now())
        self._discard(sandbox)

    def _discard(self, sandbox: Sandbox) -> None:
        with self._lock:
            self._live.pop(sandbox.instance, None)
            self._pooled.pop(sandbox.instance, None)
        self.calls.forget(sandbox.id)
        self.copies.release(sandbox.engine)
        self.copies.drop(sandbox.url)

    def expire_idle(self) -> None:
        """Drop sandboxes unused for the idle time, templates no sandbox has needed for the
        template idle time, and (now and then) orphaned storage."""
        now = utc_now()
        self._last_expiry = time.monotonic()
        with platform_transaction(self.platform) as conn:
            idle_since = now - timedelta(seconds=self.settings.idle_seconds)
            idle = idle_sandboxes(conn, idle_since, keep=DEFAULT_ID)
            for row in idle:
                remove_sandbox(conn, row)
            doomed = self.templates.retire_idle(conn, now)
        for row in idle:
            with self._lock:
                live = self._live.pop(row.instance, None)
                self._pooled.pop(row.instance, None)
            self.calls.forget(row.id)
            if live is not None:
                self.copies.release(live.engine)
            self.copies.drop(row.url)
        self.templates.drop(doomed)
        if time.monotonic() - self._last_reclaim > RECLAIM_EVERY_SECONDS:
            self.reclaim_orphans()

    def reclaim_orphans(self) -> list[str]:
        """Drop clones that no sandbox or pool row names (a crash or kill left them), once
        they are older than the grace time."""
        self._last_reclaim = time.monotonic()
        with self.platform.connect() as conn:
            named = {self.copies.storage_of(url) for url in referenced_urls(conn) if url}
        orphans = [
            url
            for url in self.copies.list_clones()
            if self.copies.storage_of(url) not in named
            and (copy_age(url) or 0) > ORPHAN_GRACE_SECONDS
        ]
        for url in orphans:
            self.copies.drop(url)
        return orphans

    def close(self) -> None:
        """Stop the sweeps and the pool refills, and release this process's engines.
        Sandboxes, the pool and templates stay: they belong to the platform database, not to
        this process."""
        self._stopped.set()  # both threads are told to stop before either is waited for
        self.templates.stop()
        if self._sweeper is not None:
            self._sweeper.join()
        with self._lock:
            live = [s for s in self._live.values() if not s.is_default]
            self._live = {self.default.instance: self.default}
        for sandbox in live:
            self.copies.release(sandbox.engine)
        self.copies.close()

    # -- back to the episode's start, or to a snapshot ----------------------------------------

    def reset(self, sandbox_id: str) -> dict[str, Any]:
        """Undo every write since the last reset, restart the clock, clear the call log.

        It holds the sandbox's write lock: writes in flight finish first, later ones wait."""
        sandbox = self.get(sandbox_id)
        started = time.perf_counter()
        # The episode's Bulk jobs end first: a job running now writes (if at all) before the
        # undo below, which waits for its transaction, never after it.
        with platform_transaction(self.platform) as conn:
            delete_sandbox_jobs(conn, sandbox.id)
        with write_transaction(sandbox.engine) as conn:
            undone = self._undo(conn, sandbox)
            if sandbox.schema.changes or self.schema_changes(sandbox):
                with platform_transaction(self.platform) as platform:
                    set_schema_changes(platform, sandbox.id, "")
        sandbox.schema = self.schema_for(sandbox.org)
        origin = sandbox.clock.restart()
        self.calls.drop(sandbox.id)  # queued calls of the old episode go with the rest
        with platform_transaction(self.platform) as conn:
            begin_episode(conn, sandbox.id, origin, call_time(datetime.now(UTC)))
        return {
            "id": sandbox.id,
            "undoneWrites": undone,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }

    def _undo(self, conn: Connection, sandbox: Sandbox) -> int:
        """Undo the episode's writes under the schema they were made in (the row's: another
        process may have changed it), then drop the copies of the tables that schema changed,
        so the template's show through again. The number of journal entries undone."""
        schema = self.schema_for(sandbox.org, self.schema_changes(sandbox))
        undone = undo_all(conn, schema.tables)
        drop_changed_copies(conn, changed_tables(schema, self.schema_for(sandbox.org)))
        return undone

    # -- its schema -------------------------------------------------------------------------

    def schema_changes(self, sandbox: Sandbox) -> str:
        """The sandbox's schema changes as its row has them now (another process may have
        made one since this one last looked)."""
        with self.platform.connect() as conn:
            row = find_sandbox(conn, sandbox.id)
        return "" if row is None else row.schema_changes

    def commit_schema(self, sandbox: Sandbox, before: str, after: str) -> bool:
        """Record the sandbox's new schema changes, if they are still `before` (False: another
        change came first); from then on its requests see the new schema."""
        with platform_transaction(self.platform) as conn:
            if not set_schema_changes(conn, sandbox.id, after, before=before):
                return False
        sandbox.schema = self.schema_for(sandbox.org, after)
        return True

    def snapshot_schema(self, sandbox: Sandbox, name: str) -> str:
        """The schema changes the sandbox had when snapshot `name` was taken."""
        with self.platform.connect() as conn:
            row = find_sandbox(conn, sandbox.id)
        schemas = {} if row is None else json.loads(row.snapshot_schemas)
        return str(schemas.get(name, ""))

    def restore(self, sandbox_id: str, name: str) -> dict[str, Any]:
        """Bring the sandbox back to snapshot `name`, in one transaction under the write lock."""
        sandbox = self.get(sandbox_id)
        started = time.perf_counter()
        with sandbox.engine.connect() as conn:
            if name not in snapshot_names(conn):
                raise NotFound(f"No snapshot named {name} in sandbox {sandbox.id}")
        with platform_transaction(self.platform) as conn:  # as reset does: jobs end first
            delete_sandbox_jobs(conn, sandbox.id)
        with write_transaction(sandbox.engine) as conn:
            self._undo(conn, sandbox)
            # The snapshot's rows are written back under the schema it was taken in.
            changes = self.snapshot_schema(sandbox, name)
            schema = self.schema_for(sandbox.org, changes)
            store_schema(conn, self.schema_for(sandbox.org), schema)
            restored = restore_snapshot(conn, schema.tables, name)
            if restored is None:
                raise NotFound(f"No snapshot named {name} in sandbox {sandbox.id}")
            with platform_transaction(self.platform) as platform:
                set_schema_changes(platform, sandbox.id, changes)
        sandbox.schema = schema
        return {
            "id": sandbox.id,
            "snapshot": name,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
