"""SOSL errors in Salesforce's format, positioned in the statement like SOQL's."""

from __future__ import annotations

from app.errors import SalesforceError
from app.soql.ast import Position
from app.soql.errors import SoqlError, positioned_message
from app.sosl.ast import SoqlSource

NO_SEARCH_TERM = "No search term found. The search term must be enclosed in braces."


class SoslError(SalesforceError):
    """A search error; `pos` None gives the bare message."""

    def __init__(
        self, error_code: str, reason: str, *, statement: str = "", pos: Position | None = None
    ) -> None:
        super().__init__(positioned_message(statement, pos, reason), error_code=error_code)
        self.reason = reason
        self.pos = pos


def malformed_search(reason: str, *, statement: str = "", pos: Position | None = None) -> SoslError:
    return SoslError("MALFORMED_SEARCH", reason, statement=statement, pos=pos)


def no_search_term() -> SoslError:
    return malformed_search(NO_SEARCH_TERM)


def term_too_short(term: str) -> SoslError:
    return SoslError("INVALID_SEARCH", f"search term must be longer than one character: {term}")


def position_at(text: str, offset: int) -> Position:
    """The 1-based row and column of `offset` in `text`."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return Position(line, offset - line_start + 1)


def offset_of(text: str, pos: Position) -> int:
    """The inverse of `position_at`."""
    lines = text.split("\n")
    line = max(1, min(pos.line, len(lines)))
    return sum(len(previous) + 1 for previous in lines[: line - 1]) + pos.column - 1


def from_soql(error: SoqlError, source: SoqlSource) -> SoslError:
    """A SOQL error raised on a RETURNING clause's SOQL, as the search statement's error.

    Syntax errors become MALFORMED_SEARCH; the others keep their code (INVALID_FIELD, ...). The
    position moves from the SOQL text to where the same token is in the statement.
    """
    code = "MALFORMED_SEARCH" if error.error_code == "MALFORMED_QUERY" else error.error_code
    if error.pos is None or not source.statement:
        return SoslError(code, error.reason)
    offset = offset_of(source.text, error.pos)
    reason = error.reason
    if offset >= len(source.text) and reason == "unexpected token: '<EOF>'":
        reason = "unexpected token: ')'"  # the SOQL text ends where the clause's ")" is
    mapped = source.statement_offset(offset)
    if mapped is None:
        # An error at the added `FROM <object>` is about the token written there instead.
        mapped = source.anchor
        if reason.startswith("unexpected token: "):
            reason = f"unexpected token: '{source.anchor_token}'"
    pos = position_at(source.statement, mapped)
    return SoslError(code, reason, statement=source.statement, pos=pos)
