"""Salesforce record ids: 15-character case-sensitive base62, plus the 3-character checksum.

An id is key prefix (3) + pod (2) + reserved "0" + record number (9, base62) + checksum (3).
The checksum encodes, five characters at a time, which characters are upper-case letters, so an
18-character id can be read back in any letter case.

>>> to_18("001D000000IRFma")
'001D000000IRFmaIAH'
>>> normalize_id("001d000000irfmaiah")
'001D000000IRFmaIAH'
"""

from __future__ import annotations

import string

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
CHECKSUM_ALPHABET = string.ascii_uppercase + "012345"
POD = "Lf"
NULL_ID = "000000000000000AAA"
_ALNUM = frozenset(string.ascii_letters + string.digits)


def _checksum(id15: str) -> str:
    suffix = ""
    for chunk_start in range(0, 15, 5):
        bits = 0
        for position, char in enumerate(id15[chunk_start : chunk_start + 5]):
            if "A" <= char <= "Z":
                bits |= 1 << position
        suffix += CHECKSUM_ALPHABET[bits]
    return suffix


def to_18(id15: str) -> str:
    """Append the case checksum to a 15-character id."""
    return id15 + _checksum(id15)


def encode_base62(number: int, width: int) -> str:
    digits = ""
    while number:
        number, remainder = divmod(number, 62)
        digits = BASE62[remainder] + digits
    if len(digits) > width:
        raise ValueError(f"{number} does not fit in {width} base62 digits")
    return digits.rjust(width, "0")


def make_id(key_prefix: str, number: int, pod: str = POD) -> str:
    """The 18-character id of record `number` of the object with `key_prefix`."""
    return to_18(key_prefix + pod + "0" + encode_base62(number, 9))


def normalize_id(value: object) -> str | None:
    """The canonical 18-character form of a 15- or 18-character id, or None if malformed."""
    if not isinstance(value, str) or not set(value) <= _ALNUM:
        return None
    if len(value) == 15:
        return to_18(value)
    if len(value) != 18:
        return None
    suffix = value[15:].upper()
    chars = list(value[:15])
    for chunk, check_char in enumerate(suffix):
        bits = CHECKSUM_ALPHABET.find(check_char)
        if bits < 0:
            return None
        for position in range(5):
            index = chunk * 5 + position
            upper = bool(bits >> position & 1)
            if upper and not chars[index].isalpha():
                return None
            chars[index] = chars[index].upper() if upper else chars[index].lower()
    return "".join(chars) + suffix


def record_number(record_id: str) -> int:
    """The record number an 18-character id of `make_id` carries."""
    number = 0
    for char in record_id[6:15]:
        number = number * 62 + BASE62.index(char)
    return number


def key_prefix_of(record_id: str) -> str:
    return record_id[:3]


# The org's own id: every org here is one Organization record, and sessions and identity URLs
# name it.
ORGANIZATION_ID = make_id("00D", 1)
