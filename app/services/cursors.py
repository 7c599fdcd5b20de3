"""Query cursors: the rest of a result, kept while a client pages through it.

A locator is `<01g id>-<offset of the next batch>`. Cursors expire after 15 minutes unused, as
Salesforce's do, and only the most recent ones are kept.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.errors import SalesforceError
from app.soql.compiler import CompiledQuery
from app.storage.ids import make_id, normalize_id

IDLE_SECONDS = 15 * 60
MAX_CURSORS = 200


def invalid_locator() -> SalesforceError:
    return SalesforceError("invalid query locator", error_code="INVALID_QUERY_LOCATOR")


@dataclass
class Cursor:
    compiled: CompiledQuery
    rows: Sequence[Sequence[Any]]
    batch_size: int
    # The sandbox the query ran in: a locator is no key to another sandbox's rows.
    owner: str = "default"
    last_used: float = field(default_factory=time.monotonic)


class CursorStore:
    """Open cursors by locator id; thread-safe, since requests run in a thread pool."""

    def __init__(self) -> None:
        self._cursors: OrderedDict[str, Cursor] = OrderedDict()
        self._lock = threading.Lock()
        self._opened = 0

    def open(self, cursor: Cursor) -> str:
        with self._lock:
            self._opened += 1
            cursor_id = make_id("01g", self._opened)
            self._cursors[cursor_id] = cursor
            while len(self._cursors) > MAX_CURSORS:
                self._cursors.popitem(last=False)
            return cursor_id

    def take(self, locator: str, owner: str) -> tuple[str, Cursor, int]:
        """The cursor a locator names and the offset it asks for, or INVALID_QUERY_LOCATOR."""
        cursor_part, _, offset_part = locator.partition("-")
        cursor_id = normalize_id(cursor_part)
        if cursor_id is None or not offset_part.isdigit():
            raise invalid_locator()
        now = time.monotonic()
        with self._lock:
            cursor = self._cursors.get(cursor_id)
            if cursor is None or cursor.owner != owner or now - cursor.last_used > IDLE_SECONDS:
                if cursor is not None and cursor.owner == owner:
                    self._cursors.pop(cursor_id, None)
                raise invalid_locator()
            offset = int(offset_part)
            if offset <= 0 or offset >= len(cursor.rows):
                raise invalid_locator()
            cursor.last_used = now
            self._cursors.move_to_end(cursor_id)
            return cursor_id, cursor, offset

    def close(self, cursor_id: str) -> None:
        with self._lock:
            self._cursors.pop(cursor_id, None)
