"""sObject record CRUD: create, retrieve, update and (soft) delete, as the REST API does them."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, and_, select

from app.errors import EntityIsDeleted, FieldError, NotFound, SalesforceError
from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.metadata.values import format_datetime, parse_datetime, to_json
from app.services.context import OrgContext
from app.services.json_body import JsonBody
from app.services.platform_rules import apply_platform_rules
from app.services.validation import (
    ParentReference,
    check_references,
    missing_required,
    not_writable,
    required_error,
    validate_body,
)
from app.storage.derived import apply_auto_numbers, apply_derived
from app.storage.ids import make_id, normalize_id
from app.storage.journal import log_insert, log_update
from app.storage.records import (
    child_ids,
    fetch_row,
    insert_rows,
    next_record_number,
    update_row,
)
from app.storage.tables import is_key_indexed
from app.storage.text import keys_equal


def resolve_sobject(registry: SchemaRegistry, name: str) -> SObjectDef:
    """The object `name` names (case-insensitively), or the NOT_FOUND a URL naming an object
    the org does not have answers (routes take theirs through deps.SObjectDep)."""
    sobject = registry.get(name)
    if sobject is None:
        raise NotFound()
    return sobject


# The DML an object's describe forbids (Organization is never inserted or deleted), by operation.
_REFUSED_OPERATIONS = {"createable": "inserted", "updateable": "updated", "deletable": "deleted"}


def require_operation(sobject: SObjectDef, flag: str) -> None:
    """Salesforce's refusal of an insert, update or delete that the object does not allow."""
    if not getattr(sobject, flag):
        raise SalesforceError(
            f"entity type cannot be {_REFUSED_OPERATIONS[flag]}: {sobject.label}",
            error_code="INVALID_TYPE_FOR_OPERATION",
        )


def _live_row(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, raw_id: str
) -> dict[str, Any]:
    """The stored row behind a record id in a URL, with Salesforce's errors when there is none."""
    record_id = normalize_id(raw_id)
    if record_id is None:
        # Salesforce reads a segment that is not an id as an external-id field name.
        raise NotFound(f"Provided external ID field does not exist or is not accessible: {raw_id}")
    row = fetch_row(conn, ctx.tables[sobject.name], record_id)
    if row is None:
        raise NotFound()
    if row["IsDeleted"]:
        raise EntityIsDeleted()
    return row


def create_record(conn: Connection, ctx: OrgContext, sobject: SObjectDef, body: JsonBody) -> str:
    """Insert a record from a REST body; returns its 18-character id."""
    require_operation(sobject, "createable")
    if "Id" in body.data or "id" in body.data:
        raise FieldError(
            "INVALID_FIELD_FOR_INSERT_UPDATE",
            "Record ID: cannot specify Id in an insert call",
            ["Id"],
        )
    values = _with_parent_ids(conn, ctx, validate_body(ctx, sobject, body, creating=True))
    row: dict[str, Any] = {field.name: field.default for field in sobject.fields}
    row.update(values)
    if sobject.field("OwnerId") is not None and row.get("OwnerId") is None:
        row["OwnerId"] = ctx.user_id
    missing = missing_required(sobject, row)
    if missing:
        raise required_error(missing)
    check_references(conn, ctx, sobject, values)
    number = next_record_number(conn, sobject.name)
    row.update(
        Id=make_id(sobject.key_prefix, number),
        IsDeleted=False,
        CreatedDate=ctx.now,
        CreatedById=ctx.user_id,
        LastModifiedDate=ctx.now,
        LastModifiedById=ctx.user_id,
        SystemModstamp=ctx.now,
    )
    apply_auto_numbers(sobject, row, number)
    apply_platform_rules(conn, ctx, sobject.name, row, before=None)
    apply_derived(sobject, row)
    insert_rows(conn, ctx.tables[sobject.name], [row])
    log_insert(conn, sobject.name, row["Id"])
    return str(row["Id"])


def update_record(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, raw_id: str, body: JsonBody
) -> None:
    require_operation(sobject, "updateable")
    row = _live_row(conn, ctx, sobject, raw_id)
    original = dict(row)
    body_id = body.data.get("Id", body.data.get("id"))
    if body_id is not None:
        if normalize_id(body_id) != row["Id"]:
            raise not_writable(["Id"])
        body = JsonBody(body.text, {k: v for k, v in body.data.items() if k.lower() != "id"})
    values = _with_parent_ids(conn, ctx, validate_body(ctx, sobject, body, creating=False))
    row.update(values)
    missing = [name for name in missing_required(sobject, row) if name in values]
    if missing:
        raise required_error(missing)
    check_references(conn, ctx, sobject, values)
    row.update(LastModifiedDate=ctx.now, LastModifiedById=ctx.user_id, SystemModstamp=ctx.now)
    apply_platform_rules(conn, ctx, sobject.name, row, before=original)
    apply_derived(sobject, row)
    log_update(conn, sobject.name, original)
    update_row(conn, ctx.tables[sobject.name], row["Id"], row)


def delete_record(conn: Connection, ctx: OrgContext, sobject: SObjectDef, raw_id: str) -> None:
    """Move a record (and the children that cascade with it) to the recycle bin."""
    require_operation(sobject, "deletable")
    row = _live_row(conn, ctx, sobject, raw_id)
    _soft_delete(conn, ctx, sobject, [row["Id"]])


def _soft_delete(conn: Connection, ctx: OrgContext, sobject: SObjectDef, ids: list[str]) -> None:
    table = ctx.tables[sobject.name]
    audit = {
        "IsDeleted": True,
        "LastModifiedDate": ctx.now,
        "LastModifiedById": ctx.user_id,
        "SystemModstamp": ctx.now,
    }
    for record_id in ids:
        before = fetch_row(conn, table, record_id)
        if before is not None:
            log_update(conn, sobject.name, before)
        update_row(conn, table, record_id, audit)
    for child in sobject.child_relationships:
        if not child.cascade_delete:
            continue
        child_sobject = ctx.registry.get(child.child_sobject)
        if child_sobject is None:
            continue
        children = child_ids(conn, ctx.tables[child_sobject.name], child.field, ids)
        if children:
            _soft_delete(conn, ctx, child_sobject, children)


def requested_fields(sobject: SObjectDef, field_names: list[str] | None) -> list[FieldDef]:
    """What a retrieve's `fields=` asks for, then Id; every field when it is absent."""
    if field_names is None:
        return list(sobject.fields)
    fields = []
    for name in field_names:
        field = sobject.field(name)
        if field is None:
            raise SalesforceError(
                f"No such column '{name}' on entity '{sobject.name}'. If you are attempting "
                "to use a custom field, be sure to append the '__c' after the custom field "
                "name. Please reference your WSDL or the describe call for the appropriate "
                "names.",
                error_code="INVALID_FIELD",
            )
        if field not in fields:
            fields.append(field)
    id_field = sobject.field("Id")
    if id_field is not None and id_field not in fields:
        fields.append(id_field)
    return fields


def get_record(
    conn: Connection,
    ctx: OrgContext,
    sobject: SObjectDef,
    raw_id: str,
    field_names: list[str] | None,
) -> dict[str, Any]:
    """The record as JSON: attributes, then all fields or the requested ones (then Id)."""
    fields = requested_fields(sobject, field_names)
    row = _live_row(conn, ctx, sobject, raw_id)
    record: dict[str, Any] = {
        "attributes": {"type": sobject.name, "url": ctx.record_url(sobject, row["Id"])}
    }
    for field in fields:
        record[field.name] = field_json(ctx, sobject, row, field)
    return record


def field_json(ctx: OrgContext, sobject: SObjectDef, row: dict[str, Any], field: FieldDef) -> Any:
    """A stored field's value in a record: a base64 field's is the URL its content is read at."""
    value = row[field.name]
    if field.type is FieldType.BASE64 and value is not None:
        return f"{ctx.record_url(sobject, row['Id'])}/{field.name}"
    return to_json(field, value)


# A blob's bytes are answered as they are: their type is not JSON or XML ("Get Blob Data")
# [belief: the header's exact value is not recorded].
BLOB_MEDIA_TYPE = "application/octet-stream"


def is_blob_field(sobject: SObjectDef, name: str) -> bool:
    field = sobject.field(name)
    return field is not None and field.type is FieldType.BASE64


def get_blob(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, raw_id: str, field_name: str
) -> bytes:
    """`GET .../sobjects/{T}/{id}/{Field}`: a base64 field's content, as bytes. A record with
    no content there, or a field that holds none, is NOT_FOUND."""
    field = sobject.field(field_name)
    row = _live_row(conn, ctx, sobject, raw_id)
    if field is None or field.type is not FieldType.BASE64 or row[field.name] is None:
        raise NotFound()
    return base64.b64decode(row[field.name])


class MultipleMatches(SalesforceError):
    """An external id that names several records: 300 with the records' URLs as the body."""

    error_code = "MULTIPLE_CHOICES"
    status_code = 300

    def __init__(self, urls: list[str]) -> None:
        super().__init__("More than one record found for external id field")
        self.urls = urls

    def to_body(self) -> list[Any]:
        return list(self.urls)


def external_id_field(sobject: SObjectDef, name: str) -> FieldDef:
    """A field the object's records are found by (idLookup: Id, external ids and the standard
    fields real orgs mark so, Contact.Email or Case.CaseNumber), or 404."""
    field = sobject.field(name)
    if field is None or not field.id_lookup:
        raise NotFound(f"Provided external ID field does not exist or is not accessible: {name}")
    return field


def find_by_external_id(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, field: FieldDef, value: str
) -> list[str]:
    """Ids of the live records whose external id is `value` (text compares ignoring case)."""
    table = ctx.tables[sobject.name]
    column = table.c[field.name]
    if field.name == "Id":
        record_id = normalize_id(value)
        if record_id is None:
            return []
        condition = column == record_id
    elif field.is_text:
        condition = keys_equal(column, value, indexed=is_key_indexed(field))
    else:
        condition = column == value
    rows = conn.execute(
        select(table.c.Id).where(condition, table.c.IsDeleted.is_(False)).order_by(table.c.Id)
    )
    return [str(row[0]) for row in rows]


def _with_parent_ids(conn: Connection, ctx: OrgContext, values: dict[str, Any]) -> dict[str, Any]:
    """The values with each lookup set through its parent's external id holding that parent's id."""
    return {
        name: _parent_id(conn, ctx, value) if isinstance(value, ParentReference) else value
        for name, value in values.items()
    }


def _parent_id(conn: Connection, ctx: OrgContext, reference: ParentReference) -> str:
    """The one live parent a reference names, or Salesforce's error for none or several."""
    field, value = reference.field, reference.value
    text = json.dumps(value) if value is None or isinstance(value, bool) else str(value)
    ids = find_by_external_id(conn, ctx, reference.parent, field, text) if value is not None else []
    if not ids:
        raise SalesforceError(
            f"Foreign key external ID: {text} not found for field {field.name} in entity "
            f"{reference.parent.name}",
            error_code="INVALID_FIELD",
            fields=[],
        )
    if len(ids) > 1:
        raise SalesforceError(
            f"{field.label}: more than one record found for external id field: [{', '.join(ids)}]",
            error_code="DUPLICATE_EXTERNAL_ID",
            fields=[],
        )
    return ids[0]


def _single_match(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, field_name: str, value: str
) -> str:
    field = external_id_field(sobject, field_name)
    ids = find_by_external_id(conn, ctx, sobject, field, value)
    if not ids:
        raise NotFound()
    if len(ids) > 1:
        raise MultipleMatches([ctx.record_url(sobject, record_id) for record_id in ids])
    return ids[0]


def get_by_external_id(
    conn: Connection,
    ctx: OrgContext,
    sobject: SObjectDef,
    field_name: str,
    value: str,
    field_names: list[str] | None,
) -> dict[str, Any]:
    record_id = _single_match(conn, ctx, sobject, field_name, value)
    return get_record(conn, ctx, sobject, record_id, field_names)


def delete_by_external_id(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, field_name: str, value: str
) -> None:
    delete_record(conn, ctx, sobject, _single_match(conn, ctx, sobject, field_name, value))


# From this version an upsert that updates answers 200 with its result; before it, 204.
UPSERT_RESULT_VERSION = 46.0


def field_list(text: str | None) -> list[str] | None:
    """The names a `fields=` parameter lists (comma-separated), or None when it is absent."""
    if text is None:
        return None
    return [name.strip() for name in text.split(",") if name.strip()]


def update_only(text: str | None) -> bool:
    """An upsert's `updateOnly` parameter: true only when it says so."""
    return (text or "").lower() == "true"


def upsert_answer(
    ctx: OrgContext, record_id: str, created: bool
) -> tuple[int, dict[str, Any] | None]:
    """What an upsert answers: 201 and its result when it created the record, 200 and its
    result when it updated one (204 and no body before API 46.0)."""
    result = {"id": record_id, "success": True, "errors": [], "created": created}
    if created:
        return 201, result
    if float(ctx.api_version) < UPSERT_RESULT_VERSION:
        return 204, None
    return 200, result


def upsert_record(
    conn: Connection,
    ctx: OrgContext,
    sobject: SObjectDef,
    field_name: str,
    value: str,
    body: JsonBody,
    *,
    update_only: bool = False,
) -> tuple[str, bool]:
    """Update the one record whose external id is `value`, or create it; (id, created)."""
    field = external_id_field(sobject, field_name)
    data = dict(body.data)
    for key in [k for k in data if k.lower() == field.name.lower()]:
        given = data.pop(key)
        if given is not None and str(given).lower() != value.lower():
            raise FieldError(
                "INVALID_FIELD",
                f"The value of {field.name} in the body does not match the value in the URL",
                [field.name],
            )
    ids = find_by_external_id(conn, ctx, sobject, field, value)
    if len(ids) > 1:
        raise MultipleMatches([ctx.record_url(sobject, record_id) for record_id in ids])
    if ids:
        update_record(conn, ctx, sobject, ids[0], JsonBody(body.text, data))
        return ids[0], False
    if update_only or field.name == "Id":
        raise NotFound()
    data[field.name] = value
    return create_record(conn, ctx, sobject, JsonBody(body.text, data)), True


REPLICATION_WINDOW = timedelta(days=30)


def _replication_window(
    ctx: OrgContext, start_text: str | None, end_text: str | None
) -> tuple[datetime, datetime, datetime]:
    """(start, end, earliest available) for /updated and /deleted, rounded down to the minute."""
    bounds = []
    for name, text in (("start", start_text), ("end", end_text)):
        if not text:
            raise SalesforceError(f"Missing required parameter: {name}", error_code="INVALID_INPUT")
        parsed = parse_datetime(text)
        if parsed is None:
            raise SalesforceError(
                f"Unable to parse {name} date: {text}", error_code="INVALID_REPLICATION_DATE"
            )
        bounds.append(parsed.replace(second=0, microsecond=0))
    start, end = bounds
    earliest = ctx.now.replace(second=0, microsecond=0) - REPLICATION_WINDOW
    if start >= end:
        raise SalesforceError(
            "startDate must chronologically precede endDate", error_code="INVALID_REPLICATION_DATE"
        )
    if start < earliest:
        raise SalesforceError(
            "startDate cannot be more than 30 days ago", error_code="INVALID_REPLICATION_DATE"
        )
    return start, end, earliest


def _window_condition(ctx: OrgContext, table: Any, since: datetime, until: datetime) -> Any:
    """Changes from `since` up to `until`; an end still in the future covers up to now, this
    minute's changes included (latestDateCovered still says the last whole minute)."""
    column = table.c.SystemModstamp
    if until > ctx.now:
        return and_(column >= since, column <= ctx.now)
    return and_(column >= since, column < until)


def _covered(ctx: OrgContext, until: datetime) -> str:
    return format_datetime(min(until, ctx.now.replace(second=0, microsecond=0)))


def updated_ids(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, start: str | None, end: str | None
) -> dict[str, Any]:
    """`/sobjects/T/updated`: live records created or changed in [start, end)."""
    since, until, _ = _replication_window(ctx, start, end)
    table = ctx.tables[sobject.name]
    rows = conn.execute(
        select(table.c.Id)
        .where(table.c.IsDeleted.is_(False), _window_condition(ctx, table, since, until))
        .order_by(table.c.Id)
    )
    return {"ids": [str(row[0]) for row in rows], "latestDateCovered": _covered(ctx, until)}


def deleted_records(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, start: str | None, end: str | None
) -> dict[str, Any]:
    """`/sobjects/T/deleted`: records moved to the recycle bin in [start, end)."""
    since, until, earliest = _replication_window(ctx, start, end)
    table = ctx.tables[sobject.name]
    rows = conn.execute(
        select(table.c.Id, table.c.SystemModstamp)
        .where(table.c.IsDeleted.is_(True), _window_condition(ctx, table, since, until))
        .order_by(table.c.SystemModstamp, table.c.Id)
    )
    return {
        "deletedRecords": [
            {"id": str(row[0]), "deletedDate": format_datetime(row[1])} for row in rows
        ],
        "earliestDateAvailable": format_datetime(earliest),
        "latestDateCovered": _covered(ctx, until),
    }
