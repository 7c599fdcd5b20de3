"""What every back end shares: the execution options its hooks read, and the date fields it spells.

Nothing here knows a particular back end; the back-end modules import it, never the other way.
"""

from __future__ import annotations

from enum import StrEnum

# A connection with this execution option is a write transaction: it takes the database's
# write lock before its first statement (see app.storage.database.write_transaction).
WRITE_OPTION = "localforce_write"
# On an engine shared by sandboxes, the schemas a transaction reads through, first to last: the
# sandbox's own, then its template's.
SEARCH_PATH_OPTION = "localforce_search_path"


class DateField(StrEnum):
    """The integer parts of a date or datetime that every back end spells (SOQL's date
    functions are built from them in app.soql.functions)."""

    YEAR = "YEAR"
    MONTH = "MONTH"
    DAY = "DAY"
    DAY_OF_YEAR = "DAY_OF_YEAR"
    HOUR = "HOUR"
    DAY_OF_WEEK = "DAY_OF_WEEK"  # 0 for Sunday
