"""A Bulk API 1.0 batch's records, whichever content type its job takes (CSV, a JSON array of
objects, or XML `<sObjects><sObject>`), as the header and text rows an ingest runs on: a null
becomes `#N/A` (set the field to null), a boolean `true`/`false`."""

from __future__ import annotations

import json
from typing import Any
from xml.etree.ElementTree import Element

from defusedxml import ElementTree

from app.services.bulk.csv_data import NULL_VALUE, InvalidBatch, read_upload

XSI_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"


def _nested_record() -> InvalidBatch:
    return InvalidBatch(
        "InvalidBatch : Records that name a related record by its fields are not supported"
    )


def _text(value: Any) -> str:
    if value is None:
        return NULL_VALUE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        raise _nested_record()
    return str(value)


def _table(records: list[dict[str, str]]) -> tuple[list[str], list[list[str]]]:
    header: list[str] = []
    for record in records:
        header.extend(name for name in record if name not in header)
    return header, [[record.get(name, "") for name in header] for record in records]


def _json_rows(data: bytes) -> tuple[list[str], list[list[str]]]:
    try:
        parsed = json.loads(data)
        surrogate = _has_lone_surrogate(parsed)
    except (ValueError, RecursionError) as error:
        raise InvalidBatch(f"InvalidBatch : Failed to parse JSON: {type(error).__name__}") from None
    if surrogate:
        raise InvalidBatch("InvalidBatch : The JSON holds an unpaired UTF-16 surrogate")
    if not isinstance(parsed, list) or not all(isinstance(item, dict) for item in parsed):
        raise InvalidBatch("InvalidBatch : A JSON batch is an array of records")
    return _table([{k: _text(v) for k, v in item.items() if k != "attributes"} for item in parsed])


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a string in the value holds a lone surrogate (no UTF-8 text can)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False


def _local(element: Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _xml_rows(data: bytes) -> tuple[list[str], list[list[str]]]:
    try:
        root = ElementTree.fromstring(data)
    except Exception:  # defusedxml raises several unrelated types for hostile or broken XML
        raise InvalidBatch("InvalidBatch : Failed to parse XML") from None
    if _local(root) != "sObjects":
        raise InvalidBatch(f"InvalidBatch : Unexpected element {_local(root)}: not sObjects")
    records = []
    for item in root:
        if any(len(field) for field in item):  # a related record named by its fields
            raise _nested_record()
        records.append(
            {
                _local(field): NULL_VALUE if field.get(XSI_NIL) == "true" else field.text or ""
                for field in item
            }
        )
    return _table(records)


# Bulk API 1.0's bound on a batch's records (its bytes are bounded when it is added).
MAX_BATCH_RECORDS = 10_000


def batch_rows(data: bytes, content_type: str) -> tuple[list[str], list[list[str]]]:
    if content_type == "JSON":
        header, rows = _json_rows(data)
    elif content_type == "XML":
        header, rows = _xml_rows(data)
    else:  # Bulk API 1.0 takes either line ending in CSV
        header, rows = read_upload(data, "COMMA", "CRLF")
    if len(rows) > MAX_BATCH_RECORDS:
        raise InvalidBatch(
            f"InvalidBatch : Records in a single batch cannot exceed {MAX_BATCH_RECORDS}"
        )
    return header, rows
