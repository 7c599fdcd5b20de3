"""SQL functions written in Python, for a back end that lacks them (SQLite registers them on
every connection): time zones for convertTimezone(), trigonometry for DISTANCE(), and matching
SOSL words with wildcards, which needs a matcher that never backtracks exponentially.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from app.storage.backends.text_key import text_key


def to_local_time(value: str | None, zone: str) -> str | None:
    """A UTC datetime (ISO text) moved to `zone`: what convertTimezone() calls."""
    if value is None:
        return None
    moment = datetime.fromisoformat(value).replace(tzinfo=UTC).astimezone(ZoneInfo(zone))
    return moment.replace(tzinfo=None).isoformat(sep=" ")


def great_circle_distance(
    lat1: float | None, lon1: float | None, lat2: float, lon2: float, radius: float
) -> float | None:
    """Haversine distance on a sphere of `radius`: SOQL's DISTANCE(). Null when the record has
    no location."""
    if lat1 is None or lon1 is None:
        return None
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    half_dphi = math.radians(lat2 - lat1) / 2
    half_dlambda = math.radians(lon2 - lon1) / 2
    chord = math.sin(half_dphi) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(half_dlambda) ** 2
    return 2 * radius * math.asin(min(1.0, math.sqrt(chord)))


# -- wildcard words ----------------------------------------------------------------------------

_WORD_RE = re.compile(r"[^\W_]+")


def _glob(word: str, pattern: str) -> bool:
    """`word` matches `pattern` (`?` one character, `*` any run), in O(len * len) at worst:
    backtracking only to the last star, never exponentially like a regular expression can."""
    i = j = 0
    star, mark = -1, 0
    while i < len(word):
        if j < len(pattern) and (pattern[j] == "?" or pattern[j] == word[i]):
            i, j = i + 1, j + 1
        elif j < len(pattern) and pattern[j] == "*":
            star, mark, j = j, i, j + 1
        elif star >= 0:
            mark += 1
            i, j = mark, star + 1
        else:
            return False
    return all(char == "*" for char in pattern[j:])


@dataclass(frozen=True)
class _Pattern:
    words: tuple[str, ...]
    prefix: str  # what the first word starts with, before any wildcard
    literals: tuple[str, ...]  # runs without wildcards: a matching text holds each of them


@functools.lru_cache(maxsize=256)
def _pattern(pattern: str) -> _Pattern:
    words = tuple(pattern.split(" "))
    literal = re.match(r"[^*?]*", words[0])
    runs = {run for word in words for run in re.split(r"[*?]+", word) if run}
    # The longest first: the likeliest to be missing, so most texts are turned away at once.
    return _Pattern(words, literal.group(0) if literal else "", tuple(sorted(runs, key=len)[::-1]))


def wildcard_match(text: str | None, pattern: str) -> bool | None:
    """Whether `text` has the words of `pattern` (space-separated, with `*` and `?`) next to
    each other, words being runs of letters and digits, as the index splits them. Letter case
    is ignored: words compare by their keys (text_key)."""
    if text is None:
        return None
    compiled = _pattern(text_key(pattern))
    wanted, prefix = compiled.words, compiled.prefix
    keyed = text_key(text)
    # A text that lacks a literal run of the pattern cannot match: most texts end here, before
    # being split into words (a search runs this on every searched field of every record).
    if not all(run in keyed for run in compiled.literals):
        return False
    words = _WORD_RE.findall(keyed)
    for start in range(len(words) - len(wanted) + 1):
        if prefix and not words[start].startswith(prefix):
            continue
        if all(_glob(words[start + k], part) for k, part in enumerate(wanted)):
            return True
    return False
