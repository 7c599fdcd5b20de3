"""Rows on their way to the platform database, each a sandbox's: requests queue them as they
end (on many threads) and a flusher writes them in batches, off the requests' path."""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from sqlalchemy import Connection, Engine

from app.storage.database import platform_transaction

Row = TypeVar("Row")
logger = logging.getLogger(__name__)


class WriteQueue(ABC, Generic[Row]):
    """Rows queued under their sandbox's id and written in batches (`flush`), in the order
    they came, by `write`; thread-safe."""

    def __init__(self, platform: Engine) -> None:
        self.platform = platform
        self._pending: list[tuple[str, Row]] = []
        self._failed: list[tuple[str, Row]] = []  # a failed batch's, tried once more
        self._lock = threading.Lock()
        # Held from taking rows to committing them, so that a read that flushes first waits
        # for a flush already under way instead of reading before its commit. The queue's
        # own lock is taken inside it, never around it.
        self._flushing = threading.Lock()

    @abstractmethod
    def write(self, conn: Connection, rows: list[tuple[str, Row]]) -> None:
        """Write a batch in the platform transaction `conn`."""

    def add(self, sandbox_id: str, row: Row) -> None:
        with self._lock:
            self._pending.append((sandbox_id, row))

    def pending(self) -> bool:
        with self._lock:
            return bool(self._pending or self._failed)

    def flush(self) -> None:
        """Write every row waiting. A batch whose transaction fails (a lock timed out, the
        database away a moment) is tried once more with the next flush; rows failing twice
        are dropped, so that one the database refuses for good cannot hold up every batch
        after it. The error goes on to the caller."""
        with self._flushing:
            with self._lock:
                retried, fresh = self._failed, self._pending
                self._failed, self._pending = [], []
            taken = retried + fresh
            if not taken:
                return
            try:
                with platform_transaction(self.platform) as conn:
                    self.write(conn, taken)
            except BaseException:
                with self._lock:
                    self._failed = fresh
                if retried:
                    logger.error("%d queued rows failed twice and were dropped", len(retried))
                raise

    def drop(self, sandbox_id: str) -> None:
        """The sandbox's rows not yet written go unwritten."""
        with self._lock:
            self._pending = [entry for entry in self._pending if entry[0] != sandbox_id]
            self._failed = [entry for entry in self._failed if entry[0] != sandbox_id]


def storable(text: str | None) -> str | None:
    """Text every back end can store: PostgreSQL refuses NUL and lone surrogates, and a
    client's query string, or an agent's tool name, may hold anything."""
    if text is None:
        return None
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")
