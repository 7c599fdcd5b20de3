"""The record of a sandbox's episode: the calls it made (its call log), the records it changed
since its last reset (the diff), and named snapshots of its data."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from app.errors import SalesforceError
from app.metadata.values import to_json
from app.sandbox.calllog import CallQueue, calls
from app.sandbox.clock import utc_now
from app.sandbox.model import SANDBOX_ID, Sandbox
from app.sandbox.registry import find_sandbox, set_snapshot_schemas, set_snapshots
from app.storage.database import platform_transaction, write_transaction
from app.storage.journal import touched_records
from app.storage.records import fetch_row
from app.storage.snapshots import snapshot_names, take_snapshot

# Audit fields change on every write; a diff that listed them would bury the real changes.
AUDIT_FIELDS = frozenset({"LastModifiedDate", "LastModifiedById", "SystemModstamp"})


class EpisodeRecord:
    """Reads a sandbox's record by its id (`lookup` finds the sandbox, or raises NotFound), and
    takes its snapshots; the calls are queued and written by `calls`."""

    def __init__(
        self, *, platform: Engine, lookup: Callable[[str], Sandbox], calls: CallQueue
    ) -> None:
        self.platform = platform
        self.lookup = lookup
        self.calls = calls

    def call_log(self, sandbox_id: str) -> list[dict[str, object]]:
        """The calls of the sandbox's episode, its calls queued here included."""
        sandbox = self.lookup(sandbox_id)
        self.calls.flush()
        with self.platform.connect() as conn:
            row = find_sandbox(conn, sandbox.id)
            since = row.log_since if row is not None else ""
            return calls(conn, sandbox.id, self.calls.retention, since)

    def diff(self, sandbox_id: str) -> dict[str, Any]:
        """Records created, updated (field by field) and deleted since the last reset; and the
        schema's changes, where the sandbox made some."""
        sandbox = self.lookup(sandbox_id)
        registry, tables = sandbox.schema.registry, sandbox.schema.tables
        created: list[dict[str, Any]] = []
        updated: list[dict[str, Any]] = []
        deleted: list[dict[str, Any]] = []
        with sandbox.engine.begin() as conn:  # one snapshot of journal and rows together
            for entry in touched_records(conn):
                sobject = registry.get(entry.sobject)
                if sobject is None:  # an object the sandbox removed since
                    continue
                current = fetch_row(conn, tables[entry.sobject], entry.record_id)
                if current is None:
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
                        "before": to_json(f, entry.before.get(f.name)),
                        "after": to_json(f, current[f.name]),
                    }
                    for f in sobject.fields
                    if f.name not in AUDIT_FIELDS and entry.before.get(f.name) != current[f.name]
                }
                if changes:
                    updated.append({**head, "changes": changes})
        found: dict[str, Any] = {"created": created, "updated": updated, "deleted": deleted}
        if sandbox.schema.changes:
            # Custom fields added ({object: {field: spec}}) and removed ({object: [fields]}).
            found["schema"] = json.loads(sandbox.schema.changes)
        return found

    def snapshot(self, sandbox_id: str, name: str) -> dict[str, Any]:
        """Save the sandbox's state under `name` (replacing one of that name), under the write
        lock: it holds exactly the writes committed before it."""
        sandbox = self.lookup(sandbox_id)
        if not SANDBOX_ID.match(name):
            raise SalesforceError(f"Invalid snapshot name: {name}", error_code="INVALID_INPUT")
        with write_transaction(sandbox.engine) as conn:
            take_snapshot(conn, sandbox.schema.tables, name, utc_now())
            names = snapshot_names(conn)
            with platform_transaction(self.platform) as platform:
                set_snapshots(platform, sandbox.id, names)
                # The schema it was taken under comes back with it (under the write lock, no
                # schema change comes between).
                row = find_sandbox(platform, sandbox.id)
                if row is not None:
                    schemas = json.loads(row.snapshot_schemas)
                    schemas[name] = row.schema_changes
                    set_snapshot_schemas(platform, sandbox.id, schemas)
        sandbox.snapshots = names
        return {"id": sandbox.id, "snapshot": name}
