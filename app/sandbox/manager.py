"""The sandbox manager: creates, finds, resets, snapshots and deletes sandboxes.

A sandbox is a clone of a template, with its own clock and call log. The template holds the
org freshly generated from the sandbox's seed, or, when the server's org was imported from a
dump (`localforce import`), that imported data whatever the seed: an imported org has no seed
to generate it from. The default sandbox is the server's own database and always exists.
Clones are taken from a warm pool so creating a sandbox costs a checkout, not a copy.

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
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select

from app.errors import NotFound, SalesforceError
from app.metadata.values import to_json
from app.sandbox.calllog import CallQueue, call_time, calls
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
    add_copy,
    all_sandboxes,
    begin_episode,
    claim_copy,
    claim_template_build,
    count_sandboxes,
    find_sandbox,
    forget_template,
    hold_template,
    idle_sandboxes,
    insert_sandbox,
    lock_templates,
    mark_template,
    pooled_copies,
    put_default,
    referenced_urls,
    register_template,
    remove_sandbox,
    retire_template,
    set_snapshots,
    set_url,
    template_ready,
    template_rows,
    templates_in_use,
    touch_sandbox,
    use_template,
)
from app.sandbox.schemas import Schema
from app.storage.backends import Copies, copy_age
from app.storage.bulk_jobs import delete_sandbox_jobs
from app.storage.database import platform_transaction, write_transaction
from app.storage.journal import touched_records, undo_all
from app.storage.platform import IMPORTED_SOURCE_PREFIX, PLATFORM_REVISION, OrgInfo
from app.storage.records import fetch_row
from app.storage.snapshots import restore_snapshot, snapshot_names, take_snapshot

# Audit fields change on every write; a diff that listed them would bury the real changes.
AUDIT_FIELDS = frozenset({"LastModifiedDate", "LastModifiedById", "SystemModstamp"})
ORG_INFO = OrgInfo.__table__  # type: ignore[attr-defined]
# How long delete waits for a sandbox's requests in flight before it refuses.
DRAIN_SECONDS = 30.0
# A sandbox's last use is written at most this often per process (not on every request).
TOUCH_SECONDS = 30.0
# A clone no row names is left alone this long: another worker may be about to register it.
ORPHAN_GRACE_SECONDS = 120.0
# A template build whose worker vanished is taken over after this long.
STALE_BUILD = timedelta(minutes=15)
BUILD_POLL_SECONDS = 0.2
RECLAIM_EVERY_SECONDS = 60.0
# Creates expire idle sandboxes at most this often (listing always does).
EXPIRE_EVERY_SECONDS = 5.0
# How often each process sweeps idle sandboxes and templates away, requests or none: what
# is idle goes within its idle time and this (or half a shorter idle time, but no more often
# than the least).
SWEEP_SECONDS = 5.0
LEAST_SWEEP_SECONDS = 0.5
# A template seen ready is trusted this long without asking the platform database again.
READY_SECONDS = 5.0
LOG = logging.getLogger(__name__)
# How templates are stored, in their keys: "c" is read in place by copy-on-write sandboxes (on
# SQLite a rollback-journal file, which opens read-only and immutable).
TEMPLATE_LAYOUT = "c"


@dataclass(frozen=True)
class TemplateSpec:
    """What a template holds: `org` generated from `seed`, or, with `imported` (the sha256 of
    the dump), the data the server's own org was imported from."""

    org: str
    seed: int
    imported: str | None = None

    @property
    def key(self) -> str:
        version = PLATFORM_REVISION.partition("_")[0]
        if self.imported is not None:
            return f"{self.org}_import_{self.imported[:12]}_p{version}{TEMPLATE_LAYOUT}"
        return f"{self.org}_{self.seed}_p{version}{TEMPLATE_LAYOUT}"


class SandboxManager:
    def __init__(
        self,
        *,
        platform: Engine,
        default: Sandbox,
        copies: Copies,
        schema_for: Callable[[str], Schema],
        build_template: Callable[[str, TemplateSpec], None],
        calls: CallQueue,
        settings: SandboxSettings,
    ) -> None:
        self.platform = platform
        self.default = default
        self.copies = copies
        self.schema_for = schema_for
        self.build_template = build_template
        self.calls = calls
        self.settings = settings
        # Guards the dictionaries only; never held across I/O, so lookups never wait on a build.
        self._lock = threading.Lock()
        self._live: dict[str, Sandbox] = {default.instance: default}
        self._pooled: OrderedDict[str, Sandbox] = OrderedDict()
        self._template_locks: dict[str, threading.Lock] = {}
        self._refiller: threading.Thread | None = None
        self._refill_asked = threading.Event()
        self._refill_wanted: set[str] = set()
        self._stopping = False
        self._sweeper: threading.Thread | None = None
        self._stopped = threading.Event()
        self._last_reclaim = 0.0
        self._last_expiry = 0.0
        # Templates seen ready lately (monotonic time), so a create need not ask again.
        self._ready: dict[str, float] = {}
        self._imported: dict[str, tuple[float, str | None]] = {}

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
            now = utc_now()
            for url in self.copies.list_templates():
                register_template(conn, url, now)
        with self._lock:
            self._live = {row.instance: default}
        default.instance = row.instance
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
                schema=self.schema_for(row.org),
                template=row.template,
                password_hash=row.password_hash,
                created_at=row.created_at,
            )
            with self._lock:
                sandbox = self._live.setdefault(row.instance, sandbox)
        sandbox.clock.origin = row.clock_origin
        sandbox.snapshots = json.loads(row.snapshots)
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

    # -- templates and the warm pool -------------------------------------------------------

    def imported_dump(self, org: str) -> str | None:
        """The sha256 of the dump the server's database holds `org` from, if it was imported
        (read at most every READY_SECONDS: an import replaces the data under a running server
        rarely, and takes effect for new sandboxes that much later)."""
        now = time.monotonic()
        known = self._imported.get(org)
        if known is not None and now - known[0] < READY_SECONDS:
            return known[1]
        with self.default.engine.connect() as conn:
            source = conn.execute(
                select(ORG_INFO.c.source).where(ORG_INFO.c.org == org)
            ).scalar_one_or_none()
        dump = None
        if source is not None and source.startswith(IMPORTED_SOURCE_PREFIX):
            dump = str(source).removeprefix(IMPORTED_SOURCE_PREFIX)
        self._imported[org] = (now, dump)
        return dump

    def _spec(self, org: str, seed: int) -> tuple[TemplateSpec, str]:
        spec = TemplateSpec(org=org, seed=seed, imported=self.imported_dump(org))
        return spec, self.copies.template_url(spec.key)

    def _seen_ready(self, url: str) -> bool:
        with self._lock:
            return time.monotonic() - self._ready.get(url, -READY_SECONDS) < READY_SECONDS

    def _known_ready(self, org: str, seed: int) -> str:
        """The template for `org` and `seed` if it was seen ready lately, else ""."""
        url = self._spec(org, seed)[1]
        return url if self._seen_ready(url) else ""

    def _template(self, org: str, seed: int) -> str:
        """The template for `org` and `seed`, built on first use. Only requests for this same
        template wait for its build (in this process on a lock, in others on its row)."""
        spec, url = self._spec(org, seed)
        if self._seen_ready(url):
            return url
        with self._lock:
            lock = self._template_locks.setdefault(url, threading.Lock())
        with lock:
            while True:
                with platform_transaction(self.platform) as conn:
                    ready = use_template(conn, url, utc_now())
                    if ready and self.copies.exists(url):
                        with self._lock:
                            self._ready[url] = time.monotonic()
                        return url
                    if ready:  # its row outlived its storage
                        forget_template(conn, url)
                    doomed = self._make_room_for_template(conn, url)
                    mine = claim_template_build(conn, url, utc_now(), STALE_BUILD)
                self._drop_templates(doomed)
                if mine:
                    self._build(url, spec)
                    return url
                time.sleep(BUILD_POLL_SECONDS)  # another worker is building it

    def _build(self, url: str, spec: TemplateSpec) -> None:
        try:
            if self.copies.exists(url):
                self.copies.drop(url)  # left by a build that did not finish
            self.build_template(url, spec)
        except BaseException:
            with platform_transaction(self.platform) as conn:
                forget_template(conn, url)
            raise
        with platform_transaction(self.platform) as conn:
            mark_template(conn, url, utc_now(), ready=True)
        with self._lock:
            self._ready[url] = time.monotonic()

    def _make_room_for_template(self, conn: Any, url: str) -> dict[str, list[str]]:
        """Inside the claim's transaction: if a new template would pass the bound, retire the
        least recently used one no sandbox needs; refuse if every one is in use. Returns what
        to drop once the transaction commits (`_drop_templates`)."""
        known = template_rows(conn)
        if url in known or len(known) < self.settings.max_templates:
            return {}
        doomed = self._retire_unused_templates(conn, used_before=utc_now(), at_most=1)
        if not doomed:
            raise SandboxLimitReached(
                f"The limit of {self.settings.max_templates} sandbox templates (distinct orgs "
                "and seeds) is reached and every one is in use: delete sandboxes of another seed "
                "first, or raise LOCALFORCE_MAX_TEMPLATES."
            )
        return doomed

    def _retire_unused_templates(
        self, conn: Any, *, used_before: datetime, at_most: int | None = None
    ) -> dict[str, list[str]]:
        """Inside a platform transaction: take out of service the templates last used before
        `used_before` that no sandbox uses (at most `at_most`, least recently used first).
        Returns each with its pooled copies, to drop once the transaction commits.

        Safe against a create using one meanwhile, in any process: a create notes its use of
        the template (`use_template`) in the transaction that attaches its copy. The lock taken
        here waits for such a transaction and leaves out the template it used; one that comes
        after finds the template out of service and builds it anew."""
        candidates = lock_templates(conn, used_before)
        in_use = templates_in_use(conn)  # read after the locks: sees the creates waited for
        unused = sorted((u for u in candidates if u not in in_use), key=candidates.__getitem__)
        now = utc_now()
        doomed: dict[str, list[str]] = {}
        for url in unused[:at_most]:
            self._ready.pop(url, None)
            doomed[url] = retire_template(conn, url, now)
        return doomed

    def _drop_templates(self, doomed: dict[str, list[str]]) -> None:
        """Drop retired templates' storage and pooled copies, then forget their rows (until
        then they read as being built, so no create uses or rebuilds them under the drop)."""
        for template, pooled in doomed.items():
            for url in [*pooled, template]:
                self.copies.drop(url)
            with platform_transaction(self.platform) as conn:
                forget_template(conn, template)

    def _attach_clone(self, sandbox_id: str, org: str, seed: int) -> SandboxRow:
        """Give the reserved sandbox a copy of the template of `org` and `seed`. Should the
        template expire meanwhile (idle for its idle time since it was found), it is built
        anew."""
        template = self._template(org, seed)
        while not self._attach_copy_of(sandbox_id, template):
            self._ready.pop(template, None)
            template = self._template(org, seed)
        self._refill(template)
        with self.platform.connect() as conn:
            row = find_sandbox(conn, sandbox_id)
        if row is None:  # deleted while it was being made
            raise NotFound(f"No sandbox with id {sandbox_id}")
        return row

    def _attach_copy_of(self, sandbox_id: str, template: str) -> bool:
        """Attach a pooled copy of `template` (claimed in the same transaction), else one
        cloned now, noting the use of the template as it is attached. False if the template is
        no longer ready: nothing is attached then."""
        with platform_transaction(self.platform) as conn:
            if not use_template(conn, template, utc_now()):
                return False
            pooled = claim_copy(conn, template)
            if pooled is not None:
                set_url(conn, sandbox_id, pooled, template)
                return True
        try:
            clone = self.copies.clone(template)
        except Exception:
            if self._still_ready(template):
                raise
            return False  # dropped under the clone
        with platform_transaction(self.platform) as conn:
            if use_template(conn, template, utc_now()):
                set_url(conn, sandbox_id, clone, template)
                return True
        self.copies.drop(clone)
        return False

    def _still_ready(self, template: str) -> bool:
        with self.platform.connect() as conn:
            return template_ready(conn, template) is True

    def _refill(self, template: str) -> None:
        """Ask the pool's thread (started on first need) to top up `template`'s ready copies."""
        if self.settings.pool_size <= 0:
            return
        with self._lock:
            self._refill_wanted.add(template)
            if self._refiller is None:
                self._refiller = threading.Thread(
                    target=self._refill_forever, name="sandbox-pool", daemon=True
                )
                self._refiller.start()
        self._refill_asked.set()

    def _refill_forever(self) -> None:
        while not self._stopping:
            self._refill_asked.wait()
            self._refill_asked.clear()
            with self._lock:
                wanted, self._refill_wanted = self._refill_wanted, set()
            for template in wanted:
                try:
                    self._fill(template)
                except Exception:  # e.g. its template dropped meanwhile: the next create asks again
                    LOG.exception("Topping up the sandbox pool of %s failed", template)

    def _fill(self, template: str) -> None:
        """Clone `template` until its pool is full. The pool never counts as a use: an idle
        template expires with its pooled copies."""
        while not self._stopping:
            with self.platform.connect() as conn:
                if len(pooled_copies(conn, template)) >= self.settings.pool_size:
                    return
                if template_ready(conn, template) is not True:
                    return
            try:
                clone = self.copies.clone(template)
            except Exception:
                if self._still_ready(template):
                    raise
                return  # expired under the clone
            with platform_transaction(self.platform) as conn:
                kept = hold_template(conn, template)  # not expired since
                if kept:
                    add_copy(conn, clone, template, utc_now())
            if not kept:
                self.copies.drop(clone)
                return

    def templates(self) -> list[str]:
        with self.platform.connect() as conn:
            return sorted(template_rows(conn))

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
        ready = self._known_ready(org, seed)
        with platform_transaction(self.platform) as conn:
            if find_sandbox(conn, sandbox_id) is not None:
                raise SalesforceError(
                    f"A sandbox with id {sandbox_id} already exists",
                    error_code="DUPLICATE_VALUE",
                    status_code=409,  # the control plane's own REST answer to a taken name
                )
            if count_sandboxes(conn) >= self.settings.max_sandboxes:
                self._last_expiry = 0.0  # expire the idle ones before the next try
                raise SandboxLimitReached(
                    f"The limit of {self.settings.max_sandboxes} live sandboxes is reached: "
                    "delete one, or wait for idle ones to expire."
                )
            if ready and not use_template(conn, ready, now):
                self._ready.pop(ready, None)  # expired since it was seen ready
                ready = ""
            pooled = claim_copy(conn, ready) if ready else None
            row = replace(reservation, url=pooled, template=ready) if pooled else reservation
            insert_sandbox(conn, row)
        if pooled is not None:
            self._refill(ready)
            return self._materialize(row)
        try:
            row = self._attach_clone(sandbox_id, org, seed)
        except BaseException:
            with platform_transaction(self.platform) as conn:
                remove_sandbox(conn, reservation)
            raise
        return self._materialize(row)

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
            deadline = now - timedelta(seconds=self.settings.template_idle_seconds)
            doomed = self._retire_unused_templates(conn, used_before=deadline)
        for row in idle:
            with self._lock:
                live = self._live.pop(row.instance, None)
                self._pooled.pop(row.instance, None)
            self.calls.forget(row.id)
            if live is not None:
                self.copies.release(live.engine)
            self.copies.drop(row.url)
        self._drop_templates(doomed)
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
        """Stop the pool refills and release this process's engines. Sandboxes, the pool
        and templates stay: they belong to the platform database, not to this process."""
        self._stopping = True
        self._stopped.set()
        if self._sweeper is not None:
            self._sweeper.join()
        self._refill_asked.set()
        with self._lock:
            refiller = self._refiller
            live = [s for s in self._live.values() if not s.is_default]
            self._live = {self.default.instance: self.default}
        if refiller is not None:
            refiller.join()
        for sandbox in live:
            self.copies.release(sandbox.engine)
        self.copies.close()

    # -- episodes --------------------------------------------------------------------------

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
            undone = undo_all(conn, sandbox.schema.tables)
        origin = sandbox.clock.restart()
        self.calls.drop(sandbox.id)  # queued calls of the old episode go with the rest
        with platform_transaction(self.platform) as conn:
            begin_episode(conn, sandbox.id, origin, call_time(datetime.now(UTC)))
        return {
            "id": sandbox.id,
            "undoneWrites": undone,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }

    def call_log(self, sandbox_id: str) -> list[dict[str, object]]:
        sandbox = self.get(sandbox_id)
        self.calls.flush()
        with self.platform.connect() as conn:
            row = find_sandbox(conn, sandbox.id)
            since = row.log_since if row is not None else ""
            return calls(conn, sandbox.id, self.calls.retention, since)

    def diff(self, sandbox_id: str) -> dict[str, list[dict[str, Any]]]:
        """Records created, updated (field by field) and deleted since the last reset."""
        sandbox = self.get(sandbox_id)
        registry, tables = sandbox.schema.registry, sandbox.schema.tables
        created: list[dict[str, Any]] = []
        updated: list[dict[str, Any]] = []
        deleted: list[dict[str, Any]] = []
        with sandbox.engine.begin() as conn:  # one snapshot of journal and rows together
            for entry in touched_records(conn):
                sobject = registry.get(entry.sobject)
                current = fetch_row(conn, tables[entry.sobject], entry.record_id)
                if sobject is None or current is None:
                    continue
                head = {"type": sobject.name, "id": entry.record_id}
                if entry.before is None:
                    if not current["IsDeleted"]:
                        fields = {
                            f.name: to_json(f, current[f.name])
                            for f in sobject.fields
                            if current[f.name] is not None
                        }
                        created.append({**head, "fields": fields})
                    continue
                if current["IsDeleted"] and not entry.before["IsDeleted"]:
                    deleted.append(head)
                    continue
                changes = {
                    f.name: {
                        "before": to_json(f, entry.before[f.name]),
                        "after": to_json(f, current[f.name]),
                    }
                    for f in sobject.fields
                    if f.name not in AUDIT_FIELDS and entry.before[f.name] != current[f.name]
                }
                if changes:
                    updated.append({**head, "changes": changes})
        return {"created": created, "updated": updated, "deleted": deleted}

    def snapshot(self, sandbox_id: str, name: str) -> dict[str, Any]:
        """Save the sandbox's state under `name` (replacing one of that name), under the write
        lock: it holds exactly the writes committed before it."""
        sandbox = self.get(sandbox_id)
        if not SANDBOX_ID.match(name):
            raise SalesforceError(f"Invalid snapshot name: {name}", error_code="INVALID_INPUT")
        with write_transaction(sandbox.engine) as conn:
            take_snapshot(conn, sandbox.schema.tables, name, utc_now())
            names = snapshot_names(conn)
        with platform_transaction(self.platform) as conn:
            set_snapshots(conn, sandbox.id, names)
        sandbox.snapshots = names
        return {"id": sandbox.id, "snapshot": name}

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
            restored = restore_snapshot(conn, sandbox.schema.tables, name)
            if restored is None:
                raise NotFound(f"No snapshot named {name} in sandbox {sandbox.id}")
        return {
            "id": sandbox.id,
            "snapshot": name,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
