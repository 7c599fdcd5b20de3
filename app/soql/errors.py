"""SOQL errors in Salesforce's format: the query line, a caret, `ERROR at Row:r:Column:c`."""

from __future__ import annotations

from app.errors import SalesforceError
from app.soql.ast import Position

# Salesforce echoes a window of a long line around the error, about this wide each side.
WINDOW = 40


def positioned_message(query: str, pos: Position | None, reason: str) -> str:
    """`reason` with the echo of the offending line and the caret, as a real org writes it."""
    if pos is None:
        return reason
    lines = query.split("\n")
    line = lines[pos.line - 1] if 0 < pos.line <= len(lines) else ""
    start = max(0, pos.column - 1 - WINDOW)
    echo = line[start : pos.column - 1 + WINDOW]
    caret = " " * (pos.column - 1 - start) + "^"
    return f"\n{echo}\n{caret}\nERROR at Row:{pos.line}:Column:{pos.column}\n{reason}"


class SoqlError(SalesforceError):
    """A query error. `pos` None gives the bare message (an error at the very first token)."""

    def __init__(self, error_code: str, reason: str, *, query: str, pos: Position | None) -> None:
        super().__init__(positioned_message(query, pos, reason), error_code=error_code)
        self.reason = reason
        self.pos = pos


def malformed(reason: str, *, query: str, pos: Position | None) -> SoqlError:
    return SoqlError("MALFORMED_QUERY", reason, query=query, pos=pos)
