"""Bulk API 2.0: ingest jobs (create, upload CSV, UploadComplete, results, abort, delete, list)
and query jobs (create, results paged with Sforce-Locator and maxRecords, abort, delete,
list). Jobs live in the platform database and run on the workers' job runners."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from fastapi import Request, Response
from starlette.convertors import StringConvertor, register_url_convertor

from app.api.deps import OrgContextDep, RawBodyDep, SandboxDep, StateDep
from app.api.openapi import json_body
from app.api.request_bodies import INGEST_JOB, QUERY_JOB
from app.api.routing import SalesforceRouter
from app.api.state import AppState
from app.errors import SalesforceError, UnsupportedMediaType
from app.metadata.values import format_datetime
from app.sandbox.model import Sandbox
from app.services.bulk import jobs_v2 as jobs
from app.services.bulk.csv_data import write_rows
from app.services.bulk.jobs import Job, Scope, State
from app.services.bulk.jobs_v2 import RESULT_PARTS
from app.services.context import OrgContext
from app.services.json_body import parse_object
from app.services.numbers import parse_count

router = SalesforceRouter(prefix="/services/data/{version}/jobs")
CSV = "text/csv"
MAX_QUERY_PAGE = 1_000_000


class ResultPartConvertor(StringConvertor):
    """`{name:resultpart}`: one of RESULT_PARTS, so that GET .../batches is the 405 naming PUT
    that its one route makes it, not a result part of that name."""

    regex = "|".join(RESULT_PARTS)


register_url_convertor("resultpart", ResultPartConvertor())


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


def _scope(state: AppState, sandbox: Sandbox, ctx: OrgContext) -> Scope:
    return Scope(state.platform, state.bulk, sandbox, ctx)


@router.post("/ingest", openapi_extra=json_body(INGEST_JOB))
def create_ingest_job(
    raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    data = parse_object(raw, "JobInfo").data
    return job_info(jobs.create_ingest_job(_scope(state, sandbox, ctx), data), full=False)


@router.post("/query", openapi_extra=json_body(QUERY_JOB))
def create_query_job(
    raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    data = parse_object(raw, "QueryJobInfo").data
    return job_info(jobs.create_query_job(_scope(state, sandbox, ctx), data), full=False)


def _list(scope: Scope, kind: str) -> dict[str, Any]:
    records = [
        {**job_info(job, full=False), "jobType": "V2Ingest" if kind == "ingest" else "V2Query"}
        for job in jobs.list_jobs(scope, kind)
    ]
    return {"done": True, "records": records, "nextRecordsUrl": None}


@router.get("/ingest")
def list_ingest_jobs(ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep) -> dict[str, Any]:
    return _list(_scope(state, sandbox, ctx), "ingest")


@router.get("/query")
def list_query_jobs(ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep) -> dict[str, Any]:
    return _list(_scope(state, sandbox, ctx), "query")


@router.put("/ingest/{job_id}/batches", status_code=201, response_class=Response)
def upload_job_data(
    job_id: str,
    request: Request,
    raw: RawBodyDep,
    ctx: OrgContextDep,
    sandbox: SandboxDep,
    state: StateDep,
) -> Response:
    media_type = request.headers.get("content-type", CSV).partition(";")[0].strip().lower()
    if media_type != CSV:
        raise UnsupportedMediaType(media_type)
    jobs.store_upload(_scope(state, sandbox, ctx), job_id, raw)
    return Response(status_code=201)


def _change_state(scope: Scope, kind: str, job_id: str, raw: bytes) -> dict[str, Any]:
    job = jobs.find_job(scope, kind, job_id)
    wanted = parse_object(raw, "JobInfo").data.get("state")
    return job_info(jobs.change_state(scope, job, wanted), full=False)


@router.patch("/ingest/{job_id}")
def update_ingest_job(
    job_id: str, raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    return _change_state(_scope(state, sandbox, ctx), "ingest", job_id, raw)


@router.patch("/query/{job_id}")
def update_query_job(
    job_id: str, raw: RawBodyDep, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    return _change_state(_scope(state, sandbox, ctx), "query", job_id, raw)


@router.get("/ingest/{job_id}")
def get_ingest_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    return job_info(jobs.find_job(_scope(state, sandbox, ctx), "ingest", job_id), full=True)


@router.get("/query/{job_id}")
def get_query_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> dict[str, Any]:
    return job_info(jobs.find_job(_scope(state, sandbox, ctx), "query", job_id), full=True)


@router.delete("/ingest/{job_id}", status_code=204, response_class=Response)
def delete_ingest_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> Response:
    jobs.delete_job(_scope(state, sandbox, ctx), "ingest", job_id)
    return Response(status_code=204)


@router.delete("/query/{job_id}", status_code=204, response_class=Response)
def delete_query_job(
    job_id: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> Response:
    jobs.delete_job(_scope(state, sandbox, ctx), "query", job_id)
    return Response(status_code=204)


@router.get("/ingest/{job_id}/{part:resultpart}", response_class=Response)
def ingest_results(
    job_id: str, part: str, ctx: OrgContextDep, sandbox: SandboxDep, state: StateDep
) -> Response:
    content = jobs.ingest_results(_scope(state, sandbox, ctx), job_id, part)
    return Response(content, media_type=CSV)


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
    scope = _scope(state, sandbox, ctx)
    job = jobs.completed_query(scope, job_id)
    params = request.query_params
    asked = params.get("maxRecords")
    size = MAX_QUERY_PAGE if asked is None else parse_count(asked)
    if size is None or size < 1:
        raise SalesforceError(f"Invalid maxRecords: {asked}", error_code="INVALIDJOB")
    page = jobs.result_page(scope, job, _offset(params.get("locator")), size)
    body = write_rows(page.header, page.rows, job.column_delimiter, job.line_ending)
    locator = (
        base64.b64encode(str(page.end).encode()).decode().rstrip("=")
        if page.end < page.total
        else "null"
    )
    headers = {
        "Sforce-Locator": locator,
        "Sforce-NumberOfRecords": str(max(page.end - page.start, 0)),
    }
    return Response(body, media_type=CSV, headers=headers)
