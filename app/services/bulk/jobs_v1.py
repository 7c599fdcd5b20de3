"""Bulk API 1.0's jobs and batches: what a job may be (its operation, object, content type and
external id field), the states a client may ask for, a batch added to an open job and run on
the job runner, and what a batch gives back (its request, its results, a query's result).
Failures are `BulkError`s: Bulk API 1.0's exceptionCode and message, which its routes write in
the job's envelope."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection

from app.errors import NotFound
from app.services.bulk.ingest import HARD_DELETE_REFUSAL, INGEST_OPERATIONS, IngestResult
from app.services.bulk.jobs import (
    Scope,
    Transition,
    Transitions,
    asked_transition,
    make_transition,
    read_data,
    upsert_key,
)
from app.services.bulk.runner import QUERY_OPERATIONS
from app.storage import bulk_jobs
from app.storage.bulk_jobs import RESULT_PREFIX, Job, Origin, State
from app.storage.database import platform_transaction
from app.storage.ids import make_id

OPERATIONS = (*INGEST_OPERATIONS, *QUERY_OPERATIONS)
CONTENT_TYPES = ("CSV", "JSON", "XML")
QUICK_BATCH_SECONDS = 0.5
MAX_BATCH_BYTES = 10_000_000  # Bulk API 1.0's bound on one batch's data


class BulkError(Exception):
    """An error in Bulk API 1.0's envelope: exceptionCode and exceptionMessage, HTTP 400."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _batches_not_processed(conn: Connection, job: Job, now: datetime) -> None:
    """An aborted job's batches still queued will not run."""
    for batch in bulk_jobs.batches_of(conn, job):
        bulk_jobs.set_state(conn, batch, State.NOT_PROCESSED, now, expected=State.QUEUED)


# The job states a client may ask for, and the states each may start from.
TRANSITIONS: Transitions = {
    State.CLOSED: Transition(start=(State.OPEN,)),
    State.ABORTED: Transition(start=(State.OPEN, State.CLOSED), effect=_batches_not_processed),
}


def find_job(scope: Scope, job_id: str) -> Job:
    with scope.platform.connect() as conn:
        try:
            return bulk_jobs.find_job(conn, scope.sandbox.instance, "job", job_id)
        except NotFound:
            raise BulkError("InvalidJob", f"Unable to find object: {job_id}") from None


def find_batch(scope: Scope, job: Job, batch_id: str) -> Job:
    with scope.platform.connect() as conn:
        try:
            batch = bulk_jobs.find_job(conn, scope.sandbox.instance, "batch", batch_id)
        except NotFound:
            batch = None
    if batch is None or batch.parent_seq != job.seq:
        raise BulkError("InvalidBatch", f"Unable to find object: {batch_id}")
    return batch


def batches_of(scope: Scope, job: Job) -> list[Job]:
    """The job's batches, in the order they were added."""
    with scope.platform.connect() as conn:
        return bulk_jobs.batches_of(conn, job)


def create_job(scope: Scope, fields: dict[str, Any], as_json: bool) -> Job:
    """A new open job, as a jobInfo's fields ask (XML when a JSON request names no content
    type is JSON's)."""
    operation = fields.get("operation")
    if operation == "hardDelete":
        raise BulkError("FeatureNotEnabled", HARD_DELETE_REFUSAL)
    if operation not in OPERATIONS:
        raise BulkError("InvalidJob", f"Invalid operation: {operation}")
    name = fields.get("object")
    sobject = scope.ctx.registry.get(name) if isinstance(name, str) else None
    if sobject is None:
        raise BulkError("InvalidJob", f"Unable to find object: {name}")
    content_type = fields.get("contentType") or ("JSON" if as_json else "XML")
    if content_type not in CONTENT_TYPES:
        raise BulkError("InvalidJob", f"Unsupported content type: {content_type}")
    external = None
    if operation == "upsert":
        wanted = fields.get("externalIdFieldName")
        external = upsert_key(sobject, wanted)
        if external is None:
            raise BulkError(
                "InvalidJob", f"External ID field {wanted} is not valid for {sobject.name}"
            )
    with platform_transaction(scope.platform) as conn:
        return bulk_jobs.create_job(
            conn,
            scope.origin(),
            kind="job",
            content_type=content_type,
            operation=operation,
            sobject=sobject.name,
            external_id_field=external,
            column_delimiter="COMMA",
            line_ending="LF",
            state=State.OPEN,
        )


def change_state(scope: Scope, job: Job, wanted: object) -> Job:
    """The job moved to the state a client asks for (closed, or aborted: its queued batches
    then never run)."""
    step = asked_transition(TRANSITIONS, wanted, job.kind)
    if step is None:
        raise BulkError("InvalidJobState", f"Invalid state: {wanted}")
    refused = BulkError("InvalidJobState", f"Job is {job.state}: it cannot be {wanted}")
    if job.state not in step.start:
        raise refused
    return make_transition(scope, job, str(wanted), step, lambda current: refused)


def add_batch(scope: Scope, job: Job, data: bytes) -> Job:
    """A batch of the job's records (or its query), queued for the job runner; a small one is
    given a moment to run first."""
    if job.state != State.OPEN:
        raise BulkError("InvalidJobState", "Job not open")
    if len(data) > MAX_BATCH_BYTES:
        raise BulkError("InvalidBatch", f"Batch size exceeds the limit of {MAX_BATCH_BYTES} bytes")
    if not data.strip():  # refused at once, as Salesforce does (jsforce's bulk tests expect it)
        raise BulkError("ClientInputError", "Unable to find any data to create batch")
    ctx = scope.ctx
    made = Origin(job.sandbox_id, job.sandbox_instance, job.api_version, ctx.user_id, ctx.now)
    with platform_transaction(scope.platform) as conn:
        # Still open now (not closed, aborted, or ended by a sandbox reset meanwhile).
        current = bulk_jobs.lock_job(conn, job.seq)
        if current is None or current.state != State.OPEN:
            raise BulkError("InvalidJobState", "Job not open")
        batch = bulk_jobs.create_job(
            conn,
            made,
            kind="batch",
            parent_seq=job.seq,
            content_type=job.content_type,
            operation=job.operation,
            sobject=job.sobject,
            external_id_field=job.external_id_field,
            column_delimiter=job.column_delimiter,
            line_ending=job.line_ending,
            state=State.QUEUED,
        )
        bulk_jobs.put_data(conn, batch.seq, "upload", data)
    runner = scope.runner
    if runner is not None:
        runner.wake()
        # The answer says Queued, as Salesforce's does; a small batch is given a moment to
        # run first, so that a client's first look finds it done (clients wait seconds
        # between looks).
        runner.wait_finished(batch.seq, QUICK_BATCH_SECONDS)
    return batch


def batch_request(scope: Scope, batch: Job) -> bytes:
    """The data the batch was sent."""
    return read_data(scope, batch, "upload") or b""


def completed_batch(scope: Scope, job_id: str, batch_id: str) -> tuple[Job, Job]:
    """The job and its batch, which has run."""
    job = find_job(scope, job_id)
    batch = find_batch(scope, job, batch_id)
    if batch.state != State.COMPLETED:
        raise BulkError("InvalidBatch", "Records not processed")
    return job, batch


def is_query(job: Job) -> bool:
    return job.operation in QUERY_OPERATIONS


def result_id(batch: Job) -> str:
    """The id of a query batch's one result."""
    return make_id(RESULT_PREFIX, batch.seq)


def ingest_result(scope: Scope, batch: Job) -> IngestResult:
    """What became of each record of an ingest batch, in the order sent."""
    stored = read_data(scope, batch, "outcomes") or b""
    return IngestResult.from_text(stored.decode())


def query_result(scope: Scope, batch: Job, wanted: str) -> dict[str, Any]:
    """A query batch's result (`header` and `rows`, `records` and their `temporal` paths)."""
    if bulk_jobs.job_seq(wanted, RESULT_PREFIX) != batch.seq:
        raise BulkError("InvalidBatch", f"Unable to find object: {wanted}")
    stored: dict[str, Any] = orjson.loads(read_data(scope, batch, "result") or b"{}")
    return stored
