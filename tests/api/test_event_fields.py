"""An event's standard fields the platform derives: ActivityDateTime is its start, EndDate the
day it ends, AccountId the account it concerns; its checkboxes are false unless set. Seeding
derives them as writes do."""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from typing import Any

from fastapi.testclient import TestClient

from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import build_rows
from tests.conftest import API, TEST_SEED


def test_an_event_derives_its_start_end_date_and_account(api: TestClient) -> None:
    account = api.post(f"{API}/sobjects/Account", json={"Name": "Xevent Account"}).json()["id"]
    created = api.post(
        f"{API}/sobjects/Event",
        json={
            "Subject": "Xevent kickoff",
            "StartDateTime": "2024-03-04T22:30:00.000+0000",
            "EndDateTime": "2024-03-05T01:00:00.000+0000",
            "WhatId": account,
        },
    )
    assert created.status_code == 201, created.text
    url = f"{API}/sobjects/Event/{created.json()['id']}"
    fields = "ActivityDateTime,EndDate,AccountId,IsPrivate,IsReminderSet,IsRecurrence"
    assert api.get(url, params={"fields": fields}).json() == {
        "attributes": {"type": "Event", "url": url},
        "ActivityDateTime": "2024-03-04T22:30:00.000+0000",
        "EndDate": "2024-03-05",
        "AccountId": account,
        "IsPrivate": False,
        "IsReminderSet": False,
        "IsRecurrence": False,
        "Id": created.json()["id"],
    }
    assert api.patch(url, json={"WhatId": None, "IsPrivate": True}).status_code == 204
    after = api.get(url, params={"fields": "AccountId,IsPrivate"}).json()
    assert (after["AccountId"], after["IsPrivate"]) == (None, True)


def test_what_the_platform_maintains_cannot_be_written(api: TestClient) -> None:
    response = api.post(
        f"{API}/sobjects/Event",
        json={
            "Subject": "Xevent",
            "StartDateTime": "2024-03-04T22:30:00.000+0000",
            "EndDateTime": "2024-03-04T23:00:00.000+0000",
            "EndDate": "2024-03-04",
            "IsChild": True,
        },
    )
    assert response.status_code == 400
    [error] = response.json()
    assert error["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"
    assert sorted(error["fields"]) == ["EndDate", "IsChild"]


@cache
def _seeded_b2b() -> dict[str, list[dict[str, Any]]]:
    """The B2B org's rows as seeding completes them (no database: the default org has no
    events, and a test here must not depend on another's writes)."""
    registry = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / "b2b" / "objects")
    return build_rows(registry, "b2b", TEST_SEED)


def test_seeded_events_are_derived_as_written_ones_are() -> None:
    rows = _seeded_b2b()
    accounts = {row["Id"]: row["AccountId"] for row in rows["Opportunity"]}
    assert rows["Event"]
    for event in rows["Event"]:
        start = event["StartDateTime"]
        assert event["ActivityDateTime"] == start
        assert event["EndDateTime"] == start + timedelta(minutes=event["DurationInMinutes"])
        assert event["EndDate"] == event["EndDateTime"].date()
        assert event["ActivityDate"] == start.date()
        assert event["AccountId"] == accounts[event["WhatId"]]


def test_seeded_tasks_take_their_opportunitys_account() -> None:
    rows = _seeded_b2b()
    accounts = {row["Id"]: row["AccountId"] for row in rows["Opportunity"]}
    assert rows["Task"]
    for task in rows["Task"]:
        assert task["AccountId"] == accounts[task["WhatId"]]
        assert task["IsClosed"] == (task["Status"] == "Completed")
