"""The client of a localforce server (`pip install localforce-client`; httpx only):

- `Org` / `AsyncOrg` and `login()`: the Salesforce REST surface an agent needs, with a token;
- `Control` / `AsyncControl`: the control plane (sandboxes, episodes, results, splits), with
  the server's admin key;
- `make()` / `make_async()`: a gym-like environment of benchmark episodes for trainers;
- `connect()`: a simple-salesforce client routed to localforce (the `simple-salesforce`
  extra).
"""

from __future__ import annotations

from typing import Any

from localforce.control import AsyncControl, Control
from localforce.env import (
    AsyncEnv,
    Env,
    EpisodeOver,
    Reset,
    Step,
    make,
    make_async,
    parse_tool_call,
)
from localforce.errors import SalesforceError, ToolError, Unanswered
from localforce.rest import AsyncOrg, Org, alogin, login
from localforce.tools import ToolResult

__all__ = [
    "AsyncControl",
    "AsyncEnv",
    "AsyncOrg",
    "Control",
    "Env",
    "EpisodeOver",
    "Org",
    "Reset",
    "SalesforceError",
    "Step",
    "ToolError",
    "ToolResult",
    "Unanswered",
    "alogin",
    "connect",
    "login",
    "make",
    "make_async",
    "parse_tool_call",
]


def connect(
    base_url: str, username: str = "agent@example.com", password: str = "password", **options: Any
) -> Any:
    """A simple-salesforce client logged in to localforce by SOAP, as harnesses log in
    (needs the `simple-salesforce` extra)."""
    from localforce.routing import connect as routed

    return routed(base_url, username, password, **options)
