"""Running an ingest job: each CSV row through the same record service as REST (validation,
references, the journal, so a sandbox reset undoes it), each in its own savepoint, so a bad
row fails alone. What it gives: the successful, failed and unprocessed records as CSV."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from app.errors import SalesforceError
from app.metadata.model import FieldType, SObjectDef
from app.services import records
from app.services.bulk.csv_data import InvalidBatch, read_upload, write_raw, write_rows
from app.services.composite import dml_error
from app.services.context import OrgContext
from app.services.json_body import JsonBody
from app.storage.bulk_jobs import Job

NULL_VALUE = "#N/A"  # a CSV cell that sets a field to null (an empty cell leaves it alone)
BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
# The column each operation reads the record to act on from.
KEY_COLUMN = {"update": "Id", "delete": "Id"}


@dataclass(frozen=True)
class IngestResult:
    processed: int
    failed: int
    success: bytes
    failure: bytes
    unprocessed: bytes

    def to_text(self) -> str:
        return json.dumps(
            {
                "processed": self.processed,
                "failed": self.failed,
                "success": self.success.decode(),
                "failure": self.failure.decode(),
                "unprocessed": self.unprocessed.decode(),
            }
        )

    @classmethod
    def from_text(cls, text: str) -> IngestResult:
        data = json.loads(text)
        return cls(
            processed=int(data["processed"]),
            failed=int(data["failed"]),
            success=data["success"].encode(),
            failure=data["failure"].encode(),
            unprocessed=data["unprocessed"].encode(),
        )


def _value(sobject: SObjectDef, name: str, text: str) -> Any:
    if text == NULL_VALUE:
        return None
    field = sobject.field(name)
    if field is not None and field.type is FieldType.BOOLEAN:
        return BOOLEANS.get(text.strip().lower(), text)
    return text


def _check_header(sobject: SObjectDef, header: list[str], job: Job) -> None:
    for name in header:
        if sobject.field(name) is None:
            raise InvalidBatch(f"InvalidBatch : Field name not found : {name}")
    needed = KEY_COLUMN.get(job.operation) or job.external_id_field
    if needed and needed.lower() not in {name.lower() for name in header}:
        raise InvalidBatch(f"InvalidBatch : Field name not found : {needed}")


def _error_text(error: SalesforceError) -> str:
    """The sf__Error of a failed row: the DML error, as `CODE:message:fields --`."""
    failure = dml_error(error)
    return f"{failure['statusCode']}:{failure['message']}:{','.join(failure['fields'])} --"


Action = Callable[[dict[str, Any]], tuple[str, bool]]


def _actions(conn: Connection, ctx: OrgContext, sobject: SObjectDef, job: Job) -> Action:
    def body(values: dict[str, Any]) -> JsonBody:
        return JsonBody(json.dumps(values, default=str), values)

    def key(values: dict[str, Any], name: str) -> str:
        found = next((v for k, v in values.items() if k.lower() == name.lower()), None)
        if found is None:
            raise SalesforceError(
                f"Id not specified in an {job.operation} call",
                error_code="MISSING_ARGUMENT",
                fields=[],
            )
        return str(found)

    def insert(values: dict[str, Any]) -> tuple[str, bool]:
        return records.create_record(conn, ctx, sobject, body(values)), True

    def update(values: dict[str, Any]) -> tuple[str, bool]:
        record_id = key(values, "Id")
        records.update_record(conn, ctx, sobject, record_id, body(values))
        return record_id, False

    def upsert(values: dict[str, Any]) -> tuple[str, bool]:
        field = job.external_id_field or "Id"
        return records.upsert_record(conn, ctx, sobject, field, key(values, field), body(values))

    def delete(values: dict[str, Any]) -> tuple[str, bool]:
        record_id = key(values, "Id")
        records.delete_record(conn, ctx, sobject, record_id)
        return record_id, False

    table: dict[str, Action] = {
        "insert": insert,
        "update": update,
        "upsert": upsert,
        "delete": delete,
    }
    return table[job.operation]


def run_ingest(conn: Connection, ctx: OrgContext, job: Job, data: bytes) -> IngestResult:
    """Run the job's rows in `conn` (the sandbox's write transaction, which the caller
    commits). Raises InvalidBatch when the data cannot be read at all: the job fails."""
    sobject = ctx.registry.get(job.sobject or "")
    if sobject is None:
        raise InvalidBatch(f"InvalidBatch : sObject type '{job.sobject}' is not supported")
    header, rows = read_upload(data, job.column_delimiter, job.line_ending)
    _check_header(sobject, header, job)
    action = _actions(conn, ctx, sobject, job)
    succeeded: list[list[str | None]] = []
    failed: list[list[str | None]] = []
    for row in rows:
        values = {
            name: _value(sobject, name, text)
            for name, text in zip(header, row, strict=True)
            if text
        }
        savepoint = conn.begin_nested()
        try:
            record_id, created = action(values)
        except SalesforceError as error:
            savepoint.rollback()
            echoed = values.get("Id")
            failed.append([str(echoed) if echoed else "", _error_text(error), *row])
            continue
        savepoint.commit()
        succeeded.append([record_id, "true" if created else "false", *row])
    delimiter, ending = job.column_delimiter, job.line_ending
    return IngestResult(
        processed=len(rows),
        failed=len(failed),
        success=write_rows(["sf__Id", "sf__Created", *header], succeeded, delimiter, ending),
        failure=write_rows(["sf__Id", "sf__Error", *header], failed, delimiter, ending),
        unprocessed=write_raw(header, [], delimiter, ending),
    )
