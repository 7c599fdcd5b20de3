"""The calls an episode made, kept in memory with a bound, for a harness to save."""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import asdict, dataclass

MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class Call:
    time: str
    method: str
    path: str
    query: str | None
    status: int
    durationMs: float  # camelCase: the JSON key clients read


class CallLog:
    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self._calls: deque[Call] = deque(maxlen=limit)
        self._lock = threading.Lock()

    def add(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)

    def clear(self) -> None:
        with self._lock:
            self._calls.clear()

    def entries(self) -> list[dict[str, object]]:
        with self._lock:
            return [asdict(call) for call in self._calls]

    def json_lines(self) -> str:
        return "".join(json.dumps(entry) + "\n" for entry in self.entries())
