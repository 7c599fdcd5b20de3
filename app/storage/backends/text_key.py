"""How text compares when letter case is ignored, on every back end: by its key, the text with
each character upper-cased by Unicode's simple uppercase mapping (one character for one, as
Java's Character.toUpperCase(int) and the C library's towupper do; `ß` stays `ß`), compared
and sorted by code point.

Salesforce compares text in the querying user's locale and sorts English text by its upper
case; for a user of an English locale, `Service` matches `SERVICE` but not the Turkish
`SERVİCE`, which an upper case (unlike a lower case, where `İ` becomes `i`) keeps apart. One key
for `=`, LIKE, IN, `<`, GROUP BY, MIN/MAX and ORDER BY keeps them consistent with each other:
values equal under `=` are one group and sort together.

SQLite computes the key with `text_key` (a Python function on every connection, called only
for text that is not ASCII); PostgreSQL with `upper()` under a collation checked against
`changed_code_points` when the database is prepared (app.storage.backends.postgresql).
"""

from __future__ import annotations

import functools
import unicodedata

# No character above this has a case (the last cased script, Adlam, ends at U+1E94B).
LAST_CASED_CODE_POINT = 0x1FFFF


def upper_char(char: str) -> str:
    """The simple uppercase mapping of one character. Python's upper() is the full mapping,
    which may give several characters (`ß` -> `SS`, `ᾀ` -> `ἈΙ`); then the simple mapping is
    the one-character titlecase if there is one (`ᾀ` -> `ᾈ`), else the character itself."""
    upper = char.upper()
    if len(upper) == 1:
        return upper
    title = char.title()
    return title if len(title) == 1 else char


@functools.cache
def _upper_table() -> dict[int, int]:
    """str.translate's table of the key: the code points it changes (about 1,450)."""
    return changed_code_points()


def text_key(value: str) -> str:
    """The key text compares and sorts by: each character upper-cased (simple mapping)."""
    if value.isascii():
        return value.upper()
    return value.translate(_upper_table())


def search_word(word: str) -> str:
    """A word as a search looks it up in the full-text index: the lower case of its key,
    character by character (both indexes lower-case what they hold, FTS5 by its own folding,
    PostgreSQL by the C library's lower case; a word folded so meets either)."""
    return "".join(_lower_char(char) for char in text_key(word))


def _lower_char(char: str) -> str:
    lower = char.lower()
    return lower if len(lower) == 1 else char  # only `İ` lower-cases to two characters


def sql_text_key(value: str | None) -> str | None:
    """text_key as a SQL function: null stays null."""
    return None if value is None else text_key(value)


def changed_code_points() -> dict[int, int]:
    """Every code point the key changes, and what to: the whole of the mapping."""
    changed = {}
    for code in range(LAST_CASED_CODE_POINT + 1):
        if 0xD800 <= code <= 0xDFFF:  # surrogates: no text holds them
            continue
        upper = upper_char(chr(code))
        if upper != chr(code):
            changed[code] = ord(upper)
    return changed


UNICODE_VERSION = unicodedata.unidata_version
