"""The errors a localforce server answers, as Salesforce renders them: a list of
{errorCode, message, fields} with the HTTP status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class SalesforceError(Exception):
    """A call the server refused: its HTTP status and the errors of its body (the first's
    errorCode and message are the error's own)."""

    status: int
    error_code: str
    message: str
    errors: list[dict[str, Any]] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.error_code}: {self.message} (HTTP {self.status})"

    @classmethod
    def of(cls, response: httpx.Response) -> SalesforceError:
        """The error a response carries: Salesforce's error array, OAuth's error object, or
        the status and text of anything else (a proxy's page, say)."""
        try:
            body = response.json()
        except ValueError:
            body = None
        errors = body if isinstance(body, list) else [body] if isinstance(body, dict) else []
        first = errors[0] if errors and isinstance(errors[0], dict) else {}
        code = first.get("errorCode") or first.get("error") or f"HTTP_{response.status_code}"
        message = first.get("message") or first.get("error_description") or response.text[:500]
        return cls(response.status_code, str(code), str(message), errors)


class ToolError(Exception):
    """An MCP tool call that the server could not run as a tool (a protocol error: not a
    tool's own error, which is an observation)."""


class Unanswered(Exception):
    """A call whose fate is unknown: it was sent, and no server's answer came back (the
    connection dropped, or a balancer answered 502 or 504 for a server it lost). A read is sent
    again instead; a write raises this, as the server may or may not have carried it out."""

    def __init__(self, method: str, path: str, why: str) -> None:
        super().__init__(f"{method} {path}: no answer ({why}); it may or may not have been done")
        self.method = method
        self.path = path
