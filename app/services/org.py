"""Org-level resources: API versions, the versioned resource list, limits and record counts."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select

from app.errors import NotFound
from app.metadata.registry import SchemaRegistry
from app.services.numbers import parse_count
from app.storage.tables import TableSet

OLDEST_API_VERSION = 20
NEWEST_API_VERSION = 66
_SEASONS = ("Winter", "Spring", "Summer")
DAILY_API_REQUESTS = 15000


def release_label(major: int) -> str:
    """The release an API version shipped in: v20.0 is Winter '11, v59.0 Winter '24."""
    offset = major - OLDEST_API_VERSION
    return f"{_SEASONS[offset % 3]} '{11 + offset // 3:02d}"


def parse_version(segment: str) -> str:
    """`v59.0` -> `59.0`; anything else (v38, v99.0, 59.0) is the NOT_FOUND Salesforce gives."""
    if not segment.startswith("v") or not segment.endswith(".0"):
        raise NotFound()
    major = parse_count(segment[1:-2], max_digits=3)
    if major is None or not OLDEST_API_VERSION <= major <= NEWEST_API_VERSION:
        raise NotFound()
    return f"{major}.0"


def versions() -> list[dict[str, str]]:
    return [
        {
            "label": release_label(major),
            "url": f"/services/data/v{major}.0",
            "version": f"{major}.0",
        }
        for major in range(OLDEST_API_VERSION, NEWEST_API_VERSION + 1)
    ]


# The resources this org serves, as listed by `GET /services/data/vXX.X`.
RESOURCES = (
    "sobjects",
    "query",
    "queryAll",
    "search",
    "parameterizedSearch",
    "limits",
    "composite",
    "recent",
    "tabs",
    "theme",
    "quickActions",
    "process",
    "jobs",
)
# Salesforce resources localforce knows of but has not built yet: each answers an error naming it.
# Resources of /services/data/vXX.X/ that name an API localforce does not serve: each answers
# an error naming it (after authentication and the version check), never a 404.
PLANNED_RESOURCES: dict[str, str] = {
    "tooling": "the Tooling API",
    "analytics": "the Analytics REST API (reports and dashboards)",
    "chatter": "Chatter REST API (Connect)",
    "connect": "the Connect REST API",
    "wave": "the CRM Analytics REST API",
    "async-queries": "Async SOQL",
    # jsforce's metadata.deployRest (POST .../metadata/deployRequest, then GET its status).
    "metadata": "the Metadata API's REST resources (deployRequest)",
}


def resources(base_path: str, identity_url: str) -> dict[str, str]:
    listed = {name: f"{base_path}/{name}" for name in RESOURCES}
    return {**listed, "identity": identity_url}


def _limit(maximum: int, remaining: int) -> dict[str, int]:
    return {"Max": maximum, "Remaining": remaining}


def limits(api_requests_used: int) -> dict[str, Any]:
    return {
        "ConcurrentAsyncGetReportInstances": _limit(200, 200),
        "ConcurrentSyncReportRuns": _limit(20, 20),
        "DailyApiRequests": _limit(DAILY_API_REQUESTS, DAILY_API_REQUESTS - api_requests_used),
        "DailyAsyncApexExecutions": _limit(250000, 250000),
        "DailyBulkApiBatches": _limit(15000, 15000),
        "DailyBulkV2QueryFileStorageMB": _limit(976562, 976562),
        "DailyBulkV2QueryJobs": _limit(10000, 10000),
        "DailyGenericStreamingApiEvents": _limit(10000, 10000),
        "DailyStreamingApiEvents": _limit(10000, 10000),
        "DataStorageMB": _limit(1024, 1024),
        "FileStorageMB": _limit(1024, 1024),
        "HourlyODataCallout": _limit(10000, 10000),
        "MassEmail": _limit(5000, 5000),
        "SingleEmail": _limit(5000, 5000),
    }


def record_counts(
    conn: Connection, registry: SchemaRegistry, tables: TableSet, wanted: list[str] | None
) -> dict[str, Any]:
    """`/limits/recordCount`: live (not deleted) records per object, optionally filtered."""
    names = {name.lower() for name in wanted} if wanted else None
    counts: list[tuple[str, int]] = []
    for sobject in registry:
        if names is not None and sobject.name.lower() not in names:
            continue
        table = tables[sobject.name]
        count = conn.execute(
            select(func.count()).select_from(table).where(table.c.IsDeleted.is_(False))
        ).scalar_one()
        counts.append((sobject.name, int(count)))
    counts.sort(key=lambda entry: (-entry[1], entry[0]))
    return {"sObjects": [{"count": count, "name": name} for name, count in counts]}
