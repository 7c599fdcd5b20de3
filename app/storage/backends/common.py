"""What every back end shares: the execution options its hooks read, the date fields it spells,
the layout of a copy-on-write sandbox, the interface of its sandbox storage, and how clones are
named.

Nothing here knows a particular back end; the back-end modules import it, never the other way.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, Select
from sqlalchemy.exc import DBAPIError

# A connection with this execution option is a write transaction: it takes the database's
# write lock before its first statement (see app.storage.database.write_transaction).
WRITE_OPTION = "localforce_write"
# On an engine shared by sandboxes, the schemas a transaction reads through, first to last: the
# sandbox's own, then its template's.
SEARCH_PATH_OPTION = "localforce_search_path"
# The execution option that marks an engine as a copy-on-write sandbox (its value: an Overlay).
OVERLAY_OPTION = "localforce_overlay"
# Tables every sandbox holds from its start: what a write always touches besides data.
OWN_TABLES = ("lf_journal", "lf_id_sequence", "lf_snapshot")
# Their serial columns: a copy of the table needs a sequence of its own.
SERIAL_COLUMNS = {"lf_journal": "seq"}


@dataclass(frozen=True)
class Overlay:
    """Where a sandbox's own tables are (`local`) and where its template's are (`template`),
    as SQL qualifiers: an attached database's alias, or a schema."""

    local: str
    template: str


class DateField(StrEnum):
    """The integer parts of a date or datetime that every back end spells (SOQL's date
    functions are built from them in app.soql.functions)."""

    YEAR = "YEAR"
    MONTH = "MONTH"
    DAY = "DAY"
    DAY_OF_YEAR = "DAY_OF_YEAR"
    HOUR = "HOUR"
    DAY_OF_WEEK = "DAY_OF_WEEK"  # 0 for Sunday


class Copies(Protocol):
    """Where sandbox data lives: templates (freshly seeded orgs) and the clones sandboxes run
    on, each holding only what its episode wrote over the template it reads through.

    Each copy is named by the `url` this object gives out and takes back, which the platform
    database records: one that holds wherever the data sits (on SQLite a path relative to the
    data directory, so a copied data directory uses its own files). `database_url` is the
    SQLAlchemy URL to open it with."""

    def database_url(self, url: str) -> str: ...
    def template_url(self, key: str) -> str: ...
    def list_templates(self) -> list[str]: ...
    def list_clones(self) -> list[str]: ...
    def create_empty(self, url: str) -> None: ...
    def exists(self, url: str) -> bool: ...
    def clone(self, source_url: str) -> str: ...
    def drop(self, url: str) -> None: ...
    def storage_of(self, url: str) -> str: ...
    def engine_for(self, url: str, template: str) -> Engine: ...
    def release(self, engine: Engine) -> None: ...
    def close(self) -> None: ...
    # Run `upgrade` on each copy's own storage that the platform migrations do not reach.
    def upgrade_storage(self, upgrade: Callable[[Connection], object]) -> None: ...


# A clone's name carries the time it was made, so that storage a crash left behind (a copy no
# sandbox or pool row names) can be told from a copy another worker is making right now. Clones
# are `copy-<name>` files or `<database>_sb_<name>` schemas; a new back end names its clones
# one of these two ways.
_MADE_AT = re.compile(r"(?:copy-|_sb_)(\d{10})[-_]")


def clone_name() -> str:
    """A new clone's unique name: the time it is made, then a random part."""
    return f"{int(time.time()):010d}-{uuid.uuid4().hex[:12]}"


def copy_age(url: str, now: float | None = None) -> float | None:
    """Seconds since the copy at `url` was made, read from its name (None: not a clone)."""
    found = _MADE_AT.search(url)
    if found is None:
        return None
    return (time.time() if now is None else now) - int(found.group(1))


@contextmanager
def raised_as_sqlalchemys(
    conn: Connection, statement: str, parameters: Any = None
) -> Iterator[None]:
    """A driver's error in work done on the connection's driver (not through SQLAlchemy),
    raised as SQLAlchemy raises it: a DBAPIError, which callers already handle."""
    dbapi = conn.dialect.loaded_dbapi
    try:
        yield
    except dbapi.Error as error:
        raise DBAPIError.instance(
            statement, parameters, error, dbapi.Error, dialect=conn.dialect
        ) from error


@dataclass(frozen=True)
class WireDatetimes:
    """How a back end reads a statement's DateTime columns straight to their wire text,
    `2020-12-22T11:00:00.000+0000`, rather than into datetimes formatted afterwards: the
    statement to run instead (None: the statement as it is), and readers (by column index) to
    apply to the driver's values. It never holds the statement it was made for, so a cache
    keyed weakly by that statement lets it go."""

    statement: Select[Any] | None
    readers: Mapping[int, Callable[[Any], Any]]
