"""The Bulk job runner: a thread per worker process that takes jobs waiting to run from the
platform database and runs them, so a job outlives the request that closed it, and the
process: a job whose runner fell silent (its heartbeat older than `stale`) is taken up again.

An ingest job writes its rows a chunk at a time, each chunk's record writes and results in one
sandbox transaction marked in the journal; a runner that takes the job up again after a crash
finds the marks and runs only the chunks after them, so no row is written twice. Before each
chunk it checks the job is still its own: a sandbox reset (or snapshot restore) deletes the
sandbox's jobs before it undoes the journal, so a job never writes into the episode after it,
and an abort stops the job between chunks."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Engine

from app.errors import SalesforceError
from app.sandbox.model import Sandbox
from app.services.bulk.csv_data import InvalidBatch, write_rows
from app.services.bulk.ingest import IngestResult, rows_of, run_rows
from app.services.bulk.query_job import csv_table, query_records, temporal_columns
from app.services.context import OrgContext
from app.services.cursors import CursorStore
from app.storage import bulk_jobs
from app.storage.bulk_jobs import Job, State
from app.storage.database import platform_transaction, write_transaction
from app.storage.journal import bulk_job_chunks, log_bulk_job

logger = logging.getLogger(__name__)
QUERY_OPERATIONS = ("query", "queryAll")
FINISHED_REMEMBERED = 1000
CHUNK_ROWS = 200  # rows an ingest writes per sandbox transaction

# The org a job runs in, as its creator sees it, held (leased) for the run: None when the
# sandbox is gone.
Opener = Callable[[Job], AbstractContextManager[tuple[Sandbox, OrgContext] | None]]


def wall_clock() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class Outcome:
    """What a run did: the records processed and failed, and the data parts it leaves."""

    processed: int
    failed: int
    parts: dict[str, bytes]


@dataclass
class RunnerSettings:
    stale: timedelta = timedelta(seconds=30)
    poll_seconds: float = 1.0


class BulkRunner:
    def __init__(
        self,
        platform: Engine,
        cursors: CursorStore,
        opener: Opener,
        settings: RunnerSettings | None = None,
    ) -> None:
        self.platform = platform
        self.cursors = cursors
        self.opener = opener
        self.settings = settings or RunnerSettings()
        self.owner = uuid.uuid4().hex
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._running: set[int] = set()
        self._lock = threading.Lock()
        # The jobs this runner finished lately, for a request that waits a moment for one.
        self._finished: OrderedDict[int, None] = OrderedDict()
        self._finished_changed = threading.Condition(self._lock)
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self._stopping.clear()  # an app's lifespan may run again after a stop
        for target, name in ((self._loop, "bulk-runner"), (self._beat, "bulk-heartbeat")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._threads.clear()

    def wake(self) -> None:
        """A job is waiting: look now, not at the next poll."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                ran = self.run_one()
            except Exception:  # the runner must outlive any one job's failure
                logger.exception("a Bulk job runner round failed")
                ran = False
            if not ran:
                self._wake.wait(self.settings.poll_seconds)
                self._wake.clear()

    def _beat(self) -> None:
        interval = max(self.settings.stale.total_seconds() / 3, 0.05)
        while not self._stopping.wait(interval):
            with self._lock:
                running = list(self._running)
            if running:
                try:
                    with platform_transaction(self.platform) as conn:
                        bulk_jobs.beat(conn, self.owner, running, wall_clock())
                except Exception:
                    logger.exception("the Bulk runner's heartbeat failed")

    def run_one(self) -> bool:
        """Take one job and run it; whether there was one."""
        now, stale = wall_clock(), self.settings.stale
        with self.platform.connect() as conn:
            if not bulk_jobs.any_claimable(conn, now, stale):
                return False
        with platform_transaction(self.platform) as conn:
            job = bulk_jobs.claim_next(conn, self.owner, now, stale)
        if job is None:
            return False
        with self._lock:
            self._running.add(job.seq)
        try:
            self._run(job)
        finally:
            with self._lock:
                self._running.discard(job.seq)
                self._finished[job.seq] = None
                while len(self._finished) > FINISHED_REMEMBERED:
                    self._finished.popitem(last=False)
                self._finished_changed.notify_all()
        return True

    def wait_finished(self, seq: int, timeout: float) -> bool:
        """Wait up to `timeout` s for this runner to finish job `seq`; whether it did."""
        with self._lock:
            return self._finished_changed.wait_for(lambda: seq in self._finished, timeout)

    def _run(self, job: Job) -> None:
        with self.opener(job) as opened:
            if opened is not None:  # else its sandbox is gone, and its jobs with it
                self._run_in(job, *opened)

    def _run_in(self, job: Job, sandbox: Sandbox, ctx: OrgContext) -> None:
        started = time.perf_counter()
        outcome: Outcome
        try:
            if job.operation in QUERY_OPERATIONS:
                outcome = self._query(job, sandbox, ctx)
            else:
                outcome = self._ingest(job, sandbox, ctx)
        except SalesforceError as error:
            self._finish(job, ctx, State.FAILED, error=error.message)
            return
        except Exception as error:
            logger.exception("Bulk job %s failed", job.id)
            self._finish(
                job, ctx, State.FAILED, error=f"UNKNOWN_EXCEPTION : {type(error).__name__}"
            )
            return
        done = State.COMPLETED if job.kind == "batch" else State.JOB_COMPLETE
        elapsed = int((time.perf_counter() - started) * 1000)
        self._finish(job, ctx, done, outcome=outcome, processing_ms=elapsed)

    def _finish(
        self,
        job: Job,
        ctx: OrgContext,
        state: str,
        *,
        outcome: Outcome | None = None,
        error: str | None = None,
        processing_ms: int = 0,
    ) -> None:
        """Record how the run ended, if the job is still this runner's: a job deleted meanwhile
        (or its sandbox reset) is gone; one aborted meanwhile stays Aborted, with what it did."""
        with platform_transaction(self.platform) as conn:
            current = bulk_jobs.lock_job(conn, job.seq)
            if current is None or current.owner != self.owner:
                return
            if current.state != State.IN_PROGRESS:
                state = current.state
            counts: dict[str, Any] = {"owner": None, "processing_ms": processing_ms}
            if outcome is not None:
                counts.update(processed=outcome.processed, failed=outcome.failed)
                for part, content in outcome.parts.items():
                    bulk_jobs.put_data(conn, job.seq, part, content)
            if error is not None:
                counts["error"] = error
            bulk_jobs.set_state(conn, current, state, ctx.now, expected=current.state, **counts)

    def _still_mine(self, job: Job) -> bool:
        """Whether the job is still running, on this runner: not aborted, not deleted (a
        sandbox reset deletes its jobs first), not taken up by another runner."""
        with self.platform.connect() as conn:
            current = bulk_jobs.load_job_or_none(conn, job.seq)
        return (
            current is not None
            and current.state == State.IN_PROGRESS
            and current.owner == self.owner
        )

    def _ingest(self, job: Job, sandbox: Sandbox, ctx: OrgContext) -> Outcome:
        """The rows in chunks, each chunk's writes and results in one short sandbox
        transaction: other writers wait for a chunk, never for the whole job, and a chunk
        already in (its results are in the journal) is not run again."""
        with self.platform.connect() as conn:
            data = bulk_jobs.get_data(conn, job.seq, "upload") or b""
        header, rows = rows_of(ctx, job, data)  # InvalidBatch: the job fails
        with sandbox.engine.connect() as conn:
            logged = [IngestResult.from_text(text) for text in bulk_job_chunks(conn, job.id)]
        outcomes = [outcome for chunk in logged for outcome in chunk.outcomes]
        while len(outcomes) < len(rows):
            chunk = rows[len(outcomes) : len(outcomes) + CHUNK_ROWS]
            with write_transaction(sandbox.engine) as conn:
                if not self._still_mine(job):
                    break
                part = run_rows(conn, ctx, job, header, chunk)
                log_bulk_job(conn, job.id, part.to_text())
            outcomes += part.outcomes
        result = IngestResult(header=header, rows=rows[: len(outcomes)], outcomes=outcomes)
        if job.kind == "batch":  # rendered when asked for, in the job's content type
            return Outcome(result.processed, result.failed, {"outcomes": result.to_text().encode()})
        delimiter, ending = job.column_delimiter, job.line_ending
        unprocessed = rows[len(outcomes) :]
        parts = {
            "success": result.successful_csv(delimiter, ending),
            "failure": result.failed_csv(delimiter, ending),
            "unprocessed": write_rows(header, unprocessed, delimiter, ending),
        }
        return Outcome(result.processed, result.failed, parts)

    def _query(self, job: Job, sandbox: Sandbox, ctx: OrgContext) -> Outcome:
        include_deleted = job.operation == "queryAll"
        text = job.query or ""
        if job.kind == "batch":  # a 1.0 query batch: the query is its data
            with self.platform.connect() as conn:
                text = (bulk_jobs.get_data(conn, job.seq, "upload") or b"").decode(
                    "utf-8", "replace"
                )
        try:
            with sandbox.engine.connect() as conn:
                bound, records = query_records(conn, ctx, self.cursors, text, include_deleted)
            if job.sobject and bound.sobject.name != job.sobject:
                raise SalesforceError(
                    f"The root entity of the requested query ({bound.sobject.name}) does not "
                    f"match the entity of the requested Bulk API Job ({job.sobject}).",
                    error_code="INVALID_TYPE_FOR_OPERATION",
                )
        except SalesforceError as error:
            if job.kind != "batch":
                raise
            # A 1.0 batch's stateMessage names the query's error as Salesforce's do.
            raise InvalidBatch(
                f"InvalidBatch : Failed to process query: {error.error_code}: {error.message}"
            ) from None
        if job.content_type == "CSV":
            header, rows = csv_table(bound, records)
            stored: dict[str, Any] = {"header": header, "rows": rows}
        else:
            stored = {"records": records, "temporal": temporal_columns(bound)}
        return Outcome(len(records), 0, {"result": orjson.dumps(stored)})
