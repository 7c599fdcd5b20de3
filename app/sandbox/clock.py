"""Each sandbox's clock: pinned to an instant, or running from a set start (restarted by reset)."""

from __future__ import annotations

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
    moving on from `start` since `origin`: the real time the sandbox was created or last reset
    (real time, not a process's monotonic clock, so every worker reads the same time)."""

    start: datetime | None = None
    pinned: bool = False
    origin: datetime = field(default_factory=utc_now)

    def now(self) -> datetime:
        if self.start is None:
            return utc_now()
        if self.pinned:
            return self.start
        elapsed = max(timedelta(0), utc_now() - self.origin)
        return self.start + timedelta(seconds=int(elapsed.total_seconds()))

    def restart(self) -> datetime:
        self.origin = utc_now()
        return self.origin

    def describe(self) -> dict[str, object]:
        return {
            "mode": "real" if self.start is None else ("pinned" if self.pinned else "running"),
            "start": None if self.start is None else self.start.isoformat() + "Z",
            "now": self.now().isoformat() + "Z",
        }
