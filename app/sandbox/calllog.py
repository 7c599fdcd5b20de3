"""The calls an episode made, kept in the platform database (every worker appends to the same
log) with a bound per sandbox: past it, the oldest entries go first.

A request does not wait for its entry: entries are queued (`CallQueue`) and written in
batches every FLUSH_SECONDS, and before this process reads a log."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import parse_qs

from sqlalchemy import Connection, Engine, delete, select

from app.storage.backends import backend_for
from app.storage.pending import WriteQueue, storable
from app.storage.platform import CallRecord

CALLS = CallRecord.__table__  # type: ignore[attr-defined]


FLUSH_SECONDS = 0.05


@dataclass(frozen=True)
class Call:
    """A call as the request left it: what costs time to read (the clock's reading as text,
    the SOQL in the query string) is worked out when the log is written, off the request."""

    ended: datetime
    method: str
    path: str
    query_string: str  # as sent, percent-encoded
    status: int
    durationMs: float  # camelCase: the JSON key clients read

    @property
    def time(self) -> str:
        return call_time(self.ended)

    @property
    def query(self) -> str | None:
        """The SOQL or SOSL the call sent in `q`, if any."""
        return parse_qs(self.query_string).get("q", [None])[0]


def add_calls(
    conn: Connection, calls: list[tuple[str, Call]], retention: int, schedule: TrimSchedule
) -> None:
    """Append (sandbox id, call) pairs, then trim the logs the schedule says are due."""
    if not calls:
        return
    backend_for(conn.dialect.name).append_rows(
        conn,
        CALLS,
        [
            {
                "sandbox_id": sandbox_id,
                "time": call.time,
                "method": storable(call.method),
                "path": storable(call.path),
                "query": storable(call.query),
                "status": call.status,
                "duration_ms": call.durationMs,
            }
            for sandbox_id, call in calls
        ],
    )
    for sandbox_id in schedule.due(sandbox_id for sandbox_id, _ in calls):
        trim(conn, sandbox_id, retention)


class TrimSchedule:
    """When each sandbox's log is trimmed: after every quarter of its bound that this process
    wrote. A trim walks the newest `retention` entries of the log, so trimming every log a
    batch touched, on every batch, held the platform's write lock for most of each second
    under 64 agents; this way a call costs four entries' walk, and a log holds at most a
    quarter more than its bound per worker (a read answers the newest `retention` alone)."""

    def __init__(self, retention: int) -> None:
        self.every = max(1, retention // 4)
        self._written: dict[str, int] = {}
        self._lock = threading.Lock()

    def due(self, sandbox_ids: Iterable[str]) -> list[str]:
        """Count one call written for each id given; answer the sandboxes due a trim now."""
        due = []
        with self._lock:
            for sandbox_id in sandbox_ids:
                written = self._written.get(sandbox_id, 0) + 1
                if written >= self.every:
                    due.append(sandbox_id)
                    written = 0
                self._written[sandbox_id] = written
        return list(dict.fromkeys(due))  # once each, however many calls a batch held

    def forget(self, sandbox_id: str) -> None:
        """The sandbox's log was cleared or the sandbox is gone."""
        with self._lock:
            self._written.pop(sandbox_id, None)


def trim(conn: Connection, sandbox_id: str, retention: int) -> None:
    """Keep only the newest `retention` calls of the sandbox."""
    cutoff = conn.execute(
        select(CALLS.c.seq)
        .where(CALLS.c.sandbox_id == sandbox_id)
        .order_by(CALLS.c.seq.desc())
        .offset(retention)
        .limit(1)
    ).scalar_one_or_none()
    if cutoff is not None:
        conn.execute(delete(CALLS).where(CALLS.c.sandbox_id == sandbox_id, CALLS.c.seq <= cutoff))


def call_time(moment: datetime) -> str:
    """How the log writes a time: UTC, ISO 8601 to the millisecond, with Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def calls(
    conn: Connection, sandbox_id: str, retention: int, since: str = ""
) -> list[dict[str, object]]:
    """The newest `retention` calls that ended after `since`, in the order they ended
    (workers write theirs in batches, so the order they were written in is not it)."""
    rows = conn.execute(
        select(
            CALLS.c.time,
            CALLS.c.method,
            CALLS.c.path,
            CALLS.c.query,
            CALLS.c.status,
            CALLS.c.duration_ms,
        )
        .where(CALLS.c.sandbox_id == sandbox_id, CALLS.c.time > since)
        .order_by(CALLS.c.time.desc(), CALLS.c.seq.desc())
        .limit(retention)
    ).all()
    return [
        {"time": t, "method": m, "path": p, "query": q, "status": s, "durationMs": d}
        for t, m, p, q, s, d in reversed(rows)
    ]


def json_lines(entries: list[dict[str, object]]) -> str:
    return "".join(json.dumps(entry) + "\n" for entry in entries)


class CallQueue(WriteQueue[Call]):
    """This process's calls on their way to the platform database: queued as requests end,
    written in batches (`flush`), each sandbox's log trimmed to `retention` entries (the
    oldest go first). A reset drops its sandbox's calls not yet written."""

    def __init__(self, platform: Engine, retention: int) -> None:
        super().__init__(platform)
        self.retention = retention
        self._trims = TrimSchedule(retention)

    def write(self, conn: Connection, rows: list[tuple[str, Call]]) -> None:
        add_calls(conn, rows, self.retention, self._trims)

    def forget(self, sandbox_id: str) -> None:
        """The sandbox is gone (its log went with its row)."""
        self._trims.forget(sandbox_id)
