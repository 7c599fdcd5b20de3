"""Reading a CRMArena SQLite dump: one table per sObject, named by its API name, with the field
API names as columns. The dump is opened read-only and never changed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SQLITE_MAGIC = b"SQLite format 3\x00"


class DumpError(Exception):
    """The dump cannot be imported; the message says what is wrong and where."""


class Dump:
    """An open dump: its tables, their columns and rows."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._conn = connection
        try:
            names = connection.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
            ).fetchall()
        except sqlite3.DatabaseError as error:
            raise DumpError(f"{path} is not a readable SQLite database: {error}") from None
        self.tables: list[str] = [row[0] for row in names]

    def table(self, name: str) -> str | None:
        """The dump's table for sObject `name` (table names compare case-insensitively)."""
        wanted = name.lower()
        return next((table for table in self.tables if table.lower() == wanted), None)

    @staticmethod
    def _quoted(table: str) -> str:
        return '"' + table.replace('"', '""') + '"'

    def columns(self, table: str) -> list[str]:
        rows = self._conn.execute(f"PRAGMA table_info({self._quoted(table)})").fetchall()
        return [row[1] for row in rows]

    def count(self, table: str) -> int:
        return int(self._conn.execute(f"SELECT count(*) FROM {self._quoted(table)}").fetchone()[0])

    def rows(self, table: str) -> Iterator[tuple[Any, ...]]:
        """The table's rows in storage order, as tuples in `columns(table)` order."""
        try:
            yield from self._conn.execute(f"SELECT * FROM {self._quoted(table)}")
        except sqlite3.DatabaseError as error:
            raise DumpError(f"Table {table} of {self.path} cannot be read: {error}") from None


@contextmanager
def open_dump(path: Path) -> Iterator[Dump]:
    """Open `path` read-only; a file that is not a SQLite database is a DumpError."""
    if not path.is_file():
        raise DumpError(f"No such file: {path}")
    with path.open("rb") as handle:
        header = handle.read(len(SQLITE_MAGIC))
    if header != SQLITE_MAGIC:
        raise DumpError(f"{path} is not a SQLite database (a CRMArena dump is a SQLite file)")
    # immutable: nobody writes the dump while we read it, so SQLite needs no lock or journal.
    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    connection = sqlite3.connect(uri, uri=True)
    try:
        yield Dump(path, connection)
    except sqlite3.DatabaseError as error:
        raise DumpError(f"{path} cannot be read: {error}") from None
    finally:
        connection.close()
