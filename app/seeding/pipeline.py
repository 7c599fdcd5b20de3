"""Seeding: generate an org's records, complete them as the platform would, and load them.

The content hash covers every value of every row, so the same seed prints the same hash on any
machine and any database.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, Engine, select

from app.metadata.model import SObjectDef
from app.metadata.registry import SchemaRegistry
from app.seeding.generate import generate_original_org
from app.seeding.loading import ORG_INFO, OrgStamp, ProgressCallback, Rows, replace_org_data
from app.seeding.pro import generate_b2b_org, generate_b2c_org
from app.seeding.standard_records import standard_records
from app.storage.derived import (
    ACCOUNT_SOURCES,
    ACTIVITIES,
    apply_auto_numbers,
    apply_derived,
    related_account,
)
from app.storage.tables import TableSet, field_columns

__all__ = ["ORG_INFO", "ProgressCallback", "Rows"]

# When the org "went live": the audit date of records the generator leaves undated.
ORG_EPOCH = datetime(2020, 1, 1, 0, 0, 0)
GENERATORS: dict[str, Callable[[int], Rows]] = {
    "original": generate_original_org,
    "b2b": generate_b2b_org,
    "b2c": generate_b2c_org,
}


@dataclass(frozen=True)
class SeedResult:
    org: str
    seed: int
    content_hash: str
    counts: dict[str, int]
    seconds: float


def complete_record(
    sobject: SObjectDef, record: dict[str, Any], number: int, admin_id: str
) -> dict[str, Any]:
    """A full row: every column present, defaults, audit fields and derived values filled."""
    row = {field.name: record.get(field.name, field.default) for field in sobject.fields}
    row["IsDeleted"] = False
    row["CreatedDate"] = row["CreatedDate"] or ORG_EPOCH
    row["CreatedById"] = row["CreatedById"] or admin_id
    row["LastModifiedDate"] = row["LastModifiedDate"] or row["CreatedDate"]
    row["LastModifiedById"] = row["LastModifiedById"] or row["CreatedById"]
    row["SystemModstamp"] = row["SystemModstamp"] or row["LastModifiedDate"]
    if sobject.field("OwnerId") is not None and not row["OwnerId"]:
        row["OwnerId"] = admin_id
    apply_auto_numbers(sobject, row, number)
    apply_derived(sobject, row)
    return row


def _canonical(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def content_hash(registry: SchemaRegistry, rows: Rows) -> str:
    digest = hashlib.sha256()
    for sobject in registry:
        # An org's metadata (its static resources) is no part of its data's hash.
        if sobject.name not in rows or sobject.metadata_component:
            continue
        digest.update(f"#{sobject.name}\n".encode())
        names = [field.name for field in sobject.fields]
        for row in rows.get(sobject.name, []):
            line = json.dumps([_canonical(row[name]) for name in names], ensure_ascii=False)
            digest.update(line.encode())
            digest.update(b"\n")
    return digest.hexdigest()


def build_rows(registry: SchemaRegistry, org: str, seed: int) -> Rows:
    """Generate the org and complete every record; no database involved."""
    generated = {**standard_records(org), **GENERATORS[org](seed)}
    users = generated.get("User", [])
    admin_id = users[0]["Id"] if users else ""
    rows: Rows = {}
    for sobject in registry:
        rows[sobject.name] = [
            complete_record(sobject, record, number, admin_id)
            for number, record in enumerate(generated.get(sobject.name, []), start=1)
        ]
    _relate_activities_to_accounts(rows)
    return rows


def _relate_activities_to_accounts(rows: Rows) -> None:
    """Each task's and event's AccountId, which reads the records it concerns (as
    app.services.platform_rules does for a write through the API)."""
    accounts = {
        row["Id"]: row["AccountId"]
        for name in ACCOUNT_SOURCES
        for row in rows.get(name, [])
        if row.get("AccountId")
    }
    for name in ACTIVITIES:
        for row in rows.get(name, []):
            if "AccountId" in row:
                row["AccountId"] = related_account(row, accounts.get)


def seed_org(
    engine: Engine,
    registry: SchemaRegistry,
    tables: TableSet,
    *,
    org: str,
    seed: int,
    on_progress: ProgressCallback | None = None,
) -> SeedResult:
    """Rebuild the data tables and load a freshly generated org into them."""
    started = time.perf_counter()
    rows = build_rows(registry, org, seed)
    digest = content_hash(registry, rows)
    replace_org_data(
        engine,
        tables,
        rows,
        stamp=OrgStamp(org=org, seed=seed, content_hash=digest),
        sequences={name: len(batch) for name, batch in rows.items()},
        on_progress=on_progress,
    )
    return SeedResult(
        org=org,
        seed=seed,
        content_hash=digest,
        counts={name: len(batch) for name, batch in rows.items()},
        seconds=time.perf_counter() - started,
    )


def stored_content_hash(
    conn: Connection, registry: SchemaRegistry, tables: TableSet, only: list[str] | None = None
) -> str:
    """The content hash of what a database holds now (the same hash seeding printed, if nothing
    changed since). `only` limits it to some objects."""
    rows: Rows = {}
    for sobject in registry:
        if only is not None and sobject.name not in only:
            continue
        table = tables[sobject.name]
        result = conn.execute(select(*field_columns(table)).order_by(table.c.Id)).mappings()
        rows[sobject.name] = [dict(row) for row in result]
    return content_hash(registry, rows)
