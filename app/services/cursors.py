"""Query cursors: the rest of a result, kept in the platform database while a client pages.

A locator is `<01g id>-<offset of the next batch>`. The locator is recorded when the query runs;
the rows after the first batch, each batch with its child subqueries' rows, stay in the memory
of the worker that ran the query, and are spilled to the database for every worker half a second
later if the locator is still open (`spill`, off the request; open cursors then cost no lasting
memory). So a client that pages through a result on one connection (as clients do) reads no
rows back and usually costs no writes; another worker asked for a batch before the rows are
written waits for them. As in Salesforce, a user has at most
`per_user` open locators per sandbox (opening one more releases that user's oldest) and a
locator unused for `idle_seconds` expires; either answers INVALID_QUERY_LOCATOR.
"""

from __future__ import annotations

import json
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select, update

from app.errors import SalesforceError
from app.sandbox.clock import utc_now
from app.services.numbers import parse_count
from app.soql.date_literals import OrgCalendar
from app.soql.execute import ResultRows, joined
from app.storage.database import platform_transaction
from app.storage.ids import make_id, normalize_id, record_number
from app.storage.platform import CursorRecord, CursorRows

CURSORS = CursorRecord.__table__  # type: ignore[attr-defined]
CURSOR_ROWS = CursorRows.__table__  # type: ignore[attr-defined]
CURSOR_PREFIX = "01g"


# A locator's last use is written when it is older than this share of the idle timeout, not at
# every batch (a batch then writes nothing): a locator may expire this much earlier at most.
TOUCH_AFTER = 0.05
# Recently opened results this process also keeps in memory, so that a client paging through
# one on the same worker (a keep-alive connection stays on one) reads no rows back. Bounded by
# the values they hold (rows times their width, their children's too), not by rows: wide rows
# and a parent's many children cost memory a count of rows does not see. And by age: a client
# pages through a result within seconds; a later one reads it back from the database, as
# another worker does, so a process that served big results returns to its size.
RECENT_CELLS = 500_000
RECENT_SECONDS = 60.0
# How long after a locator opens its rows are written for other workers: a client paging on one
# connection has usually read them all by then, closing it, and they are never written.
SPILL_DELAY_SECONDS = 0.5
# How long a worker asked for a batch of a locator another worker opened waits for its rows.
SPILL_WAIT_SECONDS = 3.0
SPILL_POLL_SECONDS = 0.01


def cells(result: ResultRows) -> int:
    """The values a result holds, its child subqueries' included: what its memory follows."""
    return sum(len(row) for row in result.rows) + sum(cells(c.rows) for c in result.children)


@dataclass(frozen=True)
class _Kept:
    result: ResultRows
    cells: int
    kept_at: float  # on the store's clock (time.monotonic)


class RecentResults:
    """The results of the locators this process opened lately, the oldest forgotten first past
    a bound on their values or their age (but not before their rows are in the database: those
    are pinned); thread-safe. The database stays the record of which locators are open: a
    result kept here is served only for a locator the database still has."""

    def __init__(
        self,
        max_cells: int = RECENT_CELLS,
        max_seconds: float = RECENT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_cells = max_cells
        self.max_seconds = max_seconds
        self.clock = clock
        self._results: OrderedDict[int, _Kept] = OrderedDict()
        self._pinned: set[int] = set()
        self._cells = 0
        self._lock = threading.Lock()

    @property
    def held_cells(self) -> int:
        return self._cells

    def keep(self, seq: int, result: ResultRows) -> None:
        """Keep a result, pinned until `unpin` (its rows are written)."""
        kept = _Kept(result, cells(result), self.clock())
        with self._lock:
            self._results[seq] = kept
            self._cells += kept.cells
            self._pinned.add(seq)
            self._shrink()

    def unpin(self, seq: int) -> None:
        with self._lock:
            self._pinned.discard(seq)
            self._shrink()

    def _shrink(self) -> None:
        """Forget the oldest unpinned results while over the bound or past the age."""
        too_old = self.clock() - self.max_seconds
        for seq, kept in list(self._results.items()):
            if self._cells <= self.max_cells and kept.kept_at >= too_old:
                return
            if seq not in self._pinned:
                del self._results[seq]
                self._cells -= kept.cells

    def stale(self) -> bool:
        """Whether a result is kept past its age (the flusher then trims, in an idle process
        too)."""
        with self._lock:
            oldest = next(iter(self._results.values()), None)
            return oldest is not None and oldest.kept_at < self.clock() - self.max_seconds

    def trim(self) -> None:
        with self._lock:
            self._shrink()

    def get(self, seq: int) -> ResultRows | None:
        with self._lock:
            self._shrink()
            kept = self._results.get(seq)
            return None if kept is None else kept.result

    def drop(self, seq: int) -> None:
        with self._lock:
            self._pinned.discard(seq)
            dropped = self._results.pop(seq, None)
            if dropped is not None:
                self._cells -= dropped.cells


@dataclass(frozen=True)
class _Spill:
    """Rows of a locator still to be written: `result` from index `first` on."""

    result: ResultRows
    first: int
    batch_size: int
    due: float  # time.monotonic() from when it is written


def invalid_locator() -> SalesforceError:
    return SalesforceError("invalid query locator", error_code="INVALID_QUERY_LOCATOR")


@dataclass(frozen=True)
class OpenQuery:
    """What a later batch needs to be shaped: the query as run, and its batching."""

    query: str
    include_deleted: bool
    calendar: OrgCalendar
    batch_size: int
    total: int


@dataclass(frozen=True)
class Batch:
    cursor_id: str
    query: OpenQuery
    offset: int
    rows: ResultRows


def _calendar_json(calendar: OrgCalendar) -> str:
    return json.dumps(
        {
            "today": calendar.today.isoformat(),
            "zone": calendar.zone,
            "fiscal": calendar.fiscal_start_month,
        }
    )


def _calendar(text: str) -> OrgCalendar:
    data = json.loads(text)
    return OrgCalendar(date.fromisoformat(data["today"]), data["zone"], int(data["fiscal"]))


def _forget(conn: Connection, seqs: Sequence[int]) -> None:
    if seqs:
        conn.execute(delete(CURSOR_ROWS).where(CURSOR_ROWS.c.cursor_seq.in_(seqs)))
        conn.execute(delete(CURSORS).where(CURSORS.c.seq.in_(seqs)))


def _chunk(blob: bytes) -> ResultRows:
    chunk = pickle.loads(blob)
    if not isinstance(chunk, ResultRows):
        # Kept by an earlier version, as bare rows without their children: query again.
        raise invalid_locator()
    return chunk


class CursorStore:
    def __init__(self, platform: Engine, *, per_user: int, idle_seconds: float) -> None:
        self.platform = platform
        self.per_user = per_user
        self.idle = timedelta(seconds=idle_seconds)
        self._recent = RecentResults()
        self._spills: dict[int, _Spill] = {}  # locators whose rows are still to be written
        self._spills_lock = threading.Lock()
        self._spilling = threading.Lock()

    def open(
        self,
        *,
        owner: str,
        user_id: str,
        query: OpenQuery,
        result: ResultRows,
        first: int,
    ) -> str:
        """Keep the rows of `result` from index `first` on under a new locator id. The locator
        is recorded now; its rows are written by `spill` (the app's flusher calls it) once
        SPILL_DELAY_SECONDS have passed, and kept in this process's memory until then at least."""
        now = utc_now()
        with platform_transaction(self.platform) as conn:
            self._release_old(conn, owner, user_id, now)
            seq = conn.execute(
                insert(CURSORS)
                .values(
                    sandbox_instance=owner,
                    user_id=user_id,
                    query=query.query,
                    include_deleted=query.include_deleted,
                    calendar=_calendar_json(query.calendar),
                    batch_size=query.batch_size,
                    total=query.total,
                    last_used=now,
                )
                .returning(CURSORS.c.seq)
            ).scalar_one()
        self._recent.keep(int(seq), result)
        with self._spills_lock:
            due = time.monotonic() + SPILL_DELAY_SECONDS
            self._spills[int(seq)] = _Spill(result, first, query.batch_size, due)
        return make_id(CURSOR_PREFIX, int(seq))

    def spills_due(self) -> bool:
        """Whether `spill` has work: rows to write, or results kept here past their age."""
        now = time.monotonic()
        with self._spills_lock:
            if any(pending.due <= now for pending in self._spills.values()):
                return True
        return self._recent.stale()

    def spill(self, *, everything: bool = False) -> None:
        """Write the rows of the locators opened here at least SPILL_DELAY_SECONDS ago (or,
        with `everything`, of all of them), for every worker. A locator closed meanwhile (a
        client that paged to its end on the same connection) gets none: it cost no writes."""
        with self._spilling:  # one spill at a time: after a call, every earlier open is written
            self._spill(time.monotonic() if not everything else float("inf"))
        self._recent.trim()

    def _spill(self, now: float) -> None:
        with self._spills_lock:
            spills = {seq: p for seq, p in self._spills.items() if p.due <= now}
            for seq in spills:
                del self._spills[seq]
        for seq, pending in spills.items():
            size = pending.batch_size
            # Rows are this server's own query results, serialised and read back only by it.
            chunks = [
                {
                    "cursor_seq": seq,
                    "start": at,
                    "rows": pickle.dumps(pending.result.window(at, at + size).as_tuples()),
                }
                for at in range(pending.first, len(pending.result), size)
            ]
            try:
                with platform_transaction(self.platform) as conn:  # close waits for this writer
                    if conn.execute(select(CURSORS.c.seq).where(CURSORS.c.seq == seq)).first():
                        conn.execute(insert(CURSOR_ROWS), chunks)
            finally:  # unwritten, they are still served here; other workers see an end
                self._recent.unpin(seq)

    def _release_old(self, conn: Connection, owner: str, user_id: str, now: datetime) -> None:
        """Expire idle locators, and free a place for one more of this user's."""
        expired = conn.execute(
            select(CURSORS.c.seq).where(CURSORS.c.last_used < now - self.idle)
        ).scalars()
        _forget(conn, list(expired))
        mine = conn.execute(
            select(CURSORS.c.seq)
            .where(CURSORS.c.sandbox_instance == owner, CURSORS.c.user_id == user_id)
            .order_by(CURSORS.c.seq.desc())
        ).scalars()
        _forget(conn, list(mine)[self.per_user - 1 :])

    def take(self, locator: str, owner: str) -> Batch:
        """The batch a locator names, or INVALID_QUERY_LOCATOR."""
        cursor_part, _, offset_part = locator.partition("-")
        cursor_id = normalize_id(cursor_part)
        if cursor_id is None or not cursor_id.startswith(CURSOR_PREFIX):
            raise invalid_locator()
        offset = parse_count(offset_part)
        if offset is None:
            raise invalid_locator()
        seq = record_number(cursor_id)
        now = utc_now()
        with self.platform.connect() as conn:  # a read: most batches write nothing
            found = (
                conn.execute(
                    select(CURSORS).where(CURSORS.c.seq == seq, CURSORS.c.sandbox_instance == owner)
                )
                .mappings()
                .first()
            )
            if found is None:
                raise invalid_locator()
            size = found["batch_size"]
            kept = self._recent.get(seq)
            chunks = [] if kept is not None else self._chunks(conn, seq, offset, size)
        if found["last_used"] < now - self.idle:
            with platform_transaction(self.platform) as conn:
                _forget(conn, [seq])
            self._recent.drop(seq)
            raise invalid_locator()
        if offset <= 0 or offset >= found["total"]:
            raise invalid_locator()
        if kept is None and not chunks:  # opened by another worker a moment ago?
            chunks = self._spilled_chunks(seq, offset, size)
        if found["last_used"] < now - self.idle * TOUCH_AFTER:
            with platform_transaction(self.platform) as conn:
                conn.execute(update(CURSORS).where(CURSORS.c.seq == seq).values(last_used=now))
        if kept is not None:
            rows = kept.window(offset, offset + size)
        elif not chunks:  # its worker stopped before writing them
            raise invalid_locator()
        else:
            # A locator may name any offset: the batch is the part of each chunk it overlaps.
            rows = joined(
                [
                    _chunk(blob).window(max(0, offset - start), offset + size - start)
                    for start, blob in chunks
                ]
            )
        query = OpenQuery(
            query=found["query"],
            include_deleted=bool(found["include_deleted"]),
            calendar=_calendar(found["calendar"]),
            batch_size=size,
            total=found["total"],
        )
        return Batch(cursor_id=cursor_id, query=query, offset=offset, rows=rows)

    def _spilled_chunks(self, seq: int, offset: int, size: int) -> list[Any]:
        """The chunks of a locator another worker opened a moment ago, once it has written
        them (within its flusher's period, bar a stall); none if it never does."""
        deadline = time.monotonic() + SPILL_WAIT_SECONDS
        while time.monotonic() < deadline:
            time.sleep(SPILL_POLL_SECONDS)
            with self.platform.connect() as conn:
                chunks = self._chunks(conn, seq, offset, size)
            if chunks:
                return chunks
        return []

    @staticmethod
    def _chunks(conn: Connection, seq: int, offset: int, size: int) -> list[Any]:
        """The stored chunks a batch of `size` from `offset` overlaps."""
        return list(
            conn.execute(
                select(CURSOR_ROWS.c.start, CURSOR_ROWS.c.rows)
                .where(
                    CURSOR_ROWS.c.cursor_seq == seq,
                    CURSOR_ROWS.c.start > offset - size,
                    CURSOR_ROWS.c.start < offset + size,
                )
                .order_by(CURSOR_ROWS.c.start)
            ).all()
        )

    def forget_kept_results(self) -> None:
        """Read every later batch back from the database, as another worker does."""
        self.spill(everything=True)
        self._recent = RecentResults(self._recent.max_cells, self._recent.max_seconds)

    def close(self, cursor_id: str) -> None:
        seq = record_number(cursor_id)
        with self._spills_lock:
            self._spills.pop(seq, None)
        with platform_transaction(self.platform) as conn:
            _forget(conn, [seq])
        self._recent.drop(seq)
