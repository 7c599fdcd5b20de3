"""What a service needs besides the connection: the org's schema, its tables, who and when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.metadata.model import SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql.date_literals import OrgCalendar
from app.soql.function_registry import FunctionRegistry
from app.storage.tables import TableSet

# The tables an org's context holds, for the annotations of those that pass them on.
__all__ = ["TableSet"]


@dataclass(frozen=True)
class OrgContext:
    registry: SchemaRegistry
    tables: TableSet
    user_id: str
    now: datetime
    # e.g. "/services/data/v59.0": the versioned root that URLs in responses are built on.
    base_path: str
    # The SOQL functions queries and searches may call: the app's (create_app's `functions`).
    functions: FunctionRegistry
    # The sandbox the request runs in: cursors opened here may only be read from here.
    sandbox_id: str = "default"
    # The org's day, time zone and fiscal year start (date literals); None: UTC, January.
    calendar: OrgCalendar | None = None
    # Whose query locators the queries open, when not the user's (the web console's never
    # count against the ten a user may hold, so looking never closes an agent's locator).
    locator_owner: str | None = None

    @property
    def org_calendar(self) -> OrgCalendar:
        """`calendar`, or the UTC calendar of `now` when the caller gave none."""
        return self.calendar or OrgCalendar.at(self.now, "UTC", 1)

    @property
    def api_version(self) -> str:
        """e.g. "59.0", read from `base_path`."""
        return self.base_path.rsplit("/v", 1)[-1]

    def record_url(self, sobject: SObjectDef, record_id: str) -> str:
        return f"{self.base_path}/sobjects/{sobject.name}/{record_id}"
