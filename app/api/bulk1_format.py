"""Bulk API 1.0's wire formats: JobInfo, BatchInfo, results and errors in XML (its own
namespace) or JSON, whichever the job speaks; ingest results also in CSV."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from xml.sax.saxutils import escape

from app.metadata.values import format_datetime_z
from app.services.bulk.csv_data import write_rows
from app.services.bulk.ingest import IngestResult, error_text
from app.services.bulk.jobs import Job, State

NAMESPACE = "http://www.force.com/2009/06/asyncapi/dataload"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
XML_TYPE = "application/xml"
JSON_TYPE = "application/json"
CSV_TYPE = "text/csv"


def xml_fields(fields: list[tuple[str, Any]]) -> str:
    """The fields as XML elements; a null one is left out, as Salesforce's XML does (its JSON
    writes it as null)."""
    return "".join(
        f"<{name}>{escape(_text(value))}</{name}>" for name, value in fields if value is not None
    )


def xml_document(root: str, inner: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><{root} xmlns="{NAMESPACE}">{inner}</{root}>'
    ).encode()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def job_fields(job: Job, batches: list[Job]) -> list[tuple[str, Any]]:
    counts = {state: sum(1 for b in batches if b.state == state) for state in _BATCH_COUNTS}
    fields: list[tuple[str, Any]] = [
        ("id", job.id),
        ("operation", job.operation),
        ("object", job.sobject),
        ("createdById", job.created_by),
        ("createdDate", format_datetime_z(job.created_at)),
        ("systemModstamp", format_datetime_z(job.modstamp)),
        ("state", job.state),
    ]
    if job.external_id_field:
        fields.append(("externalIdFieldName", job.external_id_field))
    processing = sum(b.processing_ms for b in batches)
    fields += [
        ("concurrencyMode", "Parallel"),
        ("contentType", job.content_type),
        ("numberBatchesQueued", counts[State.QUEUED]),
        ("numberBatchesInProgress", counts[State.IN_PROGRESS]),
        ("numberBatchesCompleted", counts[State.COMPLETED]),
        ("numberBatchesFailed", counts[State.FAILED]),
        ("numberBatchesTotal", len(batches)),
        ("numberRecordsProcessed", sum(b.processed for b in batches)),
        ("numberRetries", 0),
        ("apiVersion", float(job.api_version.removeprefix("v"))),
        ("numberRecordsFailed", sum(b.failed for b in batches)),
        ("totalProcessingTime", processing),
        ("apiActiveProcessingTime", processing),
        ("apexProcessingTime", 0),
    ]
    return fields


_BATCH_COUNTS = (State.QUEUED, State.IN_PROGRESS, State.COMPLETED, State.FAILED)


def batch_fields(batch: Job, job: Job) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = [
        ("id", batch.id),
        ("jobId", job.id),
        ("state", batch.state),
        ("stateMessage", batch.error or None),
    ]
    fields += [
        ("createdDate", format_datetime_z(batch.created_at)),
        ("systemModstamp", format_datetime_z(batch.modstamp)),
        ("numberRecordsProcessed", batch.processed),
        ("numberRecordsFailed", batch.failed),
        ("totalProcessingTime", batch.processing_ms),
        ("apiActiveProcessingTime", batch.processing_ms),
        ("apexProcessingTime", 0),
    ]
    return fields


def render_info(
    root: str, fields: list[tuple[str, Any]], as_json: bool
) -> tuple[bytes | dict[str, Any], str]:
    if as_json:
        return dict(fields), JSON_TYPE
    return xml_document(root, xml_fields(fields)), XML_TYPE


def render_batch_list(
    batches: list[list[tuple[str, Any]]], as_json: bool
) -> tuple[bytes | dict[str, Any], str]:
    if as_json:
        return {"batchInfo": [dict(fields) for fields in batches]}, JSON_TYPE
    inner = "".join(f"<batchInfo>{xml_fields(fields)}</batchInfo>" for fields in batches)
    return xml_document("batchInfoList", inner), XML_TYPE


def render_ingest_results(
    result: IngestResult, content_type: str
) -> tuple[bytes | list[dict[str, Any]], str]:
    """The batch's results, a row per record in the order sent."""
    if content_type == "JSON":
        return [
            {
                "success": outcome.error is None,
                "created": outcome.created,
                "id": outcome.record_id,
                "errors": [] if outcome.error is None else [_json_error(outcome.error)],
            }
            for outcome in result.outcomes
        ], JSON_TYPE
    if content_type == "XML":
        items = "".join(_xml_result(o.record_id, o.created, o.error) for o in result.outcomes)
        return xml_document("results", items), XML_TYPE
    rows = [
        [
            outcome.record_id or "",
            "true" if outcome.error is None else "false",
            "true" if outcome.created else "false",
            "" if outcome.error is None else error_text(outcome.error),
        ]
        for outcome in result.outcomes
    ]
    return write_rows(["Id", "Success", "Created", "Error"], rows), CSV_TYPE


def _json_error(error: dict[str, Any]) -> dict[str, Any]:
    return {
        "message": error["message"],
        "fields": error["fields"],
        "statusCode": error["statusCode"],
    }


def _xml_result(record_id: str | None, created: bool, error: dict[str, Any] | None) -> str:
    parts = ["<result>"]
    parts.append(
        f"<id>{escape(record_id)}</id>" if record_id else f'<id xsi:nil="true" xmlns:xsi="{XSI}"/>'
    )
    if error is not None:
        fields = "".join(f"<fields>{escape(f)}</fields>" for f in error["fields"])
        parts.append(
            f"<errors>{fields}<message>{escape(error['message'])}</message>"
            f"<statusCode>{escape(error['statusCode'])}</statusCode></errors>"
        )
    parts.append(f"<success>{_text(error is None)}</success><created>{_text(created)}</created>")
    parts.append("</result>")
    return "".join(parts)


def epoch_millis(text: str) -> int:
    """A REST date or datetime as Bulk API 1.0's JSON writes it: milliseconds since 1970."""
    if "T" in text:
        moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")
    else:
        moment = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def json_query_records(records: list[dict[str, Any]], temporal: list[str]) -> list[dict[str, Any]]:
    """Query records for a JSON job: as the REST API writes them, but dates and datetimes in
    epoch milliseconds, as Bulk API 1.0 writes them."""
    for record in records:
        for path in temporal:
            *parents, name = path.split(".")
            holder: Any = record
            for parent in parents:
                holder = holder.get(parent) if isinstance(holder, dict) else None
            if isinstance(holder, dict) and isinstance(holder.get(name), str):
                holder[name] = epoch_millis(holder[name])
    return records
