"""INSERT ... ON CONFLICT, which SQLAlchemy builds with each dialect's own insert(): the one place
that picks it, by a table of the back ends, so a new back end adds a line here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite

_INSERTS: dict[str, Callable[[Any], postgresql.Insert | sqlite.Insert]] = {
    "postgresql": postgresql.insert,
    "sqlite": sqlite.insert,
}


def upsert_into(dialect_name: str, table: Any) -> postgresql.Insert | sqlite.Insert:
    """An INSERT into `table` that takes ON CONFLICT clauses, for the dialect named."""
    return _INSERTS[dialect_name](table)
