"""The one error family, and the renderer of Salesforce's error body.

Every failure a client can see is a `SalesforceError`: an errorCode, an HTTP status, a message
and, for field errors, the fields. The API layer renders it as Salesforce does, a JSON array of
`{"message", "errorCode"[, "fields"]}` objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class SalesforceError(Exception):
    """An error a real org would answer with: errorCode, status and message."""

    error_code = "UNKNOWN_EXCEPTION"
    status_code = 400

    def __init__(
        self,
        message: str,
        *,
        error_code: str | None = None,
        status_code: int | None = None,
        fields: Sequence[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if error_code is not None:
            self.error_code = error_code
        if status_code is not None:
            self.status_code = status_code
        self.fields = list(fields) if fields is not None else None

    def to_body(self) -> list[dict[str, Any]]:
        item: dict[str, Any] = {"message": self.message, "errorCode": self.error_code}
        if self.fields is not None:
            item["fields"] = self.fields
        return [item]


class NotFound(SalesforceError):
    error_code = "NOT_FOUND"
    status_code = 404

    def __init__(self, message: str = "The requested resource does not exist") -> None:
        super().__init__(message)


class InvalidSession(SalesforceError):
    error_code = "INVALID_SESSION_ID"
    status_code = 401

    def __init__(self, message: str = "Session expired or invalid") -> None:
        super().__init__(message)


class MethodNotAllowed(SalesforceError):
    error_code = "METHOD_NOT_ALLOWED"
    status_code = 405


class UnsupportedMediaType(SalesforceError):
    error_code = "UNSUPPORTED_MEDIA_TYPE"
    status_code = 415

    def __init__(self, media_type: str) -> None:
        super().__init__(f"MediaType of '{media_type}' is not supported by this resource")


class BodyTooLarge(SalesforceError):
    error_code = "REQUEST_ENTITY_TOO_LARGE"
    status_code = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"The request body is larger than the limit of {limit:,} bytes")


class JsonParserError(SalesforceError):
    error_code = "JSON_PARSER_ERROR"


class EntityIsDeleted(SalesforceError):
    error_code = "ENTITY_IS_DELETED"
    status_code = 404

    def __init__(self) -> None:
        super().__init__("entity is deleted", fields=[])


class FieldError(SalesforceError):
    """A DML error about particular fields (the body carries `fields`)."""

    def __init__(self, error_code: str, message: str, fields: Sequence[str]) -> None:
        super().__init__(message, error_code=error_code, fields=fields)


class FeatureNotSupported(SalesforceError):
    """A Salesforce feature localforce does not implement yet: said plainly, never faked."""

    error_code = "FUNCTIONALITY_NOT_ENABLED"
    status_code = 501

    def __init__(self, feature: str) -> None:
        super().__init__(f"localforce does not support {feature} yet")


class UnsupportedQueryFeature(FeatureNotSupported):
    """A SOQL or SOSL construct localforce lacks. Salesforce answers every query it cannot run
    with a 400, so this one is a 400 too, still naming the feature."""

    status_code = 400
