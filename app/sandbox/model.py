"""A sandbox as this process serves it, and what every part of the sandbox package shares:
the default sandbox's id, what an id may be, the settings and the errors."""

from __future__ import annotations

import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from app.errors import SalesforceError
from app.sandbox.clock import SandboxClock, utc_now
from app.sandbox.schemas import Schema

DEFAULT_ID = "default"
# What the default sandbox's row names as its storage: the server's own database, wherever
# the settings put it (a path would tie the platform database to where the data sits).
SERVER_DATABASE = "server"
SANDBOX_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")


def new_sandbox_id() -> str:
    """An id of the server's choosing: 96 random bits, so no one guesses another's sandbox."""
    return f"sb{secrets.token_hex(12)}"


class SandboxLimitReached(SalesforceError):
    error_code = "REQUEST_LIMIT_EXCEEDED"
    status_code = 403


class SandboxBusy(SalesforceError):
    error_code = "UNABLE_TO_LOCK_ROW"
    status_code = 409


@dataclass
class Sandbox:
    """A sandbox as this process serves it: its registry row made live (an engine, a clock)."""

    id: str
    instance: str
    org: str
    seed: int
    url: str
    engine: Engine
    clock: SandboxClock
    schema: Schema
    # The template the sandbox was cloned from ("" for the default sandbox, which has none).
    template: str = ""
    # What a login into it must hash to (see SandboxRow); never described.
    password_hash: str = field(default="", repr=False)
    created_at: datetime = field(default_factory=utc_now)
    snapshots: list[str] = field(default_factory=list)
    touched: float = field(default_factory=time.monotonic, repr=False)
    # Requests in flight here: delete waits for them, and refuses new ones once closing.
    _in_flight: int = field(default=0, repr=False)
    _closing: bool = field(default=False, repr=False)
    _quiet: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_ID

    def lease(self) -> bool:
        """Count a request in; False once the sandbox is being deleted."""
        with self._quiet:
            if self._closing:
                return False
            self._in_flight += 1
            return True

    def release(self) -> None:
        with self._quiet:
            self._in_flight -= 1
            self._quiet.notify_all()

    def close(self, timeout: float) -> bool:
        """Refuse new requests and wait up to `timeout` s for those in flight to end. False
        (and open again) if some are still running then."""
        with self._quiet:
            self._closing = True
            if self._quiet.wait_for(lambda: self._in_flight == 0, timeout=timeout):
                return True
            self._closing = False
            return False

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "org": self.org,
            "seed": self.seed,
            "clock": self.clock.describe(),
            "createdDate": self.created_at.isoformat() + "Z",
            "snapshots": sorted(self.snapshots),
        }


@dataclass
class SandboxSettings:
    max_sandboxes: int
    idle_seconds: float
    pool_size: int
    # Templates: how many distinct ones may exist, and after how long unused one is dropped.
    max_templates: int = 8
    template_idle_seconds: float = 3600.0
    # Sandboxes whose connections stay open between requests (the most recently served).
    pooled_sandboxes: int = 256
