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
from app.services.bulk.batch_data import batch_rows
from app.services.bulk.csv_data import NULL_VALUE, InvalidBatch, read_upload, write_rows
from app.services.composite import dml_error
from app.services.context import OrgContext
from app.services.json_body import JsonBody
from app.storage.bulk_jobs import Job

BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
# The column each operation reads the record to act on from.
INGEST_OPERATIONS = ("insert", "update", "upsert", "delete")
KEY_COLUMN = {"update": "Id", "delete": "Id"}
# hardDelete needs the "Bulk API Hard Delete" user permission, which a new org's users (its
# System Administrator too) lack until an administrator grants it; localforce's users are
# such users, so a job asking for it is refused at creation as theirs are (errorCode
# FEATURENOTENABLED, which the Salesforce CLI's data commands look for).
HARD_DELETE_REFUSAL = (
    "hardDelete operation requires special user profile permission, please contact your "
    "system administrator"
)


@dataclass(frozen=True)
class RowOutcome:
    """What became of one row: the record's id and whether it was created, or the error."""

    record_id: str | None
    created: bool
    error: dict[str, Any] | None  # {statusCode, message, fields}, as DML reports it


@dataclass(frozen=True)
class IngestResult:
    header: list[str]
    rows: list[list[str]]
    outcomes: list[RowOutcome]

    @property
    def processed(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> int:
        return sum(1 for outcome in self.outcomes if outcome.error is not None)

    def to_text(self) -> str:
        return json.dumps(
            {
                "header": self.header,
                "rows": self.rows,
                "outcomes": [[o.record_id, o.created, o.error] for o in self.outcomes],
            }
        )

    @classmethod
    def from_text(cls, text: str) -> IngestResult:
        data = json.loads(text)
        outcomes = [
            RowOutcome(rid, bool(created), error) for rid, created, error in data["outcomes"]
        ]
        return cls(header=data["header"], rows=data["rows"], outcomes=outcomes)

    def successful_csv(self, delimiter: str, line_ending: str) -> bytes:
        rows = [
            [o.record_id, "true" if o.created else "false", *row]
            for o, row in zip(self.outcomes, self.rows, strict=True)
            if o.error is None
        ]
        return write_rows(["sf__Id", "sf__Created", *self.header], rows, delimiter, line_ending)

    def failed_csv(self, delimiter: str, line_ending: str) -> bytes:
        rows = [
            [o.record_id or "", error_text(o.error), *row]
            for o, row in zip(self.outcomes, self.rows, strict=True)
            if o.error is not None
        ]
        return write_rows(["sf__Id", "sf__Error", *self.header], rows, delimiter, line_ending)


def error_text(error: dict[str, Any]) -> str:
    """A failed row's sf__Error: `CODE:message:fields --`."""
    return f"{error['statusCode']}:{error['message']}:{','.join(error['fields'])} --"


def _value(sobject: SObjectDef, name: str, text: str) -> Any:
    if text == NULL_VALUE:
        return None
    field = sobject.field(name)
    if field is not None and field.type is FieldType.BOOLEAN:
        return BOOLEANS.get(text.strip().lower(), text)
    return text


def _parent_column(sobject: SObjectDef, name: str) -> tuple[str, str | None, str] | None:
    """A column `Relationship.Field` (`Type:Relationship.Field` for a polymorphic lookup) that
    sets a lookup through its parent's external id: (relationship, type, field)."""
    if sobject.field(name) is not None or "." not in name:
        return None
    path, _, field = name.partition(".")
    type_name, _, relationship = path.rpartition(":")
    if sobject.field_by_relationship(relationship) is None:
        return None
    return relationship, type_name or None, field


def _row_values(sobject: SObjectDef, header: list[str], row: list[str]) -> dict[str, Any]:
    """A row's values as a REST body has them; a parent's external id as a nested record."""
    values: dict[str, Any] = {}
    for name, text in zip(header, row, strict=True):
        if not text:
            continue
        parent = _parent_column(sobject, name)
        if parent is None:
            values[name] = _value(sobject, name, text)
            continue
        relationship, type_name, field = parent
        nested: dict[str, Any] = {field: None if text == NULL_VALUE else text}
        if type_name:
            nested["attributes"] = {"type": type_name}
        values[relationship] = nested
    return values


def _check_header(sobject: SObjectDef, header: list[str], job: Job) -> None:
    for name in header:
        if sobject.field(name) is None and _parent_column(sobject, name) is None:
            raise InvalidBatch(f"InvalidBatch : Field name not found : {name}")
    needed = KEY_COLUMN.get(job.operation) or job.external_id_field
    if job.operation == "upsert" and needed == "Id":
        return  # keyed on Id, rows without one are new records: the column may be absent
    if needed and needed.lower() not in {name.lower() for name in header}:
        raise InvalidBatch(f"InvalidBatch : Field name not found : {needed}")


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
        if field == "Id" and not any(k.lower() == "id" for k in values):
            return insert(values)  # keyed on Id, a row without one is a new record
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


def rows_of(ctx: OrgContext, job: Job, data: bytes) -> tuple[list[str], list[list[str]]]:
    """The header and rows of a job's data, checked against its object and operation before a
    row is written. Raises InvalidBatch when the data cannot be run at all: the job fails."""
    sobject = ctx.registry.get(job.sobject or "")
    if sobject is None:
        raise InvalidBatch(f"InvalidBatch : sObject type '{job.sobject}' is not supported")
    if job.kind == "batch":  # Bulk API 1.0: CSV, JSON or XML
        header, rows = batch_rows(data, job.content_type)
    elif not data.strip():  # Bulk API 2.0 completes an empty upload, with no rows
        return [], []
    else:
        header, rows = read_upload(data, job.column_delimiter, job.line_ending)
    _check_header(sobject, header, job)
    return header, rows


def run_rows(
    conn: Connection, ctx: OrgContext, job: Job, header: list[str], rows: list[list[str]]
) -> IngestResult:
    """Each row through the record service, in its own savepoint (a bad row fails alone), in
    `conn`: the sandbox's write transaction, which the caller commits."""
    sobject = ctx.registry.get(job.sobject or "")
    assert sobject is not None  # rows_of checked it
    action = _actions(conn, ctx, sobject, job)
    outcomes: list[RowOutcome] = []
    for row in rows:
        values = _row_values(sobject, header, row)
        savepoint = conn.begin_nested()
        try:
            record_id, created = action(values)
        except SalesforceError as error:
            savepoint.rollback()
            echoed = next((v for k, v in values.items() if k.lower() == "id"), None)
            outcomes.append(RowOutcome(str(echoed) if echoed else None, False, dml_error(error)))
            continue
        savepoint.commit()
        outcomes.append(RowOutcome(record_id, created, None))
    return IngestResult(header=header, rows=rows, outcomes=outcomes)
