"""An event's standard fields the platform derives: ActivityDateTime is its start, EndDate the
day it ends, AccountId the account it is related to; its checkboxes are false unless set."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.conftest import API


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


def test_seeded_events_are_derived_as_written_ones_are(api: TestClient) -> None:
    soql = (
        "SELECT StartDateTime, ActivityDateTime, EndDateTime, EndDate FROM Event "
        "WHERE EndDateTime != null LIMIT 50"
    )
    records = api.get(f"{API}/query", params={"q": soql}).json()["records"]
    assert records
    for record in records:
        assert record["ActivityDateTime"] == record["StartDateTime"]
        assert record["EndDate"] == record["EndDateTime"][:10]
