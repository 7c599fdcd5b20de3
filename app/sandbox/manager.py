"""The sandbox manager: creates, finds, resets, snapshots and deletes sandboxes.

A sandbox is a clone of a template, with its own engine, clock and call log. The template holds
the org freshly generated from the sandbox's seed, or, when the server's org was imported from a
dump (`localforce import`), that imported data whatever the seed: an imported org has no seed to
generate it from. The default sandbox is the server's own database and always exists. Clones are
taken from a small warm pool so creating a sandbox costs a checkout, not a copy.

Safe under concurrency: writes, reset, snapshot and restore of one sandbox are transactions
that hold its write lock (`write_transaction`), so they serialise and never see each other
half-done; delete waits for the requests in flight (each holds a lease) and refuses new ones.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select

from app.errors import NotFound, SalesforceError
from app.metadata.registry import SchemaRegistry
from app.metadata.values import to_json
from app.sandbox.calllog import CallLog
from app.sandbox.clock import SandboxClock, utc_now
from app.sandbox.copies import Copies
from app.storage.database import create_db_engine, write_transaction
from app.storage.journal import touched_records, undo_all
from app.storage.platform import IMPORTED_SOURCE_PREFIX, PLATFORM_REVISION, OrgInfo
from app.storage.records import fetch_row
from app.storage.snapshots import restore_snapshot, snapshot_names, take_snapshot
from app.storage.tables import TableSet

DEFAULT_ID = "default"
SANDBOX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
# Audit fields change on every write; a diff that listed them would bury the real changes.
AUDIT_FIELDS = frozenset({"LastModifiedDate", "LastModifiedById", "SystemModstamp"})
ORG_INFO = OrgInfo.__table__  # type: ignore[attr-defined]


class SandboxLimitReached(SalesforceError):
    error_code = "REQUEST_LIMIT_EXCEEDED"
    status_code = 403


class SandboxBusy(SalesforceError):
    error_code = "UNABLE_TO_LOCK_ROW"
    status_code = 409


# How long delete waits for a sandbox's requests in flight before it refuses.
DRAIN_SECONDS = 30.0


@dataclass
class Schema:
    registry: SchemaRegistry
    tables: TableSet


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
            return f"{self.org}_import_{self.imported[:12]}_p{version}"
        return f"{self.org}_{self.seed}_p{version}"


@dataclass
class Sandbox:
    id: str
    org: str
    seed: int
    url: str
    engine: Engine
    clock: SandboxClock
    schema: Schema
    # The template the sandbox was cloned from ("" for the default sandbox, which has none).
    template: str = ""
    created_at: datetime = field(default_factory=utc_now)
    last_used: float = field(default_factory=time.monotonic)
    log: CallLog = field(default_factory=CallLog)
    # Names of its snapshots (the snapshots themselves live in its database).
    snapshots: set[str] = field(default_factory=set)
    # Requests in flight: delete and expiry wait for them, and refuse new ones once closing.
    _in_flight: int = field(default=0, repr=False)
    _closing: bool = field(default=False, repr=False)
    _quiet: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_ID

    def lease(self) -> bool:
        """Count a request in; False once the sandbox is being deleted."""
        with self._quiet:
            if self._closing:
                return False
            self._in_flight += 1
            self.last_used = time.monotonic()
            return True

    def release(self) -> None:
        with self._quiet:
            self._in_flight -= 1
            self._quiet.notify_all()

    def close(self, timeout: float) -> bool:
        """Refuse new requests and wait up to `timeout` s for those in flight to end. False
        (and open again) if some are still running then."""
        with self._quiet:
            self._closing = True
            if self._quiet.wait_for(lambda: self._in_flight == 0, timeout=timeout):
                return True
            self._closing = False
            return False

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "org": self.org,
            "seed": self.seed,
            "clock": self.clock.describe(),
            "createdDate": self.created_at.isoformat() + "Z",
            "snapshots": sorted(self.snapshots),
        }


@dataclass
class SandboxSettings:
    max_sandboxes: int
    idle_seconds: float
    pool_size: int
    # Templates: how many distinct ones may exist, and after how long unused one is dropped.
    max_templates: int = 8
    template_idle_seconds: float = 3600.0


@dataclass
class TemplateUse:
    """A template this manager knows of: a lock for its build, and when it was last used."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)
    refilling: int = 0


class SandboxManager:
    def __init__(
        self,
        *,
        default: Sandbox,
        copies: Copies,
        schema_for: Callable[[str], Schema],
        build_template: Callable[[str, TemplateSpec], None],
        settings: SandboxSettings,
    ) -> None:
        self._sandboxes: dict[str, Sandbox] = {DEFAULT_ID: default}
        # Ids being created: taken under the lock, so two creates cannot claim one id.
        self._reserved: set[str] = set()
        self.copies = copies
        self.schema_for = schema_for
        self.build_template = build_template
        self.settings = settings
        # Guards the dictionaries only; never held across I/O, so lookups never wait on a build.
        self._lock = threading.RLock()
        self._pools: dict[str, list[str]] = {}
        self._refills: list[threading.Thread] = []
        self._templates: dict[str, TemplateUse] = {}

    def start(self) -> None:
        """Once the server's database is ready: learn the templates earlier runs left (they
        count toward the bound and expire like new ones) and the default sandbox's snapshots."""
        with self._lock:
            for url in self.copies.list_templates():
                self._templates.setdefault(url, TemplateUse())
        default = self._sandboxes[DEFAULT_ID]
        with default.engine.connect() as conn:
            default.snapshots = set(snapshot_names(conn))

    # -- lookup ---------------------------------------------------------------------------

    def get(self, sandbox_id: str) -> Sandbox:
        with self._lock:
            sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            raise NotFound(f"No sandbox with id {sandbox_id}")
        sandbox.last_used = time.monotonic()
        return sandbox

    def find(self, sandbox_id: str) -> Sandbox | None:
        with self._lock:
            return self._sandboxes.get(sandbox_id)

    def all(self) -> list[Sandbox]:
        self.expire_idle()
        with self._lock:
            return list(self._sandboxes.values())

    # -- templates and the warm pool -------------------------------------------------------

    def imported_dump(self, org: str) -> str | None:
        """The sha256 of the dump the server's database holds `org` from, if it was imported."""
        with self._sandboxes[DEFAULT_ID].engine.connect() as conn:
            source = conn.execute(
                select(ORG_INFO.c.source).where(ORG_INFO.c.org == org)
            ).scalar_one_or_none()
        if source is None or not source.startswith(IMPORTED_SOURCE_PREFIX):
            return None
        return str(source).removeprefix(IMPORTED_SOURCE_PREFIX)

    def _template(self, org: str, seed: int) -> str:
        """The template for `org` and `seed`, built on first use. Only requests for this same
        template wait for its build; the manager's lock is not held meanwhile."""
        spec = TemplateSpec(org=org, seed=seed, imported=self.imported_dump(org))
        url = self.copies.template_url(spec.key)
        with self._lock:
            use = self._templates.get(url)
            if use is None:
                self._make_room_for_template()
                use = self._templates[url] = TemplateUse()
            use.last_used = time.monotonic()
        with use.lock:
            if not self.copies.exists(url):
                try:
                    self.build_template(url, spec)
                except BaseException:
                    with self._lock:
                        self._templates.pop(url, None)
                    raise
        return url

    def _make_room_for_template(self) -> None:
        """Under the lock: drop the least recently used template no sandbox needs if the
        bound is reached; refuse if every template is in use."""
        if len(self._templates) < self.settings.max_templates:
            return
        idle = self._unused_templates()
        if not idle:
            raise SandboxLimitReached(
                f"The limit of {self.settings.max_templates} sandbox templates (distinct orgs "
                "and seeds) is reached and every one is in use: delete sandboxes of another seed "
                "first, or raise LOCALFORCE_MAX_TEMPLATES."
            )
        self._drop_template(min(idle, key=lambda url: self._templates[url].last_used))

    def _unused_templates(self) -> list[str]:
        in_use = {s.template for s in self._sandboxes.values()}
        return [
            url
            for url, use in self._templates.items()
            if url not in in_use and use.refilling == 0 and not use.lock.locked()
        ]

    def _drop_template(self, url: str) -> None:
        """Under the lock: forget a template and remove it with its pooled copies."""
        self._templates.pop(url, None)
        for copy in self._pools.pop(url, []):
            self.copies.drop(copy)
        self.copies.drop(url)

    def _take_clone(self, template: str) -> str:
        with self._lock:
            pool = self._pools.setdefault(template, [])
            url = pool.pop() if pool else None
        if url is None:
            url = self.copies.clone(template)
        self._refill(template)
        return url

    def _refill(self, template: str) -> None:
        if self.settings.pool_size <= 0:
            return
        with self._lock:
            use = self._templates.get(template)
            if use is None:
                return
            use.refilling += 1

        def fill() -> None:
            try:
                while True:
                    with self._lock:
                        if template not in self._templates:
                            return
                        if len(self._pools.get(template, [])) >= self.settings.pool_size:
                            return
                    clone = self.copies.clone(template)
                    with self._lock:
                        self._pools.setdefault(template, []).append(clone)
            finally:
                with self._lock:
                    use.refilling -= 1

        thread = threading.Thread(target=fill, name="sandbox-pool", daemon=True)
        self._refills = [t for t in self._refills if t.is_alive()] + [thread]
        thread.start()

    # -- lifecycle -------------------------------------------------------------------------

    def create(
        self,
        *,
        sandbox_id: str | None,
        org: str,
        seed: int,
        clock: SandboxClock,
    ) -> Sandbox:
        self.expire_idle()
        sandbox_id = sandbox_id or f"sb{uuid.uuid4().hex[:10]}"
        if not SANDBOX_ID.match(sandbox_id):
            raise SalesforceError(
                f"Invalid sandbox id: {sandbox_id}. Use 1 to 40 letters, digits, '-' or '_'.",
                error_code="INVALID_INPUT",
            )
        schema = self.schema_for(org)
        with self._lock:
            if sandbox_id in self._sandboxes or sandbox_id in self._reserved:
                raise SalesforceError(
                    f"A sandbox with id {sandbox_id} already exists", error_code="DUPLICATE_VALUE"
                )
            if len(self._sandboxes) + len(self._reserved) >= self.settings.max_sandboxes:
                raise SandboxLimitReached(
                    f"The limit of {self.settings.max_sandboxes} live sandboxes is reached: "
                    "delete one, or wait for idle ones to expire."
                )
            self._reserved.add(sandbox_id)
        try:
            template = self._template(org, seed)
            url = self._take_clone(template)
            sandbox = Sandbox(
                id=sandbox_id,
                org=org,
                seed=seed,
                url=url,
                engine=create_db_engine(url),
                clock=clock,
                schema=schema,
                template=template,
            )
            with self._lock:
                self._sandboxes[sandbox_id] = sandbox
        finally:
            with self._lock:
                self._reserved.discard(sandbox_id)
        return sandbox

    def delete(self, sandbox_id: str) -> None:
        """Remove a sandbox once its requests in flight have ended; later requests with its
        tokens answer INVALID_SESSION_ID."""
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
        with self._lock:
            if self._sandboxes.get(sandbox_id) is not sandbox:
                raise NotFound(f"No sandbox with id {sandbox_id}")
            del self._sandboxes[sandbox_id]
        self._discard(sandbox)

    def _discard(self, sandbox: Sandbox) -> None:
        sandbox.engine.dispose()
        self.copies.drop(sandbox.url)
        with self._lock:
            use = self._templates.get(sandbox.template)
            if use is not None:
                use.last_used = time.monotonic()

    def expire_idle(self) -> None:
        """Drop sandboxes unused for the idle time (never one with a request in flight), then
        templates that no sandbox has needed for the template idle time."""
        now = time.monotonic()
        deadline = now - self.settings.idle_seconds
        with self._lock:
            idle = [
                s for s in self._sandboxes.values() if not s.is_default and s.last_used < deadline
            ]
        expired = []
        for sandbox in idle:
            if sandbox.close(timeout=0):
                with self._lock:
                    if self._sandboxes.get(sandbox.id) is sandbox:
                        del self._sandboxes[sandbox.id]
                        expired.append(sandbox)
        for sandbox in expired:
            self._discard(sandbox)
        template_deadline = now - self.settings.template_idle_seconds
        with self._lock:
            for url in self._unused_templates():
                if self._templates[url].last_used < template_deadline:
                    self._drop_template(url)

    def templates(self) -> list[str]:
        with self._lock:
            return sorted(self._templates)

    def close(self) -> None:
        """Drop every clone this process made (the default sandbox's database and the
        templates stay)."""
        with self._lock:
            for use in self._templates.values():
                use.refilling += 1  # pool refills stop at their next step
        for thread in self._refills:
            thread.join()
        with self._lock:
            doomed = [s for s in self._sandboxes.values() if not s.is_default]
            pooled = [url for urls in self._pools.values() for url in urls]
            self._sandboxes = {k: v for k, v in self._sandboxes.items() if v.is_default}
            self._pools.clear()
        for sandbox in doomed:
            self._discard(sandbox)
        for url in pooled:
            self.copies.drop(url)

    # -- episodes --------------------------------------------------------------------------

    def reset(self, sandbox_id: str) -> dict[str, Any]:
        """Undo every write since the last reset, restart the clock, clear the call log.

        It holds the sandbox's write lock: writes in flight finish first, later ones wait."""
        sandbox = self.get(sandbox_id)
        started = time.perf_counter()
        with write_transaction(sandbox.engine) as conn:
            undone = undo_all(conn, sandbox.schema.tables)
        sandbox.clock.restart()
        sandbox.log.clear()
        return {
            "id": sandbox.id,
            "undoneWrites": undone,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }

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
        sandbox.snapshots.add(name)
        return {"id": sandbox.id, "snapshot": name}

    def restore(self, sandbox_id: str, name: str) -> dict[str, Any]:
        """Bring the sandbox back to snapshot `name`, in one transaction under the write lock."""
        sandbox = self.get(sandbox_id)
        started = time.perf_counter()
        with write_transaction(sandbox.engine) as conn:
            restored = restore_snapshot(conn, sandbox.schema.tables, name)
            if restored is None:
                raise NotFound(f"No snapshot named {name} in sandbox {sandbox.id}")
        return {
            "id": sandbox.id,
            "snapshot": name,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
