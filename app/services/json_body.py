"""Request bodies as Salesforce reads them: a JSON object, with Jackson-style parser errors.

Salesforce's errors name the line and column where the parser stood, so the parsed body keeps
its raw text to find where each field's value ends.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from app.errors import JsonParserError

_JSON_TOKEN_NAMES = {
    dict: "START_OBJECT",
    list: "START_ARRAY",
    str: "VALUE_STRING",
    bool: "VALUE_TRUE",
    int: "VALUE_NUMBER_INT",
    float: "VALUE_NUMBER_FLOAT",
}


def _line_column(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


def token_name(value: Any) -> str:
    if value is False:
        return "VALUE_FALSE"
    if value is None:
        return "VALUE_NULL"
    return _JSON_TOKEN_NAMES.get(type(value), "VALUE_STRING")


def token_text(value: Any) -> str:
    if isinstance(value, dict):
        return "{"
    if isinstance(value, list):
        return "["
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class JsonBody:
    text: str
    data: dict[str, Any]

    def value_end(self, key: str) -> tuple[int, int]:
        """Line and column just after the value of top-level `key` (Jackson's error location)."""
        match = re.search(r'"' + re.escape(key) + r'"\s*:\s*', self.text)
        if match is None:
            return 1, 1
        try:
            _, end = json.JSONDecoder().raw_decode(self.text, match.end())
        except ValueError:
            end = match.end()
        return _line_column(self.text, end)

    def cannot_deserialize(self, key: str, type_name: str) -> JsonParserError:
        value = self.data[key]
        line, column = self.value_end(key)
        return JsonParserError(
            f"Cannot deserialize instance of {type_name} from {token_name(value)} value "
            f"{token_text(value)} or request may be missing a required field at "
            f"[line:{line}, column:{column}]"
        )


def _describe_decode_error(error: json.JSONDecodeError) -> str:
    at = f"at [line:{error.lineno}, column:{error.colno}]"
    if error.pos >= len(error.doc):
        return f"Unexpected end-of-input: expected close marker for OBJECT {at}"
    char = error.doc[error.pos]
    if error.msg.startswith("Expecting property name"):
        reason = "was expecting double-quote to start field name"
    elif error.msg.startswith("Expecting ':'"):
        reason = "was expecting a colon to separate field name and value"
    elif error.msg.startswith("Expecting ',' delimiter"):
        reason = "was expecting comma to separate Object entries"
    else:
        reason = "expected a valid value (number, String, array, object, 'true', 'false' or 'null')"
    return f"Unexpected character ('{char}' (code {ord(char)})): {reason} {at}"


def _reject_constant(name: str) -> Any:
    """Python reads NaN and Infinity; JSON (and Salesforce's parser) does not."""
    raise JsonParserError(
        f"Non-standard token '{name}': enable JsonParser.Feature.ALLOW_NON_NUMERIC_NUMBERS to allow"
    )


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonParserError(f"Numeric value ({text}) out of range of double")
    return value


# Jackson's read constraints, which Salesforce's parser applies: a number of at most 1,000
# characters, and documents nested at most so deep. Jackson's default depth is 1,000; localforce
# stops at 500 so that every walk over a body (reference substitution, a subrequest's body sent
# on as JSON, validation) stays inside Python's recursion limit. No body Salesforce takes nests
# past a dozen levels.
MAX_NUMBER_LENGTH = 1000
MAX_NESTING_DEPTH = 500
# An escaped UTF-16 surrogate: the only way a JSON text can spell an unpaired one.
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_LENGTH:
        raise JsonParserError(
            f"Number value length ({len(text)}) exceeds the maximum allowed "
            f"({MAX_NUMBER_LENGTH}, from `StreamReadConstraints.getMaxNumberLength()`)"
        )
    return int(text)


def too_deep() -> JsonParserError:
    """Jackson's error on entering the first level past the limit."""
    return JsonParserError(
        f"Document nesting depth ({MAX_NESTING_DEPTH + 1}) exceeds the maximum allowed "
        f"({MAX_NESTING_DEPTH}, from `StreamReadConstraints.getMaxNestingDepth()`)"
    )


def check_depth(value: Any) -> None:
    """JSON_PARSER_ERROR for a value whose arrays and objects nest past MAX_NESTING_DEPTH."""
    if not isinstance(value, dict | list):
        return
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:  # a stack, not recursion: this walk guards the recursive ones
        item, depth = pending.pop()
        if depth > MAX_NESTING_DEPTH:
            raise too_deep()
        children = item.values() if isinstance(item, dict) else item
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def _has_unpaired_surrogate(value: Any) -> bool:
    """Whether any string (key or value) holds a lone surrogate, which no UTF-8 text can."""
    pending = [value]
    while pending:  # a stack, not recursion: the body may nest as deep as the parser allows
        item = pending.pop()
        if isinstance(item, str):
            if any("\ud800" <= char <= "\udfff" for char in item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def parse_object(raw: bytes, type_name: str) -> JsonBody:
    """The body as a JSON object, or the JSON_PARSER_ERROR Salesforce would answer."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise JsonParserError("Invalid UTF-8 middle byte at [line:1, column:1]") from None
    if not text.strip():
        raise JsonParserError("No content to map to Object due to end of input")
    try:
        data = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as error:
        raise JsonParserError(_describe_decode_error(error)) from None
    except RecursionError:  # Python's parser stops near 1,000 levels, past MAX_NESTING_DEPTH
        raise too_deep() from None
    check_depth(data)
    if _ESCAPED_SURROGATE.search(text) and _has_unpaired_surrogate(data):
        # Python decodes an escaped pair into one character: what remains is unpaired.
        raise JsonParserError(
            "Invalid UTF-16 surrogate: an escaped surrogate (\\uD800-\\uDFFF) must be one "
            "of a high and low pair"
        )
    if not isinstance(data, dict):
        raise JsonParserError(
            f"Cannot deserialize instance of {type_name} from {token_name(data)} value "
            f"{token_text(data)} or request may be missing a required field at [line:1, column:1]"
        )
    return JsonBody(text=text, data=data)
