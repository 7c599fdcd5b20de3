"""INSERT ... ON CONFLICT, which SQLAlchemy builds with each dialect's own insert(): the back end
of the dialect named builds it (app.storage.backends)."""

from __future__ import annotations

from typing import Any

from app.storage.backends import UpsertInsert, backend_for


def upsert_into(dialect_name: str, table: Any) -> UpsertInsert:
    """An INSERT into `table` that takes ON CONFLICT clauses, for the dialect named."""
    return backend_for(dialect_name).insert(table)
