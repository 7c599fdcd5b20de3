"""Bulk API 2.0's jobs: what an ingest or a query job may be, its one upload, the states a
client may ask for, deleting a job that is not running, and what a finished job gives back
(an ingest job's results, a query job's rows a page at a time). Failures are Salesforce's
errors (INVALIDJOB, INVALIDJOBSTATE, ...), as Bulk API 2.0 answers them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection

from app.errors import NotFound, SalesforceError
from app.services.bulk.csv_data import DELIMITERS, LINE_ENDINGS
from app.services.bulk.ingest import HARD_DELETE_REFUSAL, INGEST_OPERATIONS
from app.services.bulk.jobs import (
    Scope,
    Transition,
    Transitions,
    asked_transition,
    make_transition,
    upsert_key,
)
from app.services.bulk.query_job import check_bulk_query
from app.services.bulk.runner import QUERY_OPERATIONS
from app.storage import bulk_jobs
from app.storage.bulk_jobs import FINISHED, Job, State
from app.storage.database import platform_transaction

# An ingest job's results as its URL names them, and the data part each is.
RESULT_PARTS = {
    "successfulResults": "success",
    "failedResults": "failure",
    "unprocessedrecords": "unprocessed",
}


def invalid_job(message: str) -> SalesforceError:
    return SalesforceError(f"InvalidJob : {message}", error_code="INVALIDJOB")


def invalid_state(job: Job, doing: str) -> SalesforceError:
    return SalesforceError(
        f"Job {job.id} is {job.state}: cannot {doing}", error_code="INVALIDJOBSTATE"
    )


def _choice(data: dict[str, Any], key: str, allowed: Any, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str) or value not in allowed:
        raise invalid_job(f"Invalid {key}: {value}")
    return value


def _dialect(data: dict[str, Any]) -> dict[str, str]:
    if _choice(data, "contentType", ("CSV",), "CSV") != "CSV":
        raise invalid_job("Unsupported content type")
    return {
        "column_delimiter": _choice(data, "columnDelimiter", DELIMITERS, "COMMA"),
        "line_ending": _choice(data, "lineEnding", LINE_ENDINGS, "LF"),
    }


def _new_job(scope: Scope, **values: Any) -> Job:
    with platform_transaction(scope.platform) as conn:
        return bulk_jobs.create_job(conn, scope.origin(), **values)


def _ingest_spec(scope: Scope, data: dict[str, Any]) -> dict[str, Any]:
    operation = data.get("operation")
    if operation == "hardDelete":
        raise SalesforceError(HARD_DELETE_REFUSAL, error_code="FEATURENOTENABLED")
    operation = _choice(data, "operation", INGEST_OPERATIONS, "")
    name = data.get("object")
    sobject = scope.ctx.registry.get(name) if isinstance(name, str) else None
    if sobject is None:
        raise SalesforceError(
            f"InvalidEntity : sObject type '{name}' is not supported", error_code="INVALIDENTITY"
        )
    external = None
    if operation == "upsert":
        wanted = data.get("externalIdFieldName")
        external = upsert_key(sobject, wanted)
        if external is None:
            raise invalid_job(f"External ID field {wanted} is not valid for {sobject.name}")
    return {
        "kind": "ingest",
        "operation": operation,
        "sobject": sobject.name,
        "external_id_field": external,
        "state": State.OPEN,
        **_dialect(data),
    }


def create_ingest_job(scope: Scope, data: dict[str, Any]) -> Job:
    """A new open ingest job, as a JobInfo's fields ask; it waits for its upload."""
    return _new_job(scope, **_ingest_spec(scope, data))


def create_query_job(scope: Scope, data: dict[str, Any]) -> Job:
    """A new query job, as a QueryJobInfo's fields ask (its query checked now, as Salesforce
    checks it): waiting for a runner at once."""
    operation = _choice(data, "operation", QUERY_OPERATIONS, "")
    query = data.get("query")
    if not isinstance(query, str):
        raise invalid_job("A query is required")
    bound = check_bulk_query(scope.ctx, query, operation == "queryAll")
    job = _new_job(
        scope,
        kind="query",
        operation=operation,
        sobject=bound.sobject.name,
        query=query,
        state=State.UPLOAD_COMPLETE,
        **_dialect(data),
    )
    scope.wake()
    return job


def find_job(scope: Scope, kind: str, job_id: str) -> Job:
    """The sandbox's job of that kind (ingest or query) the id names: NOT_FOUND for any
    other."""
    with scope.platform.connect() as conn:
        return bulk_jobs.find_job(conn, scope.sandbox.instance, kind, job_id)


def list_jobs(scope: Scope, kind: str) -> list[Job]:
    """The sandbox's jobs of that kind, oldest first."""
    with scope.platform.connect() as conn:
        return bulk_jobs.list_jobs(conn, scope.sandbox.instance, kind)


def _locked(conn: Connection, job: Job) -> Job:
    """The job as it is now, locked until the transaction ends (a runner may have taken it)."""
    current = bulk_jobs.lock_job(conn, job.seq)
    if current is None:
        raise NotFound()
    return current


def store_upload(scope: Scope, job_id: str, data: bytes) -> None:
    """An open ingest job's CSV: one upload a job."""
    job = find_job(scope, "ingest", job_id)
    with platform_transaction(scope.platform) as conn:
        current = _locked(conn, job)
        if current.state != State.OPEN:
            raise invalid_state(current, "upload data")
        if bulk_jobs.get_data(conn, job.seq, "upload") is not None:
            raise SalesforceError(
                f"Job {job.id} already has its data: a job takes one upload",
                error_code="INVALIDJOBSTATE",
            )
        bulk_jobs.put_data(conn, job.seq, "upload", data)


def _keep_unprocessed(conn: Connection, job: Job, now: datetime) -> None:
    """An aborted job that had not started leaves its upload as its unprocessed records."""
    del now
    upload = bulk_jobs.get_data(conn, job.seq, "upload")
    if upload is not None and job.state != State.IN_PROGRESS:
        bulk_jobs.put_data(conn, job.seq, "unprocessed", upload)


# The states a client may ask for, and the states each may start from: an ingest job is
# closed (UploadComplete) for the runner to take; any job may be aborted.
TRANSITIONS: Transitions = {
    State.UPLOAD_COMPLETE: Transition(start=(State.OPEN,), kinds=("ingest",), wakes_runner=True),
    State.ABORTED: Transition(
        start=(State.OPEN, State.UPLOAD_COMPLETE, State.IN_PROGRESS), effect=_keep_unprocessed
    ),
}


def change_state(scope: Scope, job: Job, wanted: object) -> Job:
    """The job moved to the state a client asks for."""
    step = asked_transition(TRANSITIONS, wanted, job.kind)
    if step is None:
        raise invalid_job(f"Invalid state: {wanted}")

    def refusal(current: Job | None) -> Exception:
        return NotFound() if current is None else invalid_state(current, f"move to {wanted}")

    return make_transition(scope, job, str(wanted), step, refusal)


def delete_job(scope: Scope, kind: str, job_id: str) -> None:
    """Delete a job that is not running: one closed but not yet taken, or one that has
    ended."""
    job = find_job(scope, kind, job_id)
    with platform_transaction(scope.platform) as conn:
        current = _locked(conn, job)
        if current.state not in FINISHED and current.state != State.UPLOAD_COMPLETE:
            raise invalid_state(current, "delete it")
        bulk_jobs.delete_job(conn, job.seq)


def ingest_results(scope: Scope, job_id: str, part: str) -> bytes:
    """A finished ingest job's results as CSV, the part its URL names (RESULT_PARTS): its
    unprocessed records are its upload when the job kept none of its own."""
    stored = RESULT_PARTS[part]
    job = find_job(scope, "ingest", job_id)
    if job.state not in FINISHED:
        raise invalid_state(job, f"give {part} before it has finished")
    with scope.platform.connect() as conn:
        content = bulk_jobs.get_data(conn, job.seq, stored)
        if content is None and stored == "unprocessed":
            content = bulk_jobs.get_data(conn, job.seq, "upload")
    return content or b""


def completed_query(scope: Scope, job_id: str) -> Job:
    """A query job whose results are ready."""
    job = find_job(scope, "query", job_id)
    if job.state != State.JOB_COMPLETE:
        raise invalid_state(job, "give results before it has completed")
    return job


@dataclass(frozen=True)
class ResultPage:
    """A page of a query job's rows: its CSV header, the rows from `start` to `end`, and how
    many rows the result has in all."""

    header: list[str]
    rows: list[list[Any]]
    start: int
    end: int
    total: int


def result_page(scope: Scope, job: Job, start: int, size: int) -> ResultPage:
    """The rows of a completed query job's result from `start`, at most `size` of them."""
    with scope.platform.connect() as conn:
        stored = orjson.loads(bulk_jobs.get_data(conn, job.seq, "result") or b"{}")
    rows = stored.get("rows", [])
    end = min(start + size, len(rows))
    return ResultPage(stored.get("header", []), rows[start:end], start, end, len(rows))
