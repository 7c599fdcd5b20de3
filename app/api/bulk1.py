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

import orjson
from defusedxml import ElementTree
from fastapi import Request, Response

from app.api import bulk1_format as fmt
from app.api.bulk2 import origin
from app.api.deps import RawBodyDep, StateDep, org_context_at, sandbox_of, session_for, token_in
from app.api.routing import SalesforceJSONResponse, SalesforceRouter
from app.api.soap_records import record_xml
from app.api.state import AppState
from app.api.threads import run_in_request_thread
from app.errors import InvalidSession, NotFound, SalesforceError
from app.sandbox.model import Sandbox
from app.services.bulk.csv_data import write_rows
from app.services.bulk.ingest import HARD_DELETE_REFUSAL, INGEST_OPERATIONS, IngestResult
from app.services.bulk.runner import QUERY_OPERATIONS
from app.services.context import OrgContext
from app.services.json_body import parse_object
from app.services.org import parse_version
from app.storage import bulk_jobs
from app.storage.bulk_jobs import RESULT_PREFIX, Job, Origin, State
from app.storage.database import platform_transaction
from app.storage.ids import make_id

router = SalesforceRouter(prefix="/services/async/{version}")
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

    def job(self, job_id: str) -> Job:
        with self.state.platform.connect() as conn:
            try:
                return bulk_jobs.find_job(conn, self.sandbox.instance, "job", job_id)
            except NotFound:
                raise BulkError("InvalidJob", f"Unable to find object: {job_id}") from None

    def batch(self, job: Job, batch_id: str) -> Job:
        with self.state.platform.connect() as conn:
            try:
                batch = bulk_jobs.find_job(conn, self.sandbox.instance, "batch", batch_id)
            except NotFound:
                batch = None
        if batch is None or batch.parent_seq != job.seq:
            raise BulkError("InvalidBatch", f"Unable to find object: {batch_id}")
        return batch


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


def _info(call: Call, job: Job, status: int = 200) -> Response:
    with call.state.platform.connect() as conn:
        batches = bulk_jobs.batches_of(conn, job)
    return _respond(
        *fmt.render_info("jobInfo", fmt.job_fields(job, batches), job.content_type == "JSON"),
        status,
    )


def _create_job(call: Call) -> Response:
    fields = _request_fields(call.raw, call.as_json)
    operation = fields.get("operation")
    if operation == "hardDelete":
        raise BulkError("FeatureNotEnabled", HARD_DELETE_REFUSAL)
    if operation not in OPERATIONS:
        raise BulkError("InvalidJob", f"Invalid operation: {operation}")
    name = fields.get("object")
    sobject = call.ctx.registry.get(name) if isinstance(name, str) else None
    if sobject is None:
        raise BulkError("InvalidJob", f"Unable to find object: {name}")
    content_type = fields.get("contentType") or ("JSON" if call.as_json else "XML")
    if content_type not in CONTENT_TYPES:
        raise BulkError("InvalidJob", f"Unsupported content type: {content_type}")
    external = None
    if operation == "upsert":
        wanted = fields.get("externalIdFieldName")
        field = sobject.field(wanted) if isinstance(wanted, str) else None
        if field is None or not (field.external_id or field.name == "Id"):
            raise BulkError(
                "InvalidJob", f"External ID field {wanted} is not valid for {sobject.name}"
            )
        external = field.name
    with platform_transaction(call.state.platform) as conn:
        job = bulk_jobs.create_job(
            conn,
            origin(call.sandbox, call.ctx),
            kind="job",
            content_type=content_type,
            operation=operation,
            sobject=sobject.name,
            external_id_field=external,
            column_delimiter="COMMA",
            line_ending="LF",
            state=State.OPEN,
        )
    return _info(call, job, status=201)


# The job states a client may ask for, and the states each may start from.
TRANSITIONS = {State.CLOSED: (State.OPEN,), State.ABORTED: (State.OPEN, State.CLOSED)}


def _update_job(job_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        wanted = _request_fields(call.raw, call.as_json).get("state")
        allowed = TRANSITIONS.get(str(wanted))
        if allowed is None:
            raise BulkError("InvalidJobState", f"Invalid state: {wanted}")
        if job.state not in allowed:
            raise BulkError("InvalidJobState", f"Job is {job.state}: it cannot be {wanted}")
        with platform_transaction(call.state.platform) as conn:
            current = bulk_jobs.lock_job(conn, job.seq)
            if current is None or current.state not in allowed:
                raise BulkError("InvalidJobState", f"Job is {job.state}: it cannot be {wanted}")
            bulk_jobs.set_state(conn, current, str(wanted), call.ctx.now, expected=current.state)
            if wanted == State.ABORTED:
                for batch in bulk_jobs.batches_of(conn, job):
                    bulk_jobs.set_state(
                        conn, batch, State.NOT_PROCESSED, call.ctx.now, expected=State.QUEUED
                    )
            changed = bulk_jobs.load_job(conn, job.seq)
        return _info(call, changed)

    return work


def _add_batch(job_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        if job.state != State.OPEN:
            raise BulkError("InvalidJobState", "Job not open")
        if len(call.raw) > MAX_BATCH_BYTES:
            raise BulkError(
                "InvalidBatch", f"Batch size exceeds the limit of {MAX_BATCH_BYTES} bytes"
            )
        ctx = call.ctx
        made = Origin(job.sandbox_id, job.sandbox_instance, job.api_version, ctx.user_id, ctx.now)
        with platform_transaction(call.state.platform) as conn:
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
            bulk_jobs.put_data(conn, batch.seq, "upload", call.raw)
        runner = call.state.bulk
        if runner is not None:
            runner.wake()
            # The answer says Queued, as Salesforce's does; a small batch is given a moment to
            # run first, so that a client's first look finds it done (clients wait seconds
            # between looks).
            runner.wait_finished(batch.seq, QUICK_BATCH_SECONDS)
        as_json = job.content_type == "JSON"
        return _respond(*fmt.render_info("batchInfo", fmt.batch_fields(batch, job), as_json), 201)

    return work


def _list_batches(job_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        with call.state.platform.connect() as conn:
            batches = bulk_jobs.batches_of(conn, job)
        listed = [fmt.batch_fields(batch, job) for batch in batches]
        return _respond(*fmt.render_batch_list(listed, job.content_type == "JSON"))

    return work


def _get_batch(job_id: str, batch_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        batch = call.batch(job, batch_id)
        as_json = job.content_type == "JSON"
        return _respond(*fmt.render_info("batchInfo", fmt.batch_fields(batch, job), as_json))

    return work


def _batch_request(job_id: str, batch_id: str) -> Work:
    def work(call: Call) -> Response:
        job = call.job(job_id)
        batch = call.batch(job, batch_id)
        with call.state.platform.connect() as conn:
            data = bulk_jobs.get_data(conn, batch.seq, "upload") or b""
        media = {"JSON": fmt.JSON_TYPE, "XML": fmt.XML_TYPE}.get(job.content_type, fmt.CSV_TYPE)
        return Response(data, media_type=media)

    return work


def _completed(call: Call, job_id: str, batch_id: str) -> tuple[Job, Job]:
    job = call.job(job_id)
    batch = call.batch(job, batch_id)
    if batch.state != State.COMPLETED:
        raise BulkError("InvalidBatch", "Records not processed")
    return job, batch


def _batch_result(job_id: str, batch_id: str) -> Work:
    def work(call: Call) -> Response:
        job, batch = _completed(call, job_id, batch_id)
        if job.operation in ("query", "queryAll"):
            result_id = make_id(RESULT_PREFIX, batch.seq)
            if job.content_type == "JSON":
                return SalesforceJSONResponse([result_id])
            inner = f"<result>{result_id}</result>"
            return Response(fmt.xml_document("result-list", inner), media_type=fmt.XML_TYPE)
        with call.state.platform.connect() as conn:
            stored = bulk_jobs.get_data(conn, batch.seq, "outcomes") or b""
        result = IngestResult.from_text(stored.decode())
        return _respond(*fmt.render_ingest_results(result, job.content_type))

    return work


def _query_result(job_id: str, batch_id: str, result_id: str) -> Work:
    def work(call: Call) -> Response:
        job, batch = _completed(call, job_id, batch_id)
        if bulk_jobs.job_seq(result_id, RESULT_PREFIX) != batch.seq:
            raise BulkError("InvalidBatch", f"Unable to find object: {result_id}")
        with call.state.platform.connect() as conn:
            stored = orjson.loads(bulk_jobs.get_data(conn, batch.seq, "result") or b"{}")
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
