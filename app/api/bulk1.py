"""Bulk API 1.0 (`/services/async/{version}/`): jobs, batches of CSV, JSON or XML records (or
a query), batch results, and query results. Its clients send the session in `X-SFDC-Session`
and read its own error envelope (`<error><exceptionCode>`, or JSON for a JSON job), always
with HTTP 400. Batches run on the same job runner as Bulk API 2.0's jobs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from xml.etree.ElementTree import Element
from xml.sax.saxutils import escape

from defusedxml import ElementTree
from fastapi import Request, Response

from app.api import bulk1_format as fmt
from app.api.deps import RawBodyDep, StateDep, org_context_at, sandbox_of, session_for, token_in
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.api.soap_records import record_xml
from app.api.state import AppState
from app.api.threads import run_in_request_thread
from app.errors import InvalidSession, NotFound, SalesforceError
from app.sandbox.model import Sandbox
from app.services.bulk import jobs_v1 as jobs
from app.services.bulk.csv_data import write_rows
from app.services.bulk.jobs import Job, Scope
from app.services.bulk.jobs_v1 import BulkError
from app.services.context import OrgContext
from app.services.json_body import parse_object
from app.services.org import parse_version

router = SalesforceRouter(prefix="/services/async/{version}")


def error_response(code: str, message: str, as_json: bool) -> Response:
    # A message may echo the client's text: no lone surrogate may reach the encoder.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    if as_json:
        body = {"exceptionCode": code, "exceptionMessage": message}
        return SalesforceJSONResponse(body, status_code=400)
    inner = (
        f"<exceptionCode>{escape(code)}</exceptionCode>"
        f"<exceptionMessage>{escape(message)}</exceptionMessage>"
    )
    return Response(fmt.xml_document("error", inner), status_code=400, media_type=fmt.XML_TYPE)


def _asks_json(request: Request) -> bool:
    return "json" in request.headers.get("content-type", "").lower()


@dataclass(frozen=True)
class Call:
    """A Bulk API 1.0 request, authenticated: the org it reaches and its body."""

    state: AppState
    sandbox: Sandbox
    ctx: OrgContext
    raw: bytes
    as_json: bool

    @property
    def scope(self) -> Scope:
        return Scope(self.state.platform, self.state.bulk, self.sandbox, self.ctx)

    def job(self, job_id: str) -> Job:
        return jobs.find_job(self.scope, job_id)

    def batch(self, job: Job, batch_id: str) -> Job:
        return jobs.find_batch(self.scope, job, batch_id)


Work = Callable[[Call], Response]


async def answer(
    request: Request, version: str, raw: bytes, state: AppState, work: Work
) -> Response:
    """Authenticate (X-SFDC-Session, or a bearer token), then do the work in a request thread;
    every failure in Bulk API 1.0's envelope."""
    as_json = _asks_json(request)
    token = request.headers.get("x-sfdc-session") or token_in(request.headers)
    try:
        api_version = parse_version("v" + version)
        await session_for(request, token or None)
        sandbox = await sandbox_of(request)
        ctx = await org_context_at(request, api_version)
    except InvalidSession:
        return error_response("InvalidSessionId", "Invalid session id", as_json)
    except NotFound:
        return error_response(
            "InvalidVersion", f"Invalid api version specified on URL: {version}", as_json
        )
    call = Call(state=state, sandbox=sandbox, ctx=ctx, raw=raw, as_json=as_json)
    try:
        return await run_in_request_thread(work, call)
    except BulkError as error:
        return error_response(error.code, error.message, as_json)
    except SalesforceError as error:
        return error_response(error.error_code, error.message, as_json)


def _respond(
    content: bytes | dict[str, Any] | list[Any], media_type: str, status: int = 200
) -> Response:
    if isinstance(content, bytes):
        return Response(content, status_code=status, media_type=media_type)
    return SalesforceJSONResponse(content, status_code=status)


def _local(element: Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _request_fields(raw: bytes, as_json: bool) -> dict[str, Any]:
    """A jobInfo body's fields, from JSON or from XML."""
    if as_json:
        try:
            return parse_object(raw, "JobInfo").data
        except SalesforceError as error:
            raise BulkError("InvalidJob", error.message) from None
    try:
        root = ElementTree.fromstring(raw)
    except Exception:  # defusedxml raises several unrelated types for hostile or broken XML
        raise BulkError("InvalidJob", "Unable to parse the XML job information") from None
    return {_local(child): (child.text or "").strip() for child in root}


def _info(call: Call, job: Job, status: int = 200, *, as_json: bool | None = None) -> Response:
    """The job's jobInfo: in JSON or XML as `as_json` says (a request with a body is answered
    in its own format, whatever the job's content type); else as the job's content type."""
    batches = jobs.batches_of(call.scope, job)
    json_wanted = job.content_type == "JSON" if as_json is None else as_json
    return _respond(
        *fmt.render_info("jobInfo", fmt.job_fields(job, batches), json_wanted),
        status,
    )


def _create_job(call: Call) -> Response:
    fields = _request_fields(call.raw, call.as_json)
    job = jobs.create_job(call.scope, fields, call.as_json)
    return _info(call, job, status=201, as_json=call.as_json)


def _update_job(job_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        wanted = _request_fields(call.raw, call.as_json).get("state")
        return _info(call, jobs.change_state(call.scope, job, wanted), as_json=call.as_json)

    return work


def _batch_info(batch: Job, job: Job, status: int = 200) -> Response:
    as_json = job.content_type == "JSON"
    return _respond(*fmt.render_info("batchInfo", fmt.batch_fields(batch, job), as_json), status)


def _add_batch(job_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        return _batch_info(jobs.add_batch(call.scope, job, call.raw), job, 201)

    return work


def _list_batches(job_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        listed = [fmt.batch_fields(batch, job) for batch in jobs.batches_of(call.scope, job)]
        return _respond(*fmt.render_batch_list(listed, job.content_type == "JSON"))

    return work


def _get_batch(job_id: str, batch_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        return _batch_info(call.batch(job, batch_id), job)

    return work


def _batch_request(job_id: str, batch_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        data = jobs.batch_request(call.scope, call.batch(job, batch_id))
        media = {"JSON": fmt.JSON_TYPE, "XML": fmt.XML_TYPE}.get(job.content_type, fmt.CSV_TYPE)
        return Response(data, media_type=media)

    return work


def _batch_result(job_id: str, batch_id: str) -> Work:
    def work(call: Call) -> Response:
        job, batch = jobs.completed_batch(call.scope, job_id, batch_id)
        if jobs.is_query(job):
            result_id = jobs.result_id(batch)
            if job.content_type == "JSON":
                return SalesforceJSONResponse([result_id])
            inner = f"<result>{result_id}</result>"
            return Response(fmt.xml_document("result-list", inner), media_type=fmt.XML_TYPE)
        result = jobs.ingest_result(call.scope, batch)
        return _respond(*fmt.render_ingest_results(result, job.content_type))

    return work


def _query_result(job_id: str, batch_id: str, result_id: str) -> Work:
    def work(call: Call) -> Response:
        job, batch = jobs.completed_batch(call.scope, job_id, batch_id)
        stored = jobs.query_result(call.scope, batch, result_id)
        if job.content_type == "CSV":
            body = write_rows(stored["header"], stored["rows"])
            return Response(body, media_type=fmt.CSV_TYPE)
        if job.content_type == "JSON":
            return SalesforceJSONResponse(
                fmt.json_query_records(stored["records"], stored["temporal"])
            )
        records = "".join(record_xml(r, "records", prefix="") for r in stored["records"])
        document = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<queryResult xmlns="{fmt.NAMESPACE}" xmlns:xsi="{fmt.XSI}">{records}</queryResult>'
        )
        return Response(document.encode(), media_type=fmt.XML_TYPE)

    return work


@router.post("/job", include_in_schema=False)
async def create_job(version: str, request: Request, raw: RawBodyDep, state: StateDep) -> Response:
    return await answer(request, version, raw, state, _create_job)


@router.get("/job/{job_id}", include_in_schema=False)
async def get_job(version: str, job_id: str, request: Request, state: StateDep) -> Response:
    return await answer(request, version, b"", state, lambda call: _info(call, call.job(job_id)))


@router.post("/job/{job_id}", include_in_schema=False)
async def update_job(
    version: str, job_id: str, request: Request, raw: RawBodyDep, state: StateDep
) -> Response:
    return await answer(request, version, raw, state, _update_job(job_id))


@router.post("/job/{job_id}/batch", include_in_schema=False)
async def add_batch(
    version: str, job_id: str, request: Request, raw: RawBodyDep, state: StateDep
) -> Response:
    return await answer(request, version, raw, state, _add_batch(job_id))


@router.get("/job/{job_id}/batch", include_in_schema=False)
async def list_batches(version: str, job_id: str, request: Request, state: StateDep) -> Response:
    return await answer(request, version, b"", state, _list_batches(job_id))


@router.get("/job/{job_id}/batch/{batch_id}", include_in_schema=False)
async def get_batch(
    version: str, job_id: str, batch_id: str, request: Request, state: StateDep
) -> Response:
    return await answer(request, version, b"", state, _get_batch(job_id, batch_id))


@router.get("/job/{job_id}/batch/{batch_id}/request", include_in_schema=False)
async def get_batch_request(
    version: str, job_id: str, batch_id: str, request: Request, state: StateDep
) -> Response:
    return await answer(request, version, b"", state, _batch_request(job_id, batch_id))


@router.get("/job/{job_id}/batch/{batch_id}/result", include_in_schema=False)
async def get_batch_result(
    version: str, job_id: str, batch_id: str, request: Request, state: StateDep
) -> Response:
    return await answer(request, version, b"", state, _batch_result(job_id, batch_id))


@router.get("/job/{job_id}/batch/{batch_id}/result/{result_id}", include_in_schema=False)
async def get_query_result(
    version: str, job_id: str, batch_id: str, result_id: str, request: Request, state: StateDep
) -> Response:
    return await answer(request, version, b"", state, _query_result(job_id, batch_id, result_id))


@router.api_route(
    "/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False
)
async def unknown_resource(version: str, request: Request, state: StateDep) -> Response:
    def work(call: Call) -> Response:
        raise BulkError("InvalidUrl", "The requested resource does not exist")

    return await answer(request, version, b"", state, work)
