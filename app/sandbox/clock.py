"""Each sandbox's clock: pinned to an instant, or running from a set start (restarted by reset)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta


def utc_now() -> datetime:
    """Real time: UTC, naive, to the second (Salesforce stores milliseconds, always .000)."""
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def to_naive_utc(moment: datetime) -> datetime:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.replace(microsecond=0)


@dataclass
class SandboxClock:
    """`start` None means real time. Otherwise time is `start`, frozen when `pinned`, else
    moving on from `start` since the sandbox was created or last reset."""

    start: datetime | None = None
    pinned: bool = False
    _origin: float = field(default_factory=time.monotonic, repr=False)

    def now(self) -> datetime:
        if self.start is None:
            return utc_now()
        if self.pinned:
            return self.start
        elapsed = timedelta(seconds=int(time.monotonic() - self._origin))
        return self.start + elapsed

    def restart(self) -> None:
        self._origin = time.monotonic()

    def describe(self) -> dict[str, object]:
        return {
            "mode": "real" if self.start is None else ("pinned" if self.pinned else "running"),
            "start": None if self.start is None else self.start.isoformat() + "Z",
            "now": self.now().isoformat() + "Z",
        }
