"""The platform database's view of sandboxes: which exist, the warm copies, the templates.

Every worker and replica reads and writes these rows, so any of them serves any sandbox and a
restart loses nothing. Functions take a connection and never commit; `platform_transaction`
(storage.database) opens the short write transactions they run in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from app.storage.bulk_jobs import delete_sandbox_jobs
from app.storage.driver_reads import read_all
from app.storage.platform import (
    AuthSession,
    CallRecord,
    CursorRecord,
    CursorRows,
    SandboxRecord,
    TemplateRecord,
    WarmCopy,
)
from app.storage.upserts import upsert_into

SANDBOXES = SandboxRecord.__table__  # type: ignore[attr-defined]
COPIES = WarmCopy.__table__  # type: ignore[attr-defined]
TEMPLATES = TemplateRecord.__table__  # type: ignore[attr-defined]
SESSIONS = AuthSession.__table__  # type: ignore[attr-defined]
CALLS = CallRecord.__table__  # type: ignore[attr-defined]
CURSORS = CursorRecord.__table__  # type: ignore[attr-defined]
CURSOR_ROWS = CursorRows.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SandboxRow:
    id: str
    instance: str
    org: str
    seed: int
    url: str
    template: str
    clock_start: datetime | None
    clock_pinned: bool
    clock_origin: datetime
    created_at: datetime
    last_used: datetime
    snapshots: str = "[]"
    log_since: str = ""
    # SHA-256 of the password a login into it needs ("" for the default sandbox, which keeps
    # the server's own login rules).
    password_hash: str = ""
    # Its changes to its org's schema (canonical JSON, "" for none), and each snapshot's.
    schema_changes: str = ""
    snapshot_schemas: str = "{}"


def _row(mapping: object) -> SandboxRow:
    return SandboxRow(**dict(mapping))  # type: ignore[call-overload]


# Built once and read on the driver's cursor: every session lookup reads a sandbox's row.
_FIND_SANDBOX = select(SANDBOXES).where(SANDBOXES.c.id == bindparam("sandbox_id"))
_SANDBOX_COLUMNS = tuple(column.name for column in _FIND_SANDBOX.selected_columns)


def find_sandbox(conn: Connection, sandbox_id: str) -> SandboxRow | None:
    found = read_all(conn, _FIND_SANDBOX, {"sandbox_id": sandbox_id})
    return _row(zip(_SANDBOX_COLUMNS, found[0], strict=True)) if found else None


def all_sandboxes(conn: Connection) -> list[SandboxRow]:
    rows = conn.execute(select(SANDBOXES).order_by(SANDBOXES.c.created_at, SANDBOXES.c.id))
    return [_row(row) for row in rows.mappings()]


def count_sandboxes(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(SANDBOXES)).scalar_one())


def insert_sandbox(conn: Connection, row: SandboxRow) -> bool:
    """Reserve the row's id; False if it is taken (by a create on another host a moment
    before, too: the insert is the check, so two can never both pass it)."""
    return _insert_if_absent(conn, SANDBOXES, row.__dict__)


def _insert_if_absent(conn: Connection, table: Any, values: dict[str, Any]) -> bool:
    """Insert unless the key exists (workers and hosts starting together may both try);
    whether this call inserted it."""
    statement = upsert_into(conn.dialect.name, table).values(**values).on_conflict_do_nothing()
    # RETURNING says it: an INSERT ... ON CONFLICT's rowcount is -1 through psycopg.
    key = next(iter(table.primary_key.columns))
    return conn.execute(statement.returning(key)).first() is not None


def put_default(conn: Connection, row: SandboxRow) -> None:
    """The default sandbox is the server's own database, described anew at each start."""
    _insert_if_absent(conn, SANDBOXES, row.__dict__)
    current = find_sandbox(conn, row.id)
    assert current is not None
    # What the server's own database holds stays with it across restarts: its schema too.
    keep = {
        "instance": current.instance,
        "created_at": current.created_at,
        "schema_changes": current.schema_changes,
        "snapshot_schemas": current.snapshot_schemas,
    }
    conn.execute(
        update(SANDBOXES)
        .where(SANDBOXES.c.id == row.id)
        .values(**{**row.__dict__, **keep, "clock_origin": current.clock_origin})
    )


def remove_sandbox(conn: Connection, row: SandboxRow) -> None:
    """Forget a sandbox and everything that pointed at it: its sessions, cursors, call log,
    Bulk jobs."""
    conn.execute(delete(SANDBOXES).where(SANDBOXES.c.instance == row.instance))
    delete_sandbox_jobs(conn, row.id)
    conn.execute(delete(SESSIONS).where(SESSIONS.c.sandbox_id == row.id))
    conn.execute(delete(CALLS).where(CALLS.c.sandbox_id == row.id))
    cursor_seqs = select(CURSORS.c.seq).where(CURSORS.c.sandbox_instance == row.instance)
    conn.execute(delete(CURSOR_ROWS).where(CURSOR_ROWS.c.cursor_seq.in_(cursor_seqs)))
    conn.execute(delete(CURSORS).where(CURSORS.c.sandbox_instance == row.instance))


def touch_sandbox(conn: Connection, sandbox_id: str, now: datetime) -> None:
    conn.execute(update(SANDBOXES).where(SANDBOXES.c.id == sandbox_id).values(last_used=now))


def set_snapshots(conn: Connection, sandbox_id: str, names: list[str]) -> None:
    conn.execute(
        update(SANDBOXES).where(SANDBOXES.c.id == sandbox_id).values(snapshots=json.dumps(names))
    )


def set_schema_changes(
    conn: Connection, sandbox_id: str, after: str, *, before: str | None = None
) -> bool:
    """Set the sandbox's schema changes. With `before`, only if they still are that: False
    (and nothing written) when another change came first, and the caller reads them again."""
    statement = update(SANDBOXES).where(SANDBOXES.c.id == sandbox_id)
    if before is not None:
        statement = statement.where(SANDBOXES.c.schema_changes == before)
    changed = conn.execute(statement.values(schema_changes=after).returning(SANDBOXES.c.id)).first()
    return changed is not None


def set_snapshot_schemas(conn: Connection, sandbox_id: str, schemas: dict[str, str]) -> None:
    """Each snapshot's schema changes, by its name."""
    conn.execute(
        update(SANDBOXES)
        .where(SANDBOXES.c.id == sandbox_id)
        .values(snapshot_schemas=json.dumps(schemas, sort_keys=True))
    )


def set_url(conn: Connection, sandbox_id: str, url: str, template: str) -> None:
    conn.execute(
        update(SANDBOXES).where(SANDBOXES.c.id == sandbox_id).values(url=url, template=template)
    )


def begin_episode(
    conn: Connection, sandbox_id: str, clock_origin: datetime, log_since: str
) -> None:
    """After a reset: the clock runs from `clock_origin`, the log shows calls after it."""
    conn.execute(
        update(SANDBOXES)
        .where(SANDBOXES.c.id == sandbox_id)
        .values(clock_origin=clock_origin, log_since=log_since)
    )


def idle_sandboxes(conn: Connection, before: datetime, keep: str) -> list[SandboxRow]:
    rows = conn.execute(
        select(SANDBOXES).where(SANDBOXES.c.last_used < before, SANDBOXES.c.id != keep)
    )
    return [_row(row) for row in rows.mappings()]


# -- the warm pool ----------------------------------------------------------------------------


def add_copy(conn: Connection, url: str, template: str, now: datetime) -> None:
    conn.execute(insert(COPIES).values(url=url, template=template, created_at=now))


def claim_copy(conn: Connection, template: str) -> str | None:
    """Take one ready copy of `template` out of the pool, or None."""
    url = conn.execute(
        select(COPIES.c.url).where(COPIES.c.template == template).limit(1)
    ).scalar_one_or_none()
    if url is None:
        return None
    taken = conn.execute(delete(COPIES).where(COPIES.c.url == url)).rowcount
    return str(url) if taken == 1 else None  # another worker took it first


def pooled_copies(conn: Connection, template: str | None = None) -> list[str]:
    statement = select(COPIES.c.url)
    if template is not None:
        statement = statement.where(COPIES.c.template == template)
    return list(conn.execute(statement).scalars())


def forget_copies(conn: Connection, template: str) -> list[str]:
    urls = pooled_copies(conn, template)
    conn.execute(delete(COPIES).where(COPIES.c.template == template))
    return urls


def referenced_urls(conn: Connection) -> set[str]:
    """Every copy some row points at: live sandboxes and pooled copies (the default sandbox,
    the server's own database, is no copy: it has no template)."""
    cloned = select(SANDBOXES.c.url).where(SANDBOXES.c.template != "")
    return set(conn.execute(cloned).scalars()) | set(pooled_copies(conn))


# -- templates --------------------------------------------------------------------------------


def claim_template_build(conn: Connection, url: str, now: datetime, stale: timedelta) -> bool:
    """True if this caller is to build template `url` (no row, or a build abandoned longer
    than `stale` ago); False if it is ready or another worker is building it. Each claim is
    one statement, so of the hosts that ask at once exactly one is told to build."""
    if _insert_if_absent(conn, TEMPLATES, {"url": url, "ready": False, "last_used": now}):
        return True
    abandoned = conn.execute(
        update(TEMPLATES)
        .where(
            TEMPLATES.c.url == url,
            TEMPLATES.c.ready.is_(False),
            TEMPLATES.c.last_used < now - stale,
        )
        .values(last_used=now)
    )
    return bool(abandoned.rowcount == 1)


def template_ready(conn: Connection, url: str) -> bool | None:
    """True ready, False being built, None unknown."""
    ready = conn.execute(
        select(TEMPLATES.c.ready).where(TEMPLATES.c.url == url)
    ).scalar_one_or_none()
    return None if ready is None else bool(ready)


def mark_template(conn: Connection, url: str, now: datetime, *, ready: bool) -> None:
    conn.execute(update(TEMPLATES).where(TEMPLATES.c.url == url).values(ready=ready, last_used=now))


def use_template(conn: Connection, url: str, now: datetime) -> bool:
    """Note a use of template `url` (its last use: now) if it is ready; False if it is not
    (being built, being dropped, or gone). On PostgreSQL its row stays locked until the
    transaction ends: an expiry of the template waits for it, then sees the use."""
    used = conn.execute(
        update(TEMPLATES)
        .where(TEMPLATES.c.url == url, TEMPLATES.c.ready.is_(True))
        .values(last_used=now)
    )
    return used.rowcount == 1


def hold_template(conn: Connection, url: str) -> bool:
    """Whether template `url` is ready, its row locked as `use_template` locks it but not
    counted as a use: what the warm pool checks before adding a copy of it."""
    held = conn.execute(
        select(TEMPLATES.c.url)
        .where(TEMPLATES.c.url == url, TEMPLATES.c.ready.is_(True))
        .with_for_update()
    ).first()
    return held is not None


def lock_templates(conn: Connection, used_before: datetime) -> dict[str, datetime]:
    """The ready templates last used before `used_before`, and when, locked until the
    transaction ends. A create that used one meanwhile is waited for, and leaves it out."""
    rows = conn.execute(
        select(TEMPLATES.c.url, TEMPLATES.c.last_used)
        .where(TEMPLATES.c.ready.is_(True), TEMPLATES.c.last_used < used_before)
        .with_for_update()
    )
    return {str(url): when for url, when in rows}


def retire_template(conn: Connection, url: str, now: datetime) -> list[str]:
    """Take template `url` out of service before its storage is dropped: it reads as being
    built (creates wait for it; none starts building it anew, nor uses it) and its pooled
    copies are forgotten. Returns those copies, to drop with it."""
    conn.execute(update(TEMPLATES).where(TEMPLATES.c.url == url).values(ready=False, last_used=now))
    return forget_copies(conn, url)


def register_template(conn: Connection, url: str, now: datetime) -> None:
    """A ready template found on disk or in the server that no row names yet."""
    _insert_if_absent(conn, TEMPLATES, {"url": url, "ready": True, "last_used": now})


def forget_template(conn: Connection, url: str) -> None:
    conn.execute(delete(TEMPLATES).where(TEMPLATES.c.url == url))


def template_rows(conn: Connection) -> dict[str, datetime]:
    """Every ready template and when it was last used."""
    rows = conn.execute(
        select(TEMPLATES.c.url, TEMPLATES.c.last_used).where(TEMPLATES.c.ready.is_(True))
    )
    return {str(url): when for url, when in rows}


def templates_in_use(conn: Connection) -> set[str]:
    return set(conn.execute(select(SANDBOXES.c.template).distinct()).scalars())
