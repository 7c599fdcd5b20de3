"""Bulk jobs as the platform database keeps them: a row per job (lf_bulk_job) and its data
parts (lf_bulk_data). Every worker reads and writes them, so any worker serves any job and a
job outlives the process that took it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, insert, or_, select, update

from app.errors import NotFound
from app.storage.ids import make_id, normalize_id, record_number
from app.storage.platform import BulkJob, BulkJobData

JOBS = BulkJob.__table__  # type: ignore[attr-defined]
DATA = BulkJobData.__table__  # type: ignore[attr-defined]
JOB_PREFIX = "750"
BATCH_PREFIX = "751"  # a Bulk API 1.0 batch
RESULT_PREFIX = "752"  # a Bulk API 1.0 query batch's result


class State:
    """The states of a Bulk API 2.0 job, and of a Bulk API 1.0 job and batch."""

    OPEN = "Open"
    UPLOAD_COMPLETE = "UploadComplete"
    IN_PROGRESS = "InProgress"
    JOB_COMPLETE = "JobComplete"
    FAILED = "Failed"
    ABORTED = "Aborted"
    CLOSED = "Closed"  # a 1.0 job that takes no more batches
    QUEUED = "Queued"  # a 1.0 batch waiting to run
    COMPLETED = "Completed"  # a 1.0 batch that ran
    NOT_PROCESSED = "NotProcessed"  # a 1.0 batch of a job aborted before it ran


FINISHED = frozenset({State.JOB_COMPLETE, State.FAILED, State.ABORTED})
# What a runner takes up: a 2.0 job closed by its client, a 1.0 batch.
WAITING = (State.UPLOAD_COMPLETE, State.QUEUED)


@dataclass(frozen=True)
class Job:
    seq: int
    sandbox_id: str
    sandbox_instance: str
    kind: str
    parent_seq: int | None
    content_type: str
    operation: str
    sobject: str | None
    external_id_field: str | None
    query: str | None
    column_delimiter: str
    line_ending: str
    api_version: str
    state: str
    created_by: str
    created_at: datetime
    modstamp: datetime
    owner: str | None
    heartbeat: datetime | None
    processed: int
    failed: int
    error: str | None
    processing_ms: int

    @property
    def id(self) -> str:
        return make_id(BATCH_PREFIX if self.kind == "batch" else JOB_PREFIX, self.seq)


def job_seq(job_id: str, prefix: str = JOB_PREFIX) -> int | None:
    """The seq a job (or batch, or result) id carries, or None for what is no such id."""
    canonical = normalize_id(job_id)
    if canonical is None or not canonical.startswith(prefix):
        return None
    return record_number(canonical)


@dataclass(frozen=True)
class Origin:
    """Where and by whom a job (or batch) is made: its sandbox, API version, user and time."""

    sandbox_id: str
    sandbox_instance: str
    api_version: str  # "v62.0"
    user_id: str
    now: datetime


def create_job(conn: Connection, origin: Origin, **values: Any) -> Job:
    """A new job (or batch), nothing processed yet; `values` say what it does."""
    seq = conn.execute(
        insert(JOBS)
        .values(
            sandbox_id=origin.sandbox_id,
            sandbox_instance=origin.sandbox_instance,
            api_version=origin.api_version,
            created_by=origin.user_id,
            created_at=origin.now,
            modstamp=origin.now,
            processed=0,
            failed=0,
            processing_ms=0,
            **values,
        )
        .returning(JOBS.c.seq)
    ).scalar_one()
    return load_job(conn, int(seq))


def load_job(conn: Connection, seq: int) -> Job:
    row = conn.execute(select(JOBS).where(JOBS.c.seq == seq)).mappings().first()
    if row is None:
        raise NotFound()
    return Job(**dict(row))


def find_job(conn: Connection, sandbox_instance: str, kind: str, job_id: str) -> Job:
    """The sandbox's job of that kind the id names: NOT_FOUND for any other."""
    seq = job_seq(job_id, BATCH_PREFIX if kind == "batch" else JOB_PREFIX)
    job = None if seq is None else load_job_or_none(conn, seq)
    if job is None or job.sandbox_instance != sandbox_instance or job.kind != kind:
        raise NotFound()
    return job


def lock_job(conn: Connection, seq: int) -> Job | None:
    """The job, its row locked for the rest of the transaction (PostgreSQL; SQLite's writers
    are one at a time anyway)."""
    row = conn.execute(select(JOBS).where(JOBS.c.seq == seq).with_for_update()).mappings().first()
    return None if row is None else Job(**dict(row))


def load_job_or_none(conn: Connection, seq: int) -> Job | None:
    try:
        return load_job(conn, seq)
    except NotFound:
        return None


def list_jobs(conn: Connection, sandbox_instance: str, kind: str) -> list[Job]:
    rows = conn.execute(
        select(JOBS)
        .where(JOBS.c.sandbox_instance == sandbox_instance, JOBS.c.kind == kind)
        .order_by(JOBS.c.seq)
    ).mappings()
    return [Job(**dict(row)) for row in rows]


def batches_of(conn: Connection, job: Job) -> list[Job]:
    """A Bulk API 1.0 job's batches, in the order they were added."""
    rows = conn.execute(
        select(JOBS).where(JOBS.c.parent_seq == job.seq).order_by(JOBS.c.seq)
    ).mappings()
    return [Job(**dict(row)) for row in rows]


def set_state(
    conn: Connection,
    job: Job,
    state: str,
    now: datetime,
    *,
    expected: str | None = None,
    **more: Any,
) -> bool:
    """Move the job to `state` (only from `expected`, when given); whether it moved."""
    statement = update(JOBS).where(JOBS.c.seq == job.seq)
    if expected is not None:
        statement = statement.where(JOBS.c.state == expected)
    result = conn.execute(statement.values(state=state, modstamp=now, **more))
    return bool(result.rowcount)


def put_data(conn: Connection, seq: int, part: str, content: bytes) -> None:
    conn.execute(delete(DATA).where(DATA.c.job_seq == seq, DATA.c.part == part))
    conn.execute(insert(DATA).values(job_seq=seq, part=part, content=content))


def get_data(conn: Connection, seq: int, part: str) -> bytes | None:
    found = conn.execute(
        select(DATA.c.content).where(DATA.c.job_seq == seq, DATA.c.part == part)
    ).scalar_one_or_none()
    return None if found is None else bytes(found)


def delete_job(conn: Connection, seq: int) -> None:
    conn.execute(delete(DATA).where(DATA.c.job_seq == seq))
    conn.execute(delete(JOBS).where(JOBS.c.seq == seq))


def delete_sandbox_jobs(conn: Connection, sandbox_id: str) -> None:
    """Forget a sandbox's jobs (a reset or a delete ends them)."""
    seqs = select(JOBS.c.seq).where(JOBS.c.sandbox_id == sandbox_id)
    conn.execute(delete(DATA).where(DATA.c.job_seq.in_(seqs)))
    conn.execute(delete(JOBS).where(JOBS.c.sandbox_id == sandbox_id))


def _claimable(now: datetime, stale: timedelta) -> Any:
    return or_(
        JOBS.c.state.in_(WAITING),
        (JOBS.c.state == State.IN_PROGRESS) & (JOBS.c.heartbeat < now - stale),
    )


def any_claimable(conn: Connection, now: datetime, stale: timedelta) -> bool:
    """Whether some job waits to run (a read: the runner's idle poll takes no write lock)."""
    found = conn.execute(select(JOBS.c.seq).where(_claimable(now, stale)).limit(1)).first()
    return found is not None


def claim_next(conn: Connection, owner: str, now: datetime, stale: timedelta) -> Job | None:
    """Take a job waiting to run (a 2.0 job UploadComplete, a 1.0 batch Queued), or one whose
    runner fell silent: the one worker whose update matches runs it."""
    candidates = conn.execute(
        select(JOBS.c.seq).where(_claimable(now, stale)).order_by(JOBS.c.seq).limit(8)
    ).scalars()
    for seq in list(candidates):
        taken = conn.execute(
            update(JOBS)
            .where(JOBS.c.seq == seq, _claimable(now, stale))
            .values(state=State.IN_PROGRESS, owner=owner, heartbeat=now)
        )
        if taken.rowcount:
            return load_job(conn, seq)
    return None


def beat(conn: Connection, owner: str, seqs: list[int], now: datetime) -> None:
    """Say the owner still runs these jobs."""
    if seqs:
        conn.execute(
            update(JOBS).where(JOBS.c.seq.in_(seqs), JOBS.c.owner == owner).values(heartbeat=now)
        )
