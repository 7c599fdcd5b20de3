"""Literal text to values: string escapes, date and datetime literals, and the date-literal names.

Pure functions over the text of one token; the tokenizer turns a `LiteralError` into a positioned
MALFORMED_QUERY.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

from app.metadata.values import MAX_OFFSET_MINUTES

# fmt: off
# Date literals that name one fixed range (`CreatedDate = TODAY`).
DATE_LITERALS = frozenset({
    "YESTERDAY", "TODAY", "TOMORROW", "LAST_WEEK", "THIS_WEEK", "NEXT_WEEK",
    "LAST_MONTH", "THIS_MONTH", "NEXT_MONTH", "LAST_90_DAYS", "NEXT_90_DAYS",
    "THIS_QUARTER", "LAST_QUARTER", "NEXT_QUARTER", "THIS_YEAR", "LAST_YEAR", "NEXT_YEAR",
    "THIS_FISCAL_QUARTER", "LAST_FISCAL_QUARTER", "NEXT_FISCAL_QUARTER",
    "THIS_FISCAL_YEAR", "LAST_FISCAL_YEAR", "NEXT_FISCAL_YEAR",
})
# Date literals that take a count after a colon (`LAST_N_DAYS:5`, `NEXT_N_MONTHS:-2`).
N_DATE_LITERALS = frozenset({
    "LAST_N_DAYS", "NEXT_N_DAYS", "N_DAYS_AGO", "LAST_N_WEEKS", "NEXT_N_WEEKS", "N_WEEKS_AGO",
    "LAST_N_MONTHS", "NEXT_N_MONTHS", "N_MONTHS_AGO",
    "LAST_N_QUARTERS", "NEXT_N_QUARTERS", "N_QUARTERS_AGO",
    "LAST_N_YEARS", "NEXT_N_YEARS", "N_YEARS_AGO",
    "LAST_N_FISCAL_QUARTERS", "NEXT_N_FISCAL_QUARTERS", "N_FISCAL_QUARTERS_AGO",
    "LAST_N_FISCAL_YEARS", "NEXT_N_FISCAL_YEARS", "N_FISCAL_YEARS_AGO",
})
# fmt: on

# Escape letters are case-insensitive (`\N` is a newline too).
_SIMPLE_ESCAPES = {
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "b": "\b",
    "f": "\f",
    '"': '"',
    "'": "'",
    "\\": "\\",
    # LIKE-pattern escapes stay as written; the compiler reads them as a literal % or _.
    "%": "\\%",
    "_": "\\_",
}
# In a LIKE pattern a backslash stays escaped too, so that `\\%` (a backslash, then any text)
# is told from `\%` (a percent sign).
_LIKE_ESCAPES = {**_SIMPLE_ESCAPES, "\\": "\\\\"}
_ESCAPE_RE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)

# A full datetime literal; the zone is checked apart so a missing one can be reported.
DATETIME_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|([+-])(\d{2}):?(\d{2}))?"
)
DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


class LiteralError(ValueError):
    """A literal whose text cannot be a value; `reason` is Salesforce's message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def unescape_string(body: str) -> str:
    """The value of a string literal's body (between the quotes).

    >>> unescape_string(r"O\\'Brien\\n50\\%")
    "O'Brien\\n50\\\\%"
    """
    return _unescape(body, _SIMPLE_ESCAPES)


def like_pattern_text(body: str) -> str:
    """A string literal's body as a LIKE pattern: escapes decoded, except that `\\\\`, `\\%` and
    `\\_` stay escaped (a literal backslash, percent sign and underscore); `%` and `_` are
    wildcards.

    >>> like_pattern_text(r"%\\\\%")  # a backslash anywhere
    '%\\\\\\\\%'
    """
    return _unescape(body, _LIKE_ESCAPES)


def _unescape(body: str, escapes: dict[str, str]) -> str:
    if "\\" not in body:
        return _checked_text(body, body)

    def resolve(match: re.Match[str]) -> str:
        sequence = match.group(1)
        if len(sequence) == 5:
            char = chr(int(sequence[1:], 16))
            return escapes.get(char, char) if char == "\\" else char
        resolved = escapes.get(sequence.lower())
        if resolved is None:
            raise LiteralError(
                f"Invalid string literal '{body}'. "
                f"Illegal character sequence '\\{sequence}' in string literal."
            )
        return resolved

    return _checked_text(_ESCAPE_RE.sub(resolve, body), body)


def _checked_text(value: str, body: str) -> str:
    """`value` with `\\uD83D\\uDE00`-style surrogate pairs joined into one character.

    A lone surrogate or a NUL cannot be stored or sent to the database (PostgreSQL rejects NUL
    in text, and no driver encodes a lone surrogate), so either makes the literal invalid.
    """
    if value.isascii() and "\x00" not in value:
        return value
    try:
        joined = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        joined.encode("utf-8")
        valid = "\x00" not in joined
    except UnicodeError:
        valid = False
    if not valid:
        raise LiteralError(f"Invalid string literal '{body}'. Illegal character in string literal.")
    return joined


def parse_date(text: str) -> date:
    """`2024-01-31` as a date; an impossible day is an error."""
    match = DATE_RE.fullmatch(text)
    try:
        if match is None:
            raise ValueError(text)
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        raise LiteralError(f"Invalid date: {text}") from None


def parse_datetime(text: str) -> datetime:
    """`2024-01-31T10:00:00.5+01:00` as an aware datetime (the zone must be written)."""
    match = DATETIME_RE.fullmatch(text)
    try:
        if match is None or match[8] is None:
            raise ValueError(text)
        zone: timezone = UTC
        if match[8] != "Z":
            hours, minutes = int(match[10]), int(match[11])
            if minutes >= 60 or hours * 60 + minutes > MAX_OFFSET_MINUTES:
                raise ValueError(text)
            offset = timedelta(hours=hours, minutes=minutes)
            zone = timezone(-offset if match[9] == "-" else offset)
        micros = int((match[7] or "0")[:6].ljust(6, "0"))
        moment = datetime(
            int(match[1]),
            int(match[2]),
            int(match[3]),
            int(match[4]),
            int(match[5]),
            int(match[6]),
            micros,
            tzinfo=zone,
        )
        moment.astimezone(UTC)  # 9999-12-31T23:59:59-01:00 is past the last representable day
        return moment
    except (ValueError, OverflowError):
        raise LiteralError(f"Invalid datetime: {text}") from None
