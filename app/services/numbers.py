"""Whole numbers a client writes in a URL, a header or a path: ASCII digits only, and few.

`str.isdigit` also accepts digits such as "²" that `int` refuses, and `int` refuses strings of
over 4,300 digits: checking both here keeps either from ever reaching a 500.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"[0-9]+")


def parse_count(text: str, max_digits: int = 9) -> int | None:
    """`text` as a non-negative int, or None unless it is 1 to `max_digits` ASCII digits."""
    if len(text) > max_digits or _DIGITS.fullmatch(text) is None:
        return None
    return int(text)
