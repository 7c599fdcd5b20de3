"""Bulk API 2.0's CSV: the delimiters and line endings a job names, reading an upload and
writing results (every value quoted, a null as an empty field)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence

from app.errors import SalesforceError

DELIMITERS = {
    "COMMA": ",",
    "TAB": "\t",
    "PIPE": "|",
    "SEMICOLON": ";",
    "CARET": "^",
    "BACKQUOTE": "`",
}
LINE_ENDINGS = {"LF": "\n", "CRLF": "\r\n"}
NULL_VALUE = "#N/A"  # a cell that sets a field to null (an empty cell leaves it alone)


class InvalidBatch(SalesforceError):
    """Data a job cannot run on: the job fails with this as its errorMessage."""

    error_code = "InvalidBatch"


def read_upload(data: bytes, delimiter: str, line_ending: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of an uploaded CSV."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidBatch("InvalidBatch : The data is not valid UTF-8") from None
    if line_ending == "LF" and "\r\n" in text:
        raise InvalidBatch(
            "ClientInputError : LineEnding is invalid on user data. Current LineEnding setting "
            "is LF"
        )
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=DELIMITERS[delimiter])
    try:
        rows = [row for row in reader if row]
    except csv.Error as error:
        raise InvalidBatch(f"InvalidBatch : Failed to parse CSV: {error}") from None
    if not rows:
        raise InvalidBatch("InvalidBatch : The CSV has no header row")
    header = [name.strip() for name in rows[0]]
    if any(not name for name in header) or len({n.lower() for n in header}) != len(header):
        raise InvalidBatch("InvalidBatch : The header row names a field twice, or none")
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise InvalidBatch(
                f"InvalidBatch : Wrong number of columns in row {number}: {len(row)} where the "
                f"header has {len(header)}"
            )
    return header, rows[1:]


def _quoted(value: str | None) -> str:
    if value is None:
        return ""
    return '"' + value.replace('"', '""') + '"'


def write_rows(
    header: Sequence[str],
    rows: Iterable[Sequence[str | None]],
    delimiter: str = "COMMA",
    line_ending: str = "LF",
) -> bytes:
    separator, newline = DELIMITERS[delimiter], LINE_ENDINGS[line_ending]
    lines = [separator.join(_quoted(name) for name in header)]
    lines.extend(separator.join(_quoted(value) for value in row) for row in rows)
    return (newline.join(lines) + newline).encode("utf-8")
