"""ActivityHistories and OpenActivities: a record's closed tasks and ended events, and its open
tasks and events to come, read through SOQL's child relationships (and only so), as the views
ActivityHistory and OpenActivity of a real org answer them."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import API

PAST = {
    "StartDateTime": "2020-01-01T10:00:00.000+0000",
    "EndDateTime": "2020-01-01T11:00:00.000+0000",
}
TO_COME = {
    "StartDateTime": "2099-01-01T10:00:00.000+0000",
    "EndDateTime": "2099-01-01T11:00:00.000+0000",
}
VIEW_FIELDS = "Subject, IsTask, IsClosed, ActivityType, What.Name"


def _create(api: TestClient, sobject: str, body: dict[str, Any]) -> str:
    response = api.post(f"{API}/sobjects/{sobject}", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _views(api: TestClient, sobject: str, record_id: str) -> dict[str, list[tuple[Any, ...]]]:
    """The record's ActivityHistories and OpenActivities: (Subject, IsTask, IsClosed,
    ActivityType, the What's name) each, by subject."""
    soql = (
        f"SELECT Id, (SELECT {VIEW_FIELDS} FROM ActivityHistories), "
        f"(SELECT {VIEW_FIELDS} FROM OpenActivities) FROM {sobject} WHERE Id = '{record_id}'"
    )
    response = api.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    [record] = response.json()["records"]
    views = {}
    for relationship, view in (
        ("ActivityHistories", "ActivityHistory"),
        ("OpenActivities", "OpenActivity"),
    ):
        found = record[relationship] or {"records": []}
        for row in found["records"]:
            assert row["attributes"]["type"] == view
        views[relationship] = sorted(
            (
                r["Subject"],
                r["IsTask"],
                r["IsClosed"],
                r["ActivityType"],
                (r["What"] or {}).get("Name"),
            )
            for r in found["records"]
        )
    return views


def test_an_accounts_activities_are_history_or_open_by_their_state(api: TestClient) -> None:
    account = _create(api, "Account", {"Name": "Xviews Account"})
    related = {"WhatId": account}
    _create(api, "Task", {"Subject": "Xv done", "Status": "Completed", "Type": "Call", **related})
    task = _create(api, "Task", {"Subject": "Xv open", **related})
    _create(api, "Event", {"Subject": "Xv past", "Type": "Meeting", **PAST, **related})
    _create(api, "Event", {"Subject": "Xv to come", **TO_COME, **related})
    _create(api, "Task", {"Subject": "Xv elsewhere"})
    name = "Xviews Account"
    assert _views(api, "Account", account) == {
        "ActivityHistories": [
            ("Xv done", True, True, "Call", name),
            ("Xv past", False, False, "Meeting", name),
        ],
        "OpenActivities": [
            ("Xv open", True, False, None, name),
            ("Xv to come", False, False, None, name),
        ],
    }
    # Completing the task moves it to the history.
    assert api.patch(f"{API}/sobjects/Task/{task}", json={"Status": "Completed"}).status_code == 204
    views = _views(api, "Account", account)
    assert [row[0] for row in views["ActivityHistories"]] == ["Xv done", "Xv open", "Xv past"]
    assert [row[0] for row in views["OpenActivities"]] == ["Xv to come"]


def test_a_contacts_activities_are_those_about_them(api: TestClient) -> None:
    contact = _create(api, "Contact", {"LastName": "Xviews"})
    _create(api, "Task", {"Subject": "Xv call them", "WhoId": contact, "Status": "Completed"})
    _create(api, "Event", {"Subject": "Xv meet them", "WhoId": contact, **TO_COME})
    assert _views(api, "Contact", contact) == {
        "ActivityHistories": [("Xv call them", True, True, None, None)],
        "OpenActivities": [("Xv meet them", False, False, None, None)],
    }


def test_a_view_is_not_queried_on_its_own(api: TestClient) -> None:
    for view in ("ActivityHistory", "openactivity"):
        response = api.get(f"{API}/query", params={"q": f"SELECT Id FROM {view}"})
        assert response.status_code == 400
        name = "ActivityHistory" if view == "ActivityHistory" else "OpenActivity"
        assert response.json() == [
            {
                "message": f"entity type {name} does not support query",
                "errorCode": "INVALID_TYPE_FOR_OPERATION",
            }
        ]


def test_describe_lists_the_views_as_recorded(api: TestClient) -> None:
    """As the recorded describes list them (SFDO-Tooling/CumulusCI, shared_cassettes)."""
    links = {"Account": "AccountId", "Contact": "WhoId", "Lead": "WhoId", "Case": "WhatId"}
    for sobject, field in links.items():
        described = api.get(f"{API}/sobjects/{sobject}/describe").json()
        views = [
            r
            for r in described["childRelationships"]
            if r["childSObject"] in {"ActivityHistory", "OpenActivity"}
        ]
        assert views == [
            {
                "cascadeDelete": True,
                "childSObject": view,
                "deprecatedAndHidden": False,
                "field": field,
                "junctionIdListNames": [],
                "junctionReferenceTo": [],
                "relationshipName": relationship,
                "restrictedDelete": False,
            }
            for view, relationship in (
                ("ActivityHistory", "ActivityHistories"),
                ("OpenActivity", "OpenActivities"),
            )
        ]


def test_an_event_written_with_its_duration_ends_and_becomes_history(api: TestClient) -> None:
    """A real org ends an event its duration after it starts; once ended, it is history."""
    account = _create(api, "Account", {"Name": "Xviews Durations"})
    start = {"StartDateTime": "2020-03-02T09:00:00.000+0000", "DurationInMinutes": 90}
    event = _create(api, "Event", {"Subject": "Xv lasted", "WhatId": account, **start})
    fields = "EndDateTime,DurationInMinutes,ActivityDate,EndDate"
    got = api.get(f"{API}/sobjects/Event/{event}", params={"fields": fields}).json()
    assert {k: got[k] for k in fields.split(",")} == {
        "EndDateTime": "2020-03-02T10:30:00.000+0000",
        "DurationInMinutes": 90,
        "ActivityDate": "2020-03-02",
        "EndDate": "2020-03-02",
    }
    assert _views(api, "Account", account)["ActivityHistories"] == [
        ("Xv lasted", False, False, None, "Xviews Durations")
    ]


def test_a_task_is_no_all_day_event_and_its_status_matches_in_any_case(api: TestClient) -> None:
    account = _create(api, "Account", {"Name": "Xviews Letters"})
    _create(api, "Task", {"Subject": "Xv lower", "Status": "completed", "WhatId": account})
    soql = (
        "SELECT (SELECT Subject FROM ActivityHistories WHERE IsAllDayEvent = false) "
        f"FROM Account WHERE Id = '{account}'"
    )
    [record] = api.get(f"{API}/query", params={"q": soql}).json()["records"]
    assert [r["Subject"] for r in record["ActivityHistories"]["records"]] == ["Xv lower"]


def test_a_view_is_described(api: TestClient) -> None:
    response = api.get(f"{API}/sobjects/ActivityHistory/describe")
    assert response.status_code == 200, response.text
    described = response.json()
    assert (described["name"], described["keyPrefix"], described["createable"]) == (
        "ActivityHistory",
        None,
        False,
    )
    assert sorted(described["urls"]) == ["describe", "rowTemplate", "sobject"]
    assert {"AccountId", "IsTask", "ActivityType", "WhatId"} <= {
        f["name"] for f in described["fields"]
    }
    assert api.get(f"{API}/sobjects/ActivityHistory").status_code == 404
