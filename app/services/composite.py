"""The composite family: /composite, /composite/batch, /composite/tree and sObject Collections.

Subrequests of /composite and /composite/batch are answered by the application's own routes
(the `Dispatch` the API layer gives), inside the request's one transaction; tree and collection
records go through the same services as single calls (records.create_record and so on). Each
subrequest (or record) runs in its own SAVEPOINT, so a failure undoes only its own writes;
allOrNone rolls back a SAVEPOINT around the whole request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from sqlalchemy import Connection

from app.errors import FeatureNotSupported, JsonParserError, NotFound, SalesforceError
from app.metadata.model import ChildRelationship, SObjectDef
from app.services import records
from app.services.context import OrgContext
from app.services.json_body import JsonBody
from app.services.org import parse_version
from app.storage.ids import normalize_id

MAX_COMPOSITE_SUBREQUESTS = 25
MAX_COLLECTION_RECORDS = 200
# A retrieve by POST names up to 2,000 ids (by GET, the 200 of every other collection call).
MAX_RETRIEVE_BY_POST = 2000
MAX_TREE_RECORDS = 200
MAX_TREE_DEPTH = 5

PROCESSING_HALTED = "PROCESSING_HALTED"
ROLLED_BACK_MESSAGE = (
    "The transaction was rolled back since another operation in the same transaction failed."
)
# Resources that Salesforce refuses as a subrequest: a 501 here, before any route is tried.
_UNSUPPORTED_IN_SUBREQUESTS = {
    "search",
    "parameterizedSearch",
    "limits",
    "composite",
    "tooling",
    "actions",
    "recent",
}
_REFERENCE = re.compile(r"@\{([^}]*)\}")
_REFERENCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]*$")
_URL = re.compile(r"^/?(?:services/data/)?(v[^/]+)(?:/(.*))?$")


@dataclass
class Outcome:
    """One subrequest's answer, as a single call would have given it."""

    status: int
    body: Any
    headers: dict[str, str]

    @property
    def ok(self) -> bool:
        return self.status < 400


def invalid_input(message: str) -> SalesforceError:
    return SalesforceError(message, error_code="INVALID_INPUT")


def _failure(error: SalesforceError) -> Outcome:
    return Outcome(error.status_code, error.to_body(), {})


def _as_body(data: dict[str, Any]) -> JsonBody:
    return JsonBody(json.dumps(data, default=str), data)


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid_input(f"{what} must be a JSON object")
    return value


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise invalid_input(f"Missing or invalid '{key}': a JSON array is required")
    return value


# A JSON boolean may come as its text, in any case (Salesforce's JSON reader coerces it).
_FLAGS = {"true": True, "false": False}


def _flag(data: dict[str, Any], key: str, default: bool = False) -> bool:
    value = data.get(key, default)
    if isinstance(value, bool):
        return value
    flag = _FLAGS.get(value.lower()) if isinstance(value, str) else None
    if flag is None:
        raise JsonParserError(f"Cannot deserialize value of type `boolean` for '{key}'")
    return flag


# ---------------------------------------------------------------- one subrequest

# Answers one REST call, given as its method, its URL under /services/data/vXX.X/ and its JSON
# body, as the application's own routes answer it, in the caller's transaction. The API layer
# provides it: it knows the routes, this layer does not.
Dispatch = Callable[[str, str, Any], Outcome]


def _resource_url(url: str) -> str:
    """The subrequest's URL as `/services/data/vXX.X/...` (batch URLs may leave out
    `/services/data/`), or the error Salesforce answers for it: a URL outside the versioned API,
    or a resource it refuses inside composite."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed `[` of an IPv6 host: no resource of ours
        raise NotFound() from None
    match = _URL.match(parts.path)
    if match is None:
        raise NotFound()
    version = parse_version(match.group(1))
    # Empty segments are dropped (`sobjects//Account` is `sobjects/Account`, as it has been).
    segments = [segment for segment in (match.group(2) or "").split("/") if segment]
    if not segments:
        raise NotFound()
    resource = unquote(segments[0])
    if resource in _UNSUPPORTED_IN_SUBREQUESTS:
        raise FeatureNotSupported(f"/{resource} as a composite subrequest")
    path = f"/services/data/v{version}/{'/'.join(segments)}"
    return f"{path}?{parts.query}" if parts.query else path


def _run(conn: Connection, dispatch: Dispatch, method: str, url: str, body: Any) -> Outcome:
    """The outcome of one subrequest, inside its own SAVEPOINT: undone when it failed."""
    savepoint = conn.begin_nested()
    try:
        outcome = dispatch(method.upper(), _resource_url(url), body)
    except SalesforceError as error:
        savepoint.rollback()
        return _failure(error)
    except BaseException:
        savepoint.rollback()
        raise
    if outcome.ok:
        savepoint.commit()
    else:  # an error a route answered without raising is undone all the same
        savepoint.rollback()
    return outcome


# ---------------------------------------------------------------- /composite


class _Unresolved(Exception):
    def __init__(self, expression: str, reference_id: str, malformed: bool = False) -> None:
        super().__init__(expression)
        self.expression = expression
        self.reference_id = reference_id
        self.malformed = malformed


_PATH_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _lookup(results: dict[str, Outcome], expression: str) -> Any:
    reference_id, _, path = expression.partition(".")
    reference_id = reference_id.split("[", 1)[0]
    if not _REFERENCE_ID.match(reference_id):
        raise _Unresolved(expression, reference_id, malformed=True)
    outcome = results.get(reference_id)
    if outcome is None or not outcome.ok:
        raise _Unresolved(expression, reference_id)
    value: Any = outcome.body
    rest = expression[len(reference_id) :]
    for name, index in _PATH_STEP.findall(rest):
        if name:
            if not isinstance(value, dict):
                raise _Unresolved(expression, reference_id)
            found = next((key for key in value if key.lower() == name.lower()), None)
            if found is None:
                raise _Unresolved(expression, reference_id)
            value = value[found]
        else:
            if not isinstance(value, list) or int(index) >= len(value):
                raise _Unresolved(expression, reference_id)
            value = value[int(index)]
    if value is None or not path:
        raise _Unresolved(expression, reference_id)
    return value


def _substitute(value: Any, results: dict[str, Outcome]) -> Any:
    """A copy of `value` with its `@{ref.path}` references replaced by the values earlier
    subrequests answered, walked with a stack (a body may nest as deep as the parser allows),
    in document order so that the first bad reference is the one reported."""
    root = [value]
    pending: list[tuple[Any, Any]] = [(root, 0)]  # (container, key) of each value to visit
    while pending:
        holder, key = pending.pop()
        item = holder[key]
        if isinstance(item, str):
            holder[key] = _resolved(item, results)
        elif isinstance(item, list | dict):
            copy = list(item) if isinstance(item, list) else dict(item)
            holder[key] = copy
            keys = range(len(copy)) if isinstance(copy, list) else list(copy)
            pending.extend((copy, child) for child in reversed(keys))
    return root[0]


def _resolved(text: str, results: dict[str, Outcome]) -> Any:
    whole = _REFERENCE.fullmatch(text)
    if whole is not None:
        return _lookup(results, whole.group(1))
    return _REFERENCE.sub(lambda m: str(_lookup(results, m.group(1))), text)


def _halted(message: str) -> Outcome:
    return Outcome(400, [{"errorCode": PROCESSING_HALTED, "message": message}], {})


def _reference_error(error: _Unresolved) -> Outcome:
    message = (
        f"Invalid reference specified. No value for {error.expression} found in "
        f"{error.reference_id}."
    )
    if error.malformed:
        message += (
            f" Provided referenceId ('{error.reference_id}') must start with a letter or a "
            "number, and it can contain only letters, numbers and underscores ('_')."
        )
    return _halted(message)


def _composite_subrequests(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The compositeRequest list, each with a method, a url and a unique referenceId; or the
    INVALID_INPUT that refuses the whole request before anything runs."""
    subrequests = _list(data, "compositeRequest")
    if not subrequests:
        raise invalid_input("compositeRequest must contain at least one subrequest")
    if len(subrequests) > MAX_COMPOSITE_SUBREQUESTS:
        raise invalid_input(
            f"Maximum number of subrequests in a composite request is "
            f"{MAX_COMPOSITE_SUBREQUESTS}, but found {len(subrequests)}"
        )
    seen: set[str] = set()
    for item in subrequests:
        sub = _object(item, "Each subrequest")
        reference_id = sub.get("referenceId")
        if not isinstance(reference_id, str) or not _REFERENCE_ID.match(reference_id):
            raise invalid_input(
                f"Provided referenceId ('{reference_id}') must start with a letter or a number, "
                "and it can contain only letters, numbers and underscores ('_')."
            )
        if reference_id in seen:
            raise invalid_input(f"Duplicate ReferenceId provided in the request: {reference_id}")
        seen.add(reference_id)
        if not isinstance(sub.get("method"), str) or not isinstance(sub.get("url"), str):
            raise invalid_input(f"Subrequest {reference_id} needs a method and a url")
    return subrequests


def run_composite(conn: Connection, dispatch: Dispatch, data: dict[str, Any]) -> dict[str, Any]:
    """`POST /composite`: subrequests in order, each seeing the results of those before."""
    subrequests = _composite_subrequests(data)
    all_or_none = _flag(data, "allOrNone")
    _flag(data, "collateSubrequests")  # read for its type only: subrequests run in order
    whole = conn.begin_nested()
    results: dict[str, Outcome] = {}
    answers: list[tuple[str, Outcome]] = []
    failed = False
    for sub in subrequests:
        reference_id = sub["referenceId"]
        if failed and all_or_none:
            answers.append((reference_id, _halted(ROLLED_BACK_MESSAGE)))
            continue
        try:
            url = _substitute(sub["url"], results)
            body = _substitute(sub.get("body"), results)
        except _Unresolved as error:
            outcome = _reference_error(error)
        else:
            outcome = _run(conn, dispatch, sub["method"], url, body)
        results[reference_id] = outcome
        answers.append((reference_id, outcome))
        failed = failed or not outcome.ok
    if failed and all_or_none:
        whole.rollback()
        answers = [
            (ref, outcome if not outcome.ok else _halted(ROLLED_BACK_MESSAGE))
            for ref, outcome in answers
        ]
    else:
        whole.commit()
    return {
        "compositeResponse": [
            {
                "body": outcome.body,
                "httpHeaders": outcome.headers,
                "httpStatusCode": outcome.status,
                "referenceId": ref,
            }
            for ref, outcome in answers
        ]
    }


# ---------------------------------------------------------------- /composite/batch

BATCH_HALTED = [
    {"errorCode": "BATCH_PROCESSING_HALTED", "message": "Batch processing halted per request"}
]


def run_batch(conn: Connection, dispatch: Dispatch, data: dict[str, Any]) -> dict[str, Any]:
    """`POST /composite/batch`: independent subrequests; haltOnError stops after a failure."""
    subrequests = _list(data, "batchRequests")
    if len(subrequests) > MAX_COMPOSITE_SUBREQUESTS:
        raise invalid_input(
            f"Maximum number of subrequests in a batch request is {MAX_COMPOSITE_SUBREQUESTS}, "
            f"but found {len(subrequests)}"
        )
    for item in subrequests:
        sub = _object(item, "Each batch subrequest")
        if not isinstance(sub.get("method"), str) or not isinstance(sub.get("url"), str):
            raise invalid_input("Each batch subrequest needs a method and a url")
    halt = _flag(data, "haltOnError")
    results: list[dict[str, Any]] = []
    has_errors = False
    for sub in subrequests:
        if has_errors and halt:
            results.append({"statusCode": 412, "result": BATCH_HALTED})
            continue
        outcome = _run(conn, dispatch, sub["method"], sub["url"], sub.get("richInput"))
        has_errors = has_errors or not outcome.ok
        results.append({"statusCode": outcome.status, "result": outcome.body})
    return {"hasErrors": has_errors, "results": results}


# ---------------------------------------------------------------- /composite/tree


def _record_error(error: SalesforceError) -> dict[str, Any]:
    return {"statusCode": error.error_code, "message": error.message, "fields": error.fields or []}


@dataclass
class _TreeRun:
    conn: Connection
    ctx: OrgContext
    results: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    count: int = 0


def _tree_records(run: _TreeRun, sobject: SObjectDef, items: Any, depth: int) -> list[Any]:
    if not isinstance(items, list):
        raise invalid_input("records must be a JSON array")
    if depth > MAX_TREE_DEPTH:
        raise invalid_input(f"A tree can be at most {MAX_TREE_DEPTH} levels deep")
    run.count += len(items)
    if run.count > MAX_TREE_RECORDS:
        raise invalid_input(f"A tree request can hold at most {MAX_TREE_RECORDS} records")
    return [_tree_record(run, sobject, item, depth) for item in items]


def _tree_record(run: _TreeRun, sobject: SObjectDef, item: Any, depth: int) -> Any:
    """One record of a tree: its reference id, its own values and its children's plans."""
    record = _object(item, "Each record")
    attributes = _object(record.get("attributes"), "attributes")
    reference_id = attributes.get("referenceId")
    if not isinstance(reference_id, str) or not reference_id:
        raise invalid_input("Each record needs attributes.referenceId")
    type_name = attributes.get("type")
    if not isinstance(type_name, str) or type_name.lower() != sobject.name.lower():
        raise invalid_input(
            f"Record {reference_id}: attributes.type must be {sobject.name}, got {type_name}"
        )
    values: dict[str, Any] = {}
    children = []
    for key, value in record.items():
        if key == "attributes":
            continue
        relationship = _child_relationship(sobject, key)
        if relationship is not None and isinstance(value, dict):
            child = records.resolve_sobject(run.ctx.registry, relationship.child_sobject)
            nested = _tree_records(run, child, value.get("records"), depth + 1)
            children.append((child, relationship.field, nested))
        else:
            values[key] = value
    return (reference_id, values, children)


def _child_relationship(sobject: SObjectDef, name: str) -> ChildRelationship | None:
    return next(
        (
            rel
            for rel in sobject.child_relationships
            if rel.relationship_name and rel.relationship_name.lower() == name.lower()
        ),
        None,
    )


def _tree_insert(
    run: _TreeRun, sobject: SObjectDef, plans: list[Any], parent: tuple[str, str] | None
) -> None:
    for reference_id, values, children in plans:
        data = dict(values)
        if parent is not None:
            data[parent[0]] = parent[1]
        savepoint = run.conn.begin_nested()
        try:
            record_id = records.create_record(run.conn, run.ctx, sobject, _as_body(data))
        except SalesforceError as error:
            savepoint.rollback()
            run.errors.append({"referenceId": reference_id, "errors": [_record_error(error)]})
            continue
        savepoint.commit()
        run.results.append({"referenceId": reference_id, "id": record_id})
        for child, field, nested in children:
            _tree_insert(run, child, nested, (field, record_id))


def run_tree(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, data: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    """`POST /composite/tree/{T}`: a forest of new records with children; all or nothing."""
    run = _TreeRun(conn=conn, ctx=ctx, results=[], errors=[])
    plans = _tree_records(run, sobject, data.get("records"), 1)
    whole = conn.begin_nested()
    _tree_insert(run, sobject, plans, None)
    if run.errors:
        whole.rollback()
        return 400, {"hasErrors": True, "results": run.errors}
    whole.commit()
    return 201, {"hasErrors": False, "results": run.results}


# ---------------------------------------------------------------- sObject Collections

ROLLED_BACK_RECORD = {
    "statusCode": "ALL_OR_NONE_OPERATION_ROLLED_BACK",
    "message": "Record rolled back because not all records were valid and the request was using "
    "AllOrNone header",
    "fields": [],
}


def _limit_records(count: int, limit: int = MAX_COLLECTION_RECORDS) -> None:
    if count > limit:
        raise SalesforceError(
            f"record limit reached. cannot submit more than {limit} records into this call",
            error_code="EXCEEDED_ID_LIMIT",
        )


def dml_error(error: SalesforceError) -> dict[str, Any]:
    if isinstance(error, NotFound):
        # A well-formed id of no record: what DML answers, not the REST resource's 404.
        return {
            "statusCode": "INVALID_CROSS_REFERENCE_KEY",
            "message": "invalid cross reference id",
            "fields": [],
        }
    return _record_error(error)


def _sobject_of(ctx: OrgContext, record: dict[str, Any]) -> SObjectDef:
    attributes = record.get("attributes")
    type_name = attributes.get("type") if isinstance(attributes, dict) else None
    if not isinstance(type_name, str) or not type_name:
        raise SalesforceError("Must send a concrete entity type.", error_code="INVALID_TYPE")
    sobject = ctx.registry.get(type_name)
    if sobject is None:
        raise SalesforceError(
            f"sObject type '{type_name}' is not supported.", error_code="INVALID_TYPE"
        )
    return sobject


def _sobject_of_id(ctx: OrgContext, raw_id: str) -> tuple[SObjectDef, str]:
    record_id = normalize_id(raw_id)
    if record_id is None:
        raise SalesforceError(f"invalid record id: {raw_id}", error_code="MALFORMED_ID")
    for sobject in ctx.registry:
        if sobject.key_prefix == record_id[:3]:
            return sobject, record_id
    raise NotFound()


def _run_collection(
    conn: Connection,
    all_or_none: bool,
    items: list[Any],
    action: Callable[[Any], dict[str, Any]],
    echo_id: Callable[[Any], str | None],
) -> list[dict[str, Any]]:
    """Each item in its own SAVEPOINT; allOrNone undoes all when one fails."""
    whole: Any = conn.begin_nested()
    results: list[dict[str, Any]] = []
    failed = False
    for item in items:
        savepoint = conn.begin_nested()
        try:
            result = action(item)
        except SalesforceError as error:
            savepoint.rollback()
            failed = True
            results.append({"id": echo_id(item), "success": False, "errors": [dml_error(error)]})
            continue
        savepoint.commit()
        results.append(result)
    if failed and all_or_none:
        whole.rollback()
        rolled_back = []
        for item, result in zip(items, results, strict=True):
            if result["success"]:
                # An upsert still says whether it would have created its record, as a real
                # org's rolled-back rows do.
                kept = {key: value for key, value in result.items() if key == "created"}
                result = {
                    "id": echo_id(item),
                    "success": False,
                    "errors": [ROLLED_BACK_RECORD],
                    **kept,
                }
            rolled_back.append(result)
        return rolled_back
    whole.commit()
    return results


def _records_of(data: dict[str, Any]) -> list[Any]:
    items = _list(data, "records")
    _limit_records(len(items))
    return items


def collection_create(
    conn: Connection, ctx: OrgContext, data: dict[str, Any]
) -> list[dict[str, Any]]:
    def create(item: Any) -> dict[str, Any]:
        record = _object(item, "Each record")
        sobject = _sobject_of(ctx, record)
        record_id = records.create_record(conn, ctx, sobject, _as_body(record))
        return {"id": record_id, "success": True, "errors": []}

    items = _records_of(data)
    return _run_collection(conn, _flag(data, "allOrNone"), items, create, lambda _: None)


def _record_id(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    value = item.get("id", item.get("Id"))
    return value if isinstance(value, str) else None


def collection_update(
    conn: Connection, ctx: OrgContext, data: dict[str, Any]
) -> list[dict[str, Any]]:
    def update(item: Any) -> dict[str, Any]:
        record = _object(item, "Each record")
        sobject = _sobject_of(ctx, record)
        raw_id = _record_id(record)
        if raw_id is None:
            raise SalesforceError(
                "Id not specified in an update call", error_code="MISSING_ARGUMENT", fields=["Id"]
            )
        values = {key: value for key, value in record.items() if key.lower() != "id"}
        records.update_record(conn, ctx, sobject, raw_id, _as_body(values))
        return {"id": normalize_id(raw_id) or raw_id, "success": True, "errors": []}

    items = _records_of(data)
    return _run_collection(conn, _flag(data, "allOrNone"), items, update, _record_id)


def collection_delete(
    conn: Connection, ctx: OrgContext, ids: list[str], all_or_none: bool
) -> list[dict[str, Any]]:
    _limit_records(len(ids))

    def delete(raw_id: Any) -> dict[str, Any]:
        sobject, record_id = _sobject_of_id(ctx, raw_id)
        records.delete_record(conn, ctx, sobject, record_id)
        return {"id": record_id, "success": True, "errors": []}

    return _run_collection(conn, all_or_none, ids, delete, lambda raw_id: raw_id)


def collection_upsert(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, field_name: str, data: dict[str, Any]
) -> list[dict[str, Any]]:
    field = records.external_id_field(sobject, field_name)
    items = _records_of(data)

    def upsert(item: Any) -> dict[str, Any]:
        record = _object(item, "Each record")
        if _sobject_of(ctx, record).name != sobject.name:
            raise SalesforceError(
                f"Record type must be {sobject.name} in this call", error_code="INVALID_TYPE"
            )
        key = next((k for k in record if k.lower() == field.name.lower()), None)
        if field.name == "Id" and (key is None or record[key] is None):  # a new record
            values = {name: value for name, value in record.items() if name != key}
            record_id = records.create_record(conn, ctx, sobject, _as_body(values))
            return {"id": record_id, "success": True, "errors": [], "created": True}
        if key is None or record[key] is None:
            raise SalesforceError(
                f"Required fields are missing: [{field.name}]",
                error_code="REQUIRED_FIELD_MISSING",
                fields=[field.name],
            )
        record_id, created = records.upsert_record(
            conn, ctx, sobject, field.name, str(record[key]), _as_body(record)
        )
        return {"id": record_id, "success": True, "errors": [], "created": created}

    results = _run_collection(conn, _flag(data, "allOrNone"), items, upsert, lambda _: None)
    for result in results:
        result.setdefault("created", False)
    return results


def collection_retrieve(
    conn: Connection,
    ctx: OrgContext,
    sobject: SObjectDef,
    ids: list[str],
    fields: list[str],
    *,
    limit: int = MAX_COLLECTION_RECORDS,
) -> list[dict[str, Any] | None]:
    """`GET /composite/sobjects/{T}?ids=&fields=` (or POST, with `limit` its 2,000): the
    records, null for ids not found."""
    _limit_records(len(ids), limit)
    if not ids:
        raise invalid_input("The ids parameter is required")
    if not fields:
        raise invalid_input("The fields parameter is required")
    found: list[dict[str, Any] | None] = []
    for raw_id in ids:
        try:
            found.append(records.get_record(conn, ctx, sobject, raw_id, fields))
        except SalesforceError as error:
            if error.error_code == "INVALID_FIELD":
                raise
            found.append(None)
    return found
