"""The Bulk job runner: a thread per worker process that takes jobs waiting to run from the
platform database and runs them, so a job outlives the request that closed it, and the
process: a job whose runner fell silent (its heartbeat older than `stale`) is taken up again.

An ingest job's record writes and its results commit in one sandbox transaction, marked in the
journal; a runner that takes the job up again after a crash finds the mark and only records
the results, so no row is written twice. A sandbox reset deletes the sandbox's jobs before it
undoes the journal, so a job never writes into the episode after it."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import orjson
from sqlalchemy import Engine

from app.errors import SalesforceError
from app.sandbox.manager import Sandbox
from app.services.bulk.ingest import IngestResult, run_ingest
from app.services.bulk.query_job import run_query_job
from app.services.context import OrgContext
from app.services.cursors import CursorStore
from app.storage import bulk_jobs
from app.storage.bulk_jobs import Job, State
from app.storage.database import platform_transaction, write_transaction
from app.storage.journal import bulk_job_results, log_bulk_job

logger = logging.getLogger(__name__)

# The org a job runs in, as its creator sees it, held (leased) for the run: None when the
# sandbox is gone.
Opener = Callable[[Job], AbstractContextManager[tuple[Sandbox, OrgContext] | None]]


def wall_clock() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


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
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
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
        with platform_transaction(self.platform) as conn:
            job = bulk_jobs.claim_next(conn, self.owner, wall_clock(), self.settings.stale)
        if job is None:
            return False
        with self._lock:
            self._running.add(job.seq)
        try:
            self._run(job)
        finally:
            with self._lock:
                self._running.discard(job.seq)
        return True

    def _run(self, job: Job) -> None:
        with self.opener(job) as opened:
            if opened is not None:  # else its sandbox is gone, and its jobs with it
                self._run_in(job, *opened)

    def _run_in(self, job: Job, sandbox: Sandbox, ctx: OrgContext) -> None:
        started = time.perf_counter()
        try:
            if job.kind == "ingest":
                outcome = self._ingest(job, sandbox, ctx)
            else:
                outcome = self._query(job, sandbox, ctx)
        except SalesforceError as error:
            self._fail(job, ctx, error.message)
            return
        except Exception as error:
            logger.exception("Bulk job %s failed", job.id)
            self._fail(job, ctx, f"UNKNOWN_EXCEPTION : {type(error).__name__}")
            return
        if outcome is None:
            return
        processed, failed, parts = outcome
        elapsed = int((time.perf_counter() - started) * 1000)
        with platform_transaction(self.platform) as conn:
            for part, content in parts.items():
                bulk_jobs.put_data(conn, job.seq, part, content)
            bulk_jobs.set_state(
                conn,
                job,
                State.JOB_COMPLETE,
                ctx.now,
                expected=State.IN_PROGRESS,
                processed=processed,
                failed=failed,
                processing_ms=elapsed,
                owner=None,
            )

    def _still_running(self, job: Job) -> bool:
        with self.platform.connect() as conn:
            current = bulk_jobs.load_job_or_none(conn, job.seq)
        return current is not None and current.state == State.IN_PROGRESS

    def _ingest(
        self, job: Job, sandbox: Sandbox, ctx: OrgContext
    ) -> tuple[int, int, dict[str, bytes]] | None:
        with self.platform.connect() as conn:
            data = bulk_jobs.get_data(conn, job.seq, "upload") or b""
        with write_transaction(sandbox.engine) as conn:
            logged = bulk_job_results(conn, job.id)
            if logged is not None:
                result = IngestResult.from_text(logged)
            elif not self._still_running(job):  # aborted, or its sandbox reset, meanwhile
                return None
            else:
                result = run_ingest(conn, ctx, job, data)  # InvalidBatch: the job fails
                log_bulk_job(conn, job.id, result.to_text())
        parts = {
            "success": result.success,
            "failure": result.failure,
            "unprocessed": result.unprocessed,
        }
        return result.processed, result.failed, parts

    def _query(
        self, job: Job, sandbox: Sandbox, ctx: OrgContext
    ) -> tuple[int, int, dict[str, bytes]]:
        include_deleted = job.operation == "queryAll"
        with sandbox.engine.connect() as conn:
            header, rows = run_query_job(conn, ctx, self.cursors, job.query or "", include_deleted)
        return len(rows), 0, {"result": orjson.dumps({"header": header, "rows": rows})}

    def _fail(self, job: Job, ctx: OrgContext, message: str) -> None:
        with platform_transaction(self.platform) as conn:
            bulk_jobs.set_state(
                conn,
                job,
                State.FAILED,
                ctx.now,
                expected=State.IN_PROGRESS,
                error=message,
                owner=None,
            )
