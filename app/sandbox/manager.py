"""The sandbox manager: creates, finds, resets, snapshots and deletes sandboxes.

A sandbox is a clone of a template, with its own engine, clock and call log. The template holds
the org freshly generated from the sandbox's seed, or, when the server's org was imported from a
dump (`localforce import`), that imported data whatever the seed: an imported org has no seed to
generate it from. The default sandbox is the server's own database and always exists. Clones are
taken from a small warm pool so creating a sandbox costs a checkout, not a copy.
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
from app.storage.database import create_db_engine
from app.storage.journal import touched_records, undo_all
from app.storage.platform import IMPORTED_SOURCE_PREFIX, OrgInfo
from app.storage.records import fetch_row
from app.storage.tables import TableSet

DEFAULT_ID = "default"
SANDBOX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
# Audit fields change on every write; a diff that listed them would bury the real changes.
AUDIT_FIELDS = frozenset({"LastModifiedDate", "LastModifiedById", "SystemModstamp"})
ORG_INFO = OrgInfo.__table__  # type: ignore[attr-defined]


class SandboxLimitReached(SalesforceError):
    error_code = "REQUEST_LIMIT_EXCEEDED"
    status_code = 403


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
        if self.imported is not None:
            return f"{self.org}_import_{self.imported[:12]}"
        return f"{self.org}_{self.seed}"


@dataclass
class Sandbox:
    id: str
    org: str
    seed: int
    url: str
    engine: Engine
    clock: SandboxClock
    schema: Schema
    created_at: datetime = field(default_factory=utc_now)
    last_used: float = field(default_factory=time.monotonic)
    log: CallLog = field(default_factory=CallLog)
    snapshots: dict[str, str] = field(default_factory=dict)

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_ID

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
        self.copies = copies
        self.schema_for = schema_for
        self.build_template = build_template
        self.settings = settings
        self._lock = threading.RLock()
        self._pools: dict[str, list[str]] = {}
        self._refills: list[threading.Thread] = []

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
        spec = TemplateSpec(org=org, seed=seed, imported=self.imported_dump(org))
        url = self.copies.template_url(spec.key)
        with self._lock:
            if not self.copies.exists(url):
                self.build_template(url, spec)
        return url

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

        def fill() -> None:
            while True:
                with self._lock:
                    if len(self._pools.get(template, [])) >= self.settings.pool_size:
                        return
                clone = self.copies.clone(template)
                with self._lock:
                    self._pools.setdefault(template, []).append(clone)

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
            if sandbox_id in self._sandboxes:
                raise SalesforceError(
                    f"A sandbox with id {sandbox_id} already exists", error_code="DUPLICATE_VALUE"
                )
            if len(self._sandboxes) >= self.settings.max_sandboxes:
                raise SandboxLimitReached(
                    f"The limit of {self.settings.max_sandboxes} live sandboxes is reached: "
                    "delete one, or wait for idle ones to expire."
                )
        url = self._take_clone(self._template(org, seed))
        sandbox = Sandbox(
            id=sandbox_id,
            org=org,
            seed=seed,
            url=url,
            engine=create_db_engine(url),
            clock=clock,
            schema=schema,
        )
        with self._lock:
            self._sandboxes[sandbox_id] = sandbox
        return sandbox

    def delete(self, sandbox_id: str) -> None:
        sandbox = self.get(sandbox_id)
        if sandbox.is_default:
            raise SalesforceError(
                "The default sandbox cannot be deleted; reset it instead.",
                error_code="INVALID_OPERATION",
            )
        with self._lock:
            self._sandboxes.pop(sandbox_id, None)
        self._discard(sandbox)

    def _discard(self, sandbox: Sandbox) -> None:
        sandbox.engine.dispose()
        for url in [sandbox.url, *sandbox.snapshots.values()]:
            self.copies.drop(url)

    def expire_idle(self) -> None:
        deadline = time.monotonic() - self.settings.idle_seconds
        with self._lock:
            idle = [
                s for s in self._sandboxes.values() if not s.is_default and s.last_used < deadline
            ]
            for sandbox in idle:
                self._sandboxes.pop(sandbox.id, None)
        for sandbox in idle:
            self._discard(sandbox)

    def close(self) -> None:
        """Drop every clone this process made (the default sandbox's database stays)."""
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
        """Undo every write since the last reset, restart the clock, clear the call log."""
        sandbox = self.get(sandbox_id)
        started = time.perf_counter()
        with sandbox.engine.begin() as conn:
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
        with sandbox.engine.connect() as conn:
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
        sandbox = self.get(sandbox_id)
        if not SANDBOX_ID.match(name):
            raise SalesforceError(f"Invalid snapshot name: {name}", error_code="INVALID_INPUT")
        sandbox.engine.dispose()  # PostgreSQL copies a database only while nobody is connected
        url = self.copies.clone(sandbox.url)
        previous = sandbox.snapshots.pop(name, None)
        sandbox.snapshots[name] = url
        if previous is not None:
            self.copies.drop(previous)
        return {"id": sandbox.id, "snapshot": name}

    def restore(self, sandbox_id: str, name: str) -> dict[str, Any]:
        sandbox = self.get(sandbox_id)
        source = sandbox.snapshots.get(name)
        if source is None:
            raise NotFound(f"No snapshot named {name} in sandbox {sandbox.id}")
        started = time.perf_counter()
        sandbox.engine.dispose()
        self.copies.replace(sandbox.url, source)
        return {
            "id": sandbox.id,
            "snapshot": name,
            "durationMs": round((time.perf_counter() - started) * 1000, 3),
        }
