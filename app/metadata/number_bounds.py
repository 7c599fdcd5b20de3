"""The ranges a client's number must fit before it reaches a database driver.

SQLite's driver refuses a Python int past 64 bits (OverflowError) and PostgreSQL's refuses one
past BIGINT or NUMERIC, or casts a parameter to an int column's INTEGER and overflows there. A
query's number literal is compared by value, as Salesforce compares it, so a number no column
can hold is not an error: it is given to the database in a form the database can compare (a
float, infinite past float's range), or left out of an IN list it can never match.
"""

from __future__ import annotations

from decimal import Decimal

# An int field's column (INTEGER) and a count's or a LIMIT's (BIGINT).
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def fits_int32(value: object) -> bool:
    """Whether `value` is a whole number an INTEGER column holds."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return INT32_MIN <= value <= INT32_MAX


def comparable(number: int | Decimal, *, fits: int = INT64_MAX) -> int | float:
    """`number` as the database compares it with a column: the int itself when it is whole and
    within +/-`fits`, otherwise a float (+/-inf past float's range; float(int) would overflow).

    >>> comparable(5), comparable(10**30), comparable(-(10**5000))
    (5, 1e+30, -inf)
    """
    whole = int(number) if isinstance(number, int) or number.is_finite() else None
    if whole is not None and number == whole and -fits - 1 <= whole <= fits:
        return whole
    return float(Decimal(number))
