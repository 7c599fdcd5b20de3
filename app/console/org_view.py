"""A sandbox as the console reads it: leased (a delete waits for the page), with a read
connection and the org as its first user sees it. The console's reads are not API calls:
they enter no call log and no API usage count."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection

from app.api.state import AppState
from app.errors import NotFound
from app.sandbox.model import Sandbox
from app.services.auth import login_user
from app.services.context import OrgContext
from app.services.cursors import CursorStore
from app.services.org import NEWEST_API_VERSION
from app.soql.date_literals import OrgCalendar

# Whose the console's query locators are: no user id looks like it.
CONSOLE_LOCATORS = "console"


@dataclass(frozen=True)
class OrgView:
    sandbox: Sandbox
    conn: Connection
    ctx: OrgContext
    cursors: CursorStore  # the server's query locators (the console's own: CONSOLE_LOCATORS)


@contextmanager
def open_view(state: AppState, sandbox_id: str) -> Iterator[OrgView]:
    sandbox = state.sandboxes.find(sandbox_id)
    if sandbox is None or not sandbox.lease():
        raise NotFound(f"No sandbox has the id {sandbox_id}")
    try:
        with sandbox.engine.connect() as conn:
            user_id, _ = login_user(conn, sandbox.schema.tables, "")
            now = sandbox.clock.now()
            settings = state.settings
            ctx = OrgContext(
                registry=sandbox.schema.registry,
                tables=sandbox.schema.tables,
                user_id=user_id,
                now=now,
                base_path=f"/services/data/v{NEWEST_API_VERSION}.0",
                sandbox_id=sandbox.instance,
                calendar=OrgCalendar.at(now, settings.timezone, settings.fiscal_year_start_month),
                functions=state.functions,
                locator_owner=CONSOLE_LOCATORS,
            )
            yield OrgView(sandbox=sandbox, conn=conn, ctx=ctx, cursors=state.cursors)
    finally:
        sandbox.release()
