"""The API usage count Salesforce reports in `Sforce-Limit-Info`, shared by every worker.

Each request is counted here at once, and the count is added to the platform database's
counter in batches (at most every FLUSH_SECONDS or FLUSH_REQUESTS), so a request does not pay a
write for it; the total a response shows is the shared count plus this process's unflushed part.
"""

from __future__ import annotations

import threading
import time

from sqlalchemy import Engine

from app.storage.database import platform_transaction
from app.storage.platform import Counter
from app.storage.upserts import upsert_into

COUNTERS = Counter.__table__  # type: ignore[attr-defined]
NAME = "api_requests"
FLUSH_SECONDS = 1.0
FLUSH_REQUESTS = 100


class ApiUsage:
    def __init__(self, platform: Engine) -> None:
        self.platform = platform
        self._lock = threading.Lock()
        self._shared = 0  # the database's count when last flushed
        self._pending = 0
        self._flushed_at = time.monotonic()

    def count(self) -> int:
        """Count one request; the total so far, this one included."""
        with self._lock:
            self._pending += 1
            return self._shared + self._pending

    def current(self) -> int:
        with self._lock:
            return self._shared + self._pending

    def due(self) -> bool:
        with self._lock:
            return self._pending >= FLUSH_REQUESTS or (
                self._pending > 0 and time.monotonic() - self._flushed_at >= FLUSH_SECONDS
            )

    def flush(self) -> int:
        """Add this process's unflushed requests to the shared count; the shared count."""
        with self._lock:
            taken, self._pending = self._pending, 0
            self._flushed_at = time.monotonic()
        statement = (
            upsert_into(self.platform.dialect.name, COUNTERS)
            .values(name=NAME, value=taken)
            .on_conflict_do_update(
                index_elements=[COUNTERS.c.name], set_={"value": COUNTERS.c.value + taken}
            )
            .returning(COUNTERS.c.value)
        )
        with platform_transaction(self.platform) as conn:
            shared = int(conn.execute(statement).scalar_one())
        with self._lock:
            self._shared = shared
        return shared
