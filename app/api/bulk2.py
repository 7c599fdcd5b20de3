"""Bulk API 2.0: ingest jobs (create, upload CSV, UploadComplete, results, abort, delete, list)
and query jobs (create, results paged with Sforce-Locator and maxRecords, abort, delete,
list). Jobs live in the platform database and run on the workers' job runners."""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson
from fastapi import Request, Response
from sqlalchemy import Connection
from starlette.convertors import StringConvertor, register_url_convertor

from app.api.deps import OrgContextDep, RawBodyDep, SandboxDep, StateDep
from app.api.openapi import json_body
from app.api.request_bodies import INGEST_JOB, QUERY_JOB
from app.api.routing import SalesforceRouter
from app.api.state import AppState
from app.errors import NotFound, SalesforceError, UnsupportedMediaType
from app.metadata.values import format_datetime
from app.sandbox.model import Sandbox
from app.services.bulk.csv_data import DELIMITERS, LINE_ENDINGS, write_rows
from app.services.bulk.ingest import HARD_DELETE_REFUSAL, INGEST_OPERATIONS
from app.services.bulk.query_job import check_bulk_query
from app.services.bulk.runner import QUERY_OPERATIONS
from app.services.context import OrgContext
from app.services.json_body import parse_object
from app.services.numbers import parse_count
from app.storage import bulk_jobs
from app.storage.bulk_jobs import FINISHED, Job, Origin, State
from app.storage.database import platform_transaction

router = SalesforceRouter(prefix="/services/data/{version}/jobs")
CSV = "text/csv"
RESULT_PARTS = {
    "successfulResults": "success",
    "failedResults": "failure",
    "unprocessedrecords": "unprocessed",
}
MAX_QUERY_PAGE = 1_000_000


class ResultPartConvertor(StringConvertor):
    """`{name:resultpart}`: one of RESULT_PARTS, so that GET .../batches is the 405 naming PUT
    that its one route makes it, not a result part of that name."""

    regex = "|".join(RESULT_PARTS)


register_url_convertor("resultpart", ResultPartConvertor())


def invalid_job(message: str) -> SalesforceError:
    return SalesforceError(f"InvalidJob : {message}", error_code="INVALIDJOB")


def invalid_state(job: Job, doing: str) -> SalesforceError:
    return SalesforceError(
        f"Job {job.id} is {job.state}: cannot {doing}", error_code="INVALIDJOBSTATE"
    )


def _api_version(version: str) -> float:
    return float(version.removeprefix("v"))


def job_info(job: Job, *, full: bool) -> dict[str, Any]:
    """The JobInfo Salesforce answers: the basics on create and update, with the counts and
    timings on a GET."""
    info: dict[str, Any] = {
        "id": job.id,
        "operation": job.operation,
        "object": job.sobject,
        "createdById": job.created_by,
        "createdDate": format_datetime(job.created_at),
        "systemModstamp": format_datetime(job.modstamp),
        "state": job.state,
    }
    if job.external_id_field:
        info["externalIdFieldName"] = job.external_id_field
    info.update(
        concurrencyMode="Parallel",
        contentType="CSV",
        apiVersion=_api_version(job.api_version),
    )
    if job.kind == "ingest" and job.state == State.OPEN:
        info["contentUrl"] = f"services/data/{job.api_version}/jobs/ingest/{job.id}/batches"
    info.update(lineEnding=job.line_ending, columnDelimiter=job.column_delimiter)
    if full:
        info["jobType"] = "V2Ingest" if job.kind == "ingest" else "V2Query"
        info["numberRecordsProcessed"] = job.processed
        if job.kind == "ingest":
            info["numberRecordsFailed"] = job.failed
        info.update(
            retries=0,
            totalProcessingTime=job.processing_ms,
            apiActiveProcessingTime=job.processing_ms,
            apexProcessingTime=0,
        )
        if job.error:
            info["errorMessage"] = job.error
    return info


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


def origin(sandbox: Sandbox, ctx: OrgContext) -> Origin:
    """A job made now, in this sandbox, by the session's user, at the request's API version."""
    return Origin(sandbox.id, sandbox.instance, f"v{ctx.api_version}", ctx.user_id, ctx.now)


def _new_job(app_state: AppState, sandbox: Sandbox, ctx: OrgContext, **values: Any) -> Job:
    with platform_transaction(app_state.platform) as conn:
        return bulk_jobs.create_job(conn, origin(sandbox, ctx), **values)


def _ingest_spec(ctx: OrgContext, data: dict[str, Any]) -> dict[str, Any]:
    operation = data.get("operation")
    if operation == "hardDelete":
        raise SalesforceError(HARD_DELETE_REFUSAL, error_code="FEATURENOTENABLED")
    operation = _choice(data, "operation", INGEST_OPERATIONS, "")
    name = data.get("object")
    sobject = ctx.registry.get(name) if isinstance(name, str) else None
    if sobject is None:
        raise SalesforceError(
            f"InvalidEntity : sObject type '{name}' is not supported", error_code="INVALIDENTITY"
        )
    external = data.get("externalIdFieldName")
    if operation == "upsert":
        field = sobject.field(external) if isinstance(external, str) else None
        if field is None or not (field.external_id or field.name == "Id"):
            raise invalid_job(f"External ID field {external} is not valid for {sobject.name}")
        external = field.name
    else:
        external = None
    return {
        "kind": "ingest",
        "operation": operation,
        "sobject": sobject.name,
        "external_id_field": external,
        "state": State.OPEN,
        **_dialect(data),
    }


@router.post("/ingest", openapi_extra=json_body(INGEST_JOB))
def create_ingest_job(
    raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    data = parse_object(raw, "JobInfo").data
    return job_info(_new_job(state, sandbox, ctx, **_ingest_spec(ctx, data)), full=False)


@router.post("/query", openapi_extra=json_body(QUERY_JOB))
def create_query_job(
    raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    data = parse_object(raw, "QueryJobInfo").data
    operation = _choice(data, "operation", QUERY_OPERATIONS, "")
    query = data.get("query")
    if not isinstance(query, str):
        raise invalid_job("A query is required")
    bound = check_bulk_query(ctx, query, operation == "queryAll")
    job = _new_job(
        state,
        sandbox,
        ctx,
        kind="query",
        operation=operation,
        sobject=bound.sobject.name,
        query=query,
        state=State.UPLOAD_COMPLETE,
        **_dialect(data),
    )
    _wake(state)
    return job_info(job, full=False)


def _wake(state: AppState) -> None:
    if state.bulk is not None:
        state.bulk.wake()


def _job(state: AppState, sandbox: Sandbox, kind: str, job_id: str) -> Job:
    with state.platform.connect() as conn:
        return bulk_jobs.find_job(conn, sandbox.instance, kind, job_id)


def _list(state: AppState, sandbox: Sandbox, kind: str) -> dict[str, Any]:
    with state.platform.connect() as conn:
        jobs = bulk_jobs.list_jobs(conn, sandbox.instance, kind)
    records = [
        {**job_info(job, full=False), "jobType": "V2Ingest" if kind == "ingest" else "V2Query"}
        for job in jobs
    ]
    return {"done": True, "records": records, "nextRecordsUrl": None}


@router.get("/ingest")
def list_ingest_jobs(ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep) -> dict[str, Any]:
    del ctx
    return _list(state, sandbox, "ingest")


@router.get("/query")
def list_query_jobs(ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep) -> dict[str, Any]:
    del ctx
    return _list(state, sandbox, "query")


@router.put("/ingest/{job_id}/batches", status_code=201, response_class=Response)
def upload_job_data(
    job_id: str,
    request: Request,
    raw: RawBodyDep,
    ctx: OrgContextDep,
    sandbox: SandboxDep,
    state: StateDep,
) -> Response:
    del ctx
    media_type = request.headers.get("content-type", CSV).partition(";")[0].strip().lower()
    if media_type != CSV:
        raise UnsupportedMediaType(media_type)
    _store_upload(state, sandbox, job_id, raw)
    return Response(status_code=201)


def _store_upload(state: AppState, sandbox: Sandbox, job_id: str, raw: bytes) -> None:
    job = _job(state, sandbox, "ingest", job_id)
    with platform_transaction(state.platform) as conn:
        current = _locked(conn, job)
        if current.state != State.OPEN:
            raise invalid_state(current, "upload data")
        if bulk_jobs.get_data(conn, job.seq, "upload") is not None:
            raise SalesforceError(
                f"Job {job.id} already has its data: a job takes one upload",
                error_code="INVALIDJOBSTATE",
            )
        bulk_jobs.put_data(conn, job.seq, "upload", raw)


# The moves a client may ask for, and the states each may start from.
TRANSITIONS = {
    State.UPLOAD_COMPLETE: (State.OPEN,),
    State.ABORTED: (State.OPEN, State.UPLOAD_COMPLETE, State.IN_PROGRESS),
}


def _change_state(
    state: AppState, sandbox: Sandbox, ctx: OrgContext, kind: str, job_id: str, raw: bytes
) -> dict[str, Any]:
    job = _job(state, sandbox, kind, job_id)
    wanted = parse_object(raw, "JobInfo").data.get("state")
    allowed = TRANSITIONS.get(str(wanted)) if kind == "ingest" or wanted == State.ABORTED else None
    if allowed is None:
        raise invalid_job(f"Invalid state: {wanted}")
    with platform_transaction(state.platform) as conn:
        current = _locked(conn, job)
        if current.state not in allowed or not bulk_jobs.set_state(
            conn, current, str(wanted), ctx.now, expected=current.state
        ):
            raise invalid_state(current, f"move to {wanted}")
        if wanted == State.ABORTED:
            upload = bulk_jobs.get_data(conn, job.seq, "upload")
            if upload is not None and current.state != State.IN_PROGRESS:
                bulk_jobs.put_data(conn, job.seq, "unprocessed", upload)
        changed = bulk_jobs.load_job(conn, job.seq)
    if wanted == State.UPLOAD_COMPLETE:
        _wake(state)
    return job_info(changed, full=False)


@router.patch("/ingest/{job_id}")
def update_ingest_job(
    job_id: str, raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    return _change_state(state, sandbox, ctx, "ingest", job_id, raw)


@router.patch("/query/{job_id}")
def update_query_job(
    job_id: str, raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    return _change_state(state, sandbox, ctx, "query", job_id, raw)


@router.get("/ingest/{job_id}")
def get_ingest_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    del ctx
    return job_info(_job(state, sandbox, "ingest", job_id), full=True)


@router.get("/query/{job_id}")
def get_query_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    del ctx
    return job_info(_job(state, sandbox, "query", job_id), full=True)


def _delete(state: AppState, sandbox: Sandbox, kind: str, job_id: str) -> Response:
    """A job that is not running: one closed but not yet taken, or one that has ended."""
    job = _job(state, sandbox, kind, job_id)
    with platform_transaction(state.platform) as conn:
        current = _locked(conn, job)
        if current.state not in FINISHED and current.state != State.UPLOAD_COMPLETE:
            raise invalid_state(current, "delete it")
        bulk_jobs.delete_job(conn, job.seq)
    return Response(status_code=204)


def _locked(conn: Connection, job: Job) -> Job:
    """The job as it is now, locked until the transaction ends (a runner may have taken it)."""
    current = bulk_jobs.lock_job(conn, job.seq)
    if current is None:
        raise NotFound()
    return current


@router.delete("/ingest/{job_id}", status_code=204, response_class=Response)
def delete_ingest_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> Response:
    del ctx
    return _delete(state, sandbox, "ingest", job_id)


@router.delete("/query/{job_id}", status_code=204, response_class=Response)
def delete_query_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> Response:
    del ctx
    return _delete(state, sandbox, "query", job_id)


@router.get("/ingest/{job_id}/{part:resultpart}", response_class=Response)
def ingest_results(
    job_id: str, part: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> Response:
    del ctx
    stored = RESULT_PARTS[part]
    job = _job(state, sandbox, "ingest", job_id)
    if job.state not in FINISHED:
        raise invalid_state(job, f"give {part} before it has finished")
    with state.platform.connect() as conn:
        content = bulk_jobs.get_data(conn, job.seq, stored)
        if content is None and stored == "unprocessed":
            content = bulk_jobs.get_data(conn, job.seq, "upload")
    return Response(content or b"", media_type=CSV)


def _offset(locator: str | None) -> int:
    """Salesforce's locator is the base64 of the next row's offset."""
    if not locator or locator == "null":
        return 0
    try:
        decoded = base64.b64decode(locator + "=" * (-len(locator) % 4), validate=True).decode()
    except (binascii.Error, ValueError):  # not base64, or not ASCII
        decoded = ""
    offset = parse_count(decoded)
    if offset is None:
        raise SalesforceError(f"Invalid locator: {locator}", error_code="INVALID_LOCATOR")
    return offset


@router.get("/query/{job_id}/results", response_class=Response)
def query_results(
    job_id: str, request: Request, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> Response:
    del ctx
    job = _job(state, sandbox, "query", job_id)
    if job.state != State.JOB_COMPLETE:
        raise invalid_state(job, "give results before it has completed")
    params = request.query_params
    asked = params.get("maxRecords")
    page = MAX_QUERY_PAGE if asked is None else parse_count(asked)
    if page is None or page < 1:
        raise SalesforceError(f"Invalid maxRecords: {asked}", error_code="INVALIDJOB")
    start = _offset(params.get("locator"))
    with state.platform.connect() as conn:
        stored = orjson.loads(bulk_jobs.get_data(conn, job.seq, "result") or b"{}")
    rows = stored.get("rows", [])
    end = min(start + page, len(rows))
    body = write_rows(
        stored.get("header", []), rows[start:end], job.column_delimiter, job.line_ending
    )
    locator = (
        base64.b64encode(str(end).encode()).decode().rstrip("=") if end < len(rows) else "null"
    )
    headers = {"Sforce-Locator": locator, "Sforce-NumberOfRecords": str(max(end - start, 0))}
    return Response(body, media_type=CSV, headers=headers)
