"""What the lifespan builds and every request reads: settings, engine, schema, tables, clock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.sandbox.manager import DEFAULT_ID, SandboxManager
from app.services.auth import Credentials, Session
from app.services.cursors import CursorStore
from app.storage.tables import TableSet


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    registry: SchemaRegistry
    tables: TableSet
    sandboxes: SandboxManager
    sessions: dict[str, Session] = field(default_factory=dict)
    api_requests: int = 0
    cursors: CursorStore = field(default_factory=CursorStore)

    def clock(self) -> datetime:
        """Real time (or the pinned server clock): when sessions are issued."""
        return self.sandboxes.get(DEFAULT_ID).clock.now()

    @property
    def credentials(self) -> Credentials | None:
        if not self.settings.strict_login:
            return None
        return Credentials(self.settings.username, self.settings.password)
