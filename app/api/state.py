"""What the lifespan builds and every request reads: settings, engine, schema, tables, clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.services.auth import Credentials, Session
from app.services.cursors import CursorStore
from app.storage.tables import TableSet


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    registry: SchemaRegistry
    tables: TableSet
    clock: Callable[[], datetime]
    sessions: dict[str, Session] = field(default_factory=dict)
    api_requests: int = 0
    cursors: CursorStore = field(default_factory=CursorStore)

    @property
    def credentials(self) -> Credentials | None:
        if not self.settings.strict_login:
            return None
        return Credentials(self.settings.username, self.settings.password)
