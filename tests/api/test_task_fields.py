"""A task's standard fields the platform derives: IsClosed from its status, IsHighPriority from
its priority, AccountId from what it is related to; none can be written."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API

DERIVED = "IsClosed,IsHighPriority,AccountId,IsArchived,IsRecurrence"


def test_a_task_derives_closed_priority_and_account(api: TestClient) -> None:
    account = api.post(f"{API}/sobjects/Account", json={"Name": "Xtask Account"}).json()["id"]
    created = api.post(
        f"{API}/sobjects/Task",
        json={"Subject": "Xtask call", "Priority": "High", "WhatId": account},
    )
    assert created.status_code == 201, created.text
    url = f"{API}/sobjects/Task/{created.json()['id']}"
    assert api.get(url, params={"fields": DERIVED}).json() == {
        "attributes": {"type": "Task", "url": url},
        "IsClosed": False,
        "IsHighPriority": True,
        "AccountId": account,
        "IsArchived": False,
        "IsRecurrence": False,
        "Id": created.json()["id"],
    }
    changed = {"Status": "Completed", "Priority": "Low", "WhatId": None}
    assert api.patch(url, json=changed).status_code == 204
    after = api.get(url, params={"fields": "IsClosed,IsHighPriority,AccountId"}).json()
    assert (after["IsClosed"], after["IsHighPriority"], after["AccountId"]) == (True, False, None)
    closed = api.get(f"{API}/query", params={"q": "SELECT Id FROM Task WHERE IsClosed = true"})
    assert created.json()["id"] in {r["Id"] for r in closed.json()["records"]}


@pytest.mark.parametrize("field", ["IsClosed", "IsHighPriority", "AccountId", "IsArchived"])
def test_what_the_platform_derives_cannot_be_written(api: TestClient, field: str) -> None:
    value = None if field == "AccountId" else True
    response = api.post(f"{API}/sobjects/Task", json={"Subject": "Xtask", field: value})
    assert response.status_code == 400
    assert response.json() == [
        {
            "message": f"Unable to create/update fields: {field}. Please check the security "
            "settings of this field and verify that it is read/write for your profile or "
            "permission set.",
            "errorCode": "INVALID_FIELD_FOR_INSERT_UPDATE",
            "fields": [field],
        }
    ]


def test_a_tasks_account_is_that_of_what_it_concerns(api: TestClient) -> None:
    """What it is related to gives its account when that is an opportunity or a contract (or
    an account); otherwise the contact it is about does, as the Object Reference's
    Task.AccountId says."""
    account = api.post(f"{API}/sobjects/Account", json={"Name": "Xtask Parent"}).json()["id"]
    opportunity = api.post(
        f"{API}/sobjects/Opportunity",
        json={
            "Name": "Xtask Deal",
            "StageName": "Prospecting",
            "CloseDate": "2024-05-01",
            "AccountId": account,
        },
    ).json()["id"]
    contact = api.post(
        f"{API}/sobjects/Contact", json={"LastName": "Xtask", "AccountId": account}
    ).json()["id"]
    lead = api.post(f"{API}/sobjects/Lead", json={"LastName": "Xtask", "Company": "X"}).json()["id"]
    other = api.post(f"{API}/sobjects/Account", json={"Name": "Xtask Other"}).json()["id"]
    case = api.post(f"{API}/sobjects/Case", json={"Subject": "Xtask", "AccountId": other})
    cases = [
        ({"WhatId": opportunity}, account),
        ({"WhoId": contact}, account),
        # A case's account is not the activity's: related to a case, it takes its contact's.
        ({"WhatId": case.json()["id"], "WhoId": contact}, account),
        ({"WhatId": case.json()["id"]}, None),
        ({"WhoId": lead}, None),
        ({}, None),
    ]
    for related, expected in cases:
        for sobject, extra in (
            ("Task", {}),
            (
                "Event",
                {"DurationInMinutes": 30, "ActivityDateTime": "2024-05-01T10:00:00.000+0000"},
            ),
        ):
            created = api.post(
                f"{API}/sobjects/{sobject}", json={"Subject": "Xtask", **related, **extra}
            )
            assert created.status_code == 201, created.text
            url = f"{API}/sobjects/{sobject}/{created.json()['id']}"
            assert api.get(url, params={"fields": "AccountId"}).json()["AccountId"] == expected
    # An account's ActivityHistories hold the closed tasks of its opportunities.
    done = {"Subject": "Xtask done", "WhatId": opportunity, "Status": "Completed"}
    api.post(f"{API}/sobjects/Task", json=done)
    soql = f"SELECT (SELECT Subject FROM ActivityHistories) FROM Account WHERE Id = '{account}'"
    [record] = api.get(f"{API}/query", params={"q": soql}).json()["records"]
    assert [r["Subject"] for r in record["ActivityHistories"]["records"]] == ["Xtask done"]
