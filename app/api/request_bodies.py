"""JSON schemas of the bodies that handlers read themselves (composite, collections, trees,
parameterized search, Bulk API 2.0 jobs), for the OpenAPI document. A record's own fields are
the org's, so a record is only an object here; the server's answer to a wrong one is that
record's error."""

from __future__ import annotations

from typing import Any

from app.services.bulk.csv_data import DELIMITERS, LINE_ENDINGS
from app.services.bulk.ingest import INGEST_OPERATIONS
from app.services.bulk.runner import QUERY_OPERATIONS


def _array_of(items: dict[str, Any], max_items: int | None = None) -> dict[str, Any]:
    return {"type": "array", "items": items} | ({"maxItems": max_items} if max_items else {})


def _object(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


STRING = {"type": "string"}
NAME = {"type": "string", "minLength": 1}
# A JSON boolean, or its text in any case (Salesforce's JSON reader coerces those).
FLAG = {
    "anyOf": [
        {"type": "boolean"},
        {"type": "string", "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"},
    ]
}
# GET, POST, PATCH, PUT or DELETE; any other is that subrequest's own 405.
METHOD = {"type": "string"}
# A record names its object in attributes.type; a missing or wrong one is that record's own
# INVALID_TYPE, in a 200 with the others' results.
RECORD: dict[str, Any] = {}  # not an object: that record's INVALID_INPUT
# The bodies of the composite and search routes (a record's own fields are the org's).
COMPOSITE = _object(
    ["compositeRequest"],
    compositeRequest=_array_of(
        _object(
            ["method", "url", "referenceId"],
            method=METHOD,
            url=STRING,
            referenceId={"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_]*$"},
            body={},
            httpHeaders={},
        ),
        max_items=25,
    )
    | {"minItems": 1},
    allOrNone=FLAG,
    collateSubrequests=FLAG,
)
BATCH = _object(
    ["batchRequests"],
    batchRequests=_array_of(
        _object(["method", "url"], method=METHOD, url=STRING, richInput={}), max_items=25
    ),
    haltOnError=FLAG,
)
COLLECTION = _object(["records"], records=_array_of(RECORD, max_items=200), allOrNone=FLAG)
COLLECTION_RETRIEVE = _object(
    ["ids", "fields"],
    ids=_array_of(STRING) | {"minItems": 1},
    fields=_array_of({}) | {"minItems": 1},
)
TREE = _object(
    ["records"],
    records=_array_of(
        _object(
            ["attributes"], attributes=_object(["type", "referenceId"], type=NAME, referenceId=NAME)
        )
    ),
)
PARAMETERIZED_SEARCH = _object(
    ["q"],
    q={"type": "string", "minLength": 2},  # one character is INVALID_SEARCH
    fields=_array_of(STRING),
    sobjects=_array_of(_object(["name"], name=STRING)),
    overallLimit={"type": "integer"},
    defaultLimit={"type": "integer"},
)

# Bulk API 2.0 jobs (hardDelete is not among the operations: see HARD_DELETE_REFUSAL).
_DIALECT: dict[str, dict[str, Any]] = {
    "contentType": {"enum": ["CSV"]},
    "columnDelimiter": {"enum": sorted(DELIMITERS)},
    "lineEnding": {"enum": sorted(LINE_ENDINGS)},
}
INGEST_JOB = _object(
    ["object", "operation"],
    object=NAME,
    operation={"enum": list(INGEST_OPERATIONS)},
    externalIdFieldName=NAME,
    **_DIALECT,
)
QUERY_JOB = _object(
    ["operation", "query"], operation={"enum": list(QUERY_OPERATIONS)}, query=NAME, **_DIALECT
)
