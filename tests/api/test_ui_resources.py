"""The REST resources built from the metadata: layouts, list views and their results, quick
actions, tabs, theme, recent records, process rules and approvals, the explain plan, and a
record's relationships."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import API

MASTER = "012000000000000AAA"


def get(api: TestClient, path: str, **params: Any) -> Any:
    response = api.get(f"{API}{path}", params=params)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def query(api: TestClient, soql: str) -> list[dict[str, Any]]:
    return list(get(api, "/query", q=soql)["records"])


def test_layouts_place_the_objects_fields(api: TestClient) -> None:
    described = get(api, "/sobjects/Case/describe")
    answer = get(api, "/sobjects/Case/describe/layouts")
    [layout] = answer["layouts"]
    assert answer["recordTypeMappings"][0]["layoutId"] == layout["id"]
    assert answer["recordTypeMappings"][0]["recordTypeId"] == MASTER
    assert answer["recordTypeSelectorRequired"] == [False]
    assert layout["id"].startswith("00h")
    detail = layout["detailLayoutSections"]
    assert [section["heading"] for section in detail] == ["Case Information", "System Information"]
    placed = [
        item["layoutComponents"][0]["value"]
        for row in detail[0]["layoutRows"]
        for item in row["layoutItems"]
    ]
    assert {"Subject", "Status", "Priority", "AccountId"} <= set(placed)
    assert not {"Id", "IsDeleted", "SystemModstamp", "CreatedDate"} & set(placed)
    assert all(len(row["layoutItems"]) <= 2 for row in detail[0]["layoutRows"])
    # A component's details are the field's describe.
    by_name = {field["name"]: field for field in described["fields"]}
    first = detail[0]["layoutRows"][0]["layoutItems"][0]["layoutComponents"][0]
    assert first["details"] == by_name[first["value"]]
    related = {item["name"]: item for item in layout["relatedLists"]}
    children = {c["relationshipName"] for c in described["childRelationships"]}
    assert set(related) <= children and related
    # The record type's own resource is the same layout; another record type is not there.
    assert get(api, f"/sobjects/Case/describe/layouts/{MASTER}") == layout
    missing = api.get(f"{API}/sobjects/Case/describe/layouts/012000000000001AAA")
    assert missing.status_code == 404


def test_compact_and_approval_layouts(api: TestClient) -> None:
    compact = get(api, "/sobjects/Account/describe/compactLayouts")
    [system] = compact["compactLayouts"]
    assert (system["name"], system["label"], system["objectType"]) == (
        "SYSTEM",
        "System Default",
        "Account",
    )
    assert system["fieldItems"][0]["layoutComponents"][0]["value"] == "Name"
    assert compact["recordTypeCompactLayoutMappings"][0]["compactLayoutName"] == "SYSTEM"
    assert get(api, "/sobjects/Account/describe/approvalLayouts") == {"approvalLayouts": []}


def test_the_all_list_view_runs_a_real_query(api: TestClient) -> None:
    listed = get(api, "/sobjects/Account/listviews")
    assert (listed["size"], listed["done"], listed["sobjectType"]) == (1, True, "Account")
    [view] = listed["listviews"]
    assert (view["label"], view["developerName"]) == ("All Accounts", "AllAccounts")
    assert view["id"].startswith("00B")
    assert view["resultsUrl"] == f"{API}/sobjects/Account/listviews/{view['id']}/results"
    assert get(api, f"/sobjects/Account/listviews/{view['id']}") == view

    described = get(api, f"/sobjects/Account/listviews/{view['id']}/describe")
    assert described["query"].startswith("SELECT Name, ")
    assert described["query"].endswith(
        " FROM Account ORDER BY Name ASC NULLS FIRST, Id ASC NULLS FIRST"
    )
    expected = query(api, f"{described['query']} LIMIT 3 OFFSET 2")

    results = get(api, f"/sobjects/Account/listviews/{view['id']}/results", limit=3, offset=2)
    assert (results["size"], results["done"], results["id"]) == (3, False, view["id"])
    assert results["columns"] == described["columns"]
    rows = [
        {cell["fieldNameOrPath"]: cell["value"] for cell in record["columns"]}
        for record in results["records"]
    ]
    assert [row["Id"] for row in rows] == [record["Id"] for record in expected]
    assert [row["Name"] for row in rows] == [record["Name"] for record in expected]
    total = len(query(api, "SELECT Id FROM Account"))
    last = get(api, f"/sobjects/Account/listviews/{view['id']}/results", limit=5, offset=total - 2)
    assert (last["size"], last["done"]) == (2, True)

    for bad in ({"limit": "2001"}, {"limit": "many"}, {"offset": "2001"}):
        response = api.get(f"{API}/sobjects/Account/listviews/{view['id']}/results", params=bad)
        assert response.status_code == 400, bad
    assert api.get(f"{API}/sobjects/Account/listviews/00B000000000000AAA").status_code == 404


def test_quick_actions_tabs_theme_and_processes(api: TestClient) -> None:
    assert get(api, "/sobjects/Account/quickActions") == []
    assert [action["name"] for action in get(api, "/quickActions")] == ["LogACall"]
    tabs = {tab["sobjectName"]: tab for tab in get(api, "/tabs")}
    assert tabs["Account"]["label"] == "Accounts" and tabs["Account"]["name"] == "standard-Account"
    assert tabs["Account"]["url"].endswith("/001/o")
    themes = {item["name"]: item for item in get(api, "/theme")["themeItems"]}
    assert set(themes) == set(tabs)
    assert themes["Account"]["colors"][0] == {
        "color": "7F8DE1",
        "context": "primary",
        "theme": "theme4",
    }
    assert get(api, "/process") == {
        "rules": f"{API}/process/rules",
        "approvals": f"{API}/process/approvals",
    }
    assert get(api, "/process/rules") == {"rules": {}}
    assert get(api, "/process/approvals") == {"approvals": {}}
    account = api.post(f"{API}/sobjects/Account", json={"Name": "Rules Trigger"}).json()["id"]
    # jsforce's process.rule.trigger, which its suite runs against a real org.
    triggered = api.post(f"{API}/process/rules", json={"contextIds": [account]})
    assert (triggered.status_code, triggered.json()) == (200, {"errors": None, "success": True})
    bodies: list[dict[str, Any]] = [
        {},
        {"contextIds": []},
        {"contextIds": account},
        {"contextIds": [7]},
    ]
    for bad in bodies:
        refused = api.post(f"{API}/process/rules", json=bad)
        assert refused.status_code == 400, bad
        assert refused.json() == [
            {
                "message": "contextIds must be a non-empty array of record ids",
                "errorCode": "JSON_PARSER_ERROR",
            }
        ]
    listed = get(api, "")
    assert {"recent", "tabs", "theme", "quickActions", "process"} <= set(listed)
    wrong = api.get(f"{API}/sobjects/Nope/quickActions")
    assert (wrong.status_code, wrong.json()[0]["errorCode"]) == (404, "NOT_FOUND")


def test_recent_lists_what_was_written_latest_first(api: TestClient) -> None:
    first = api.post(f"{API}/sobjects/Account", json={"Name": "Recent First"}).json()["id"]
    second = api.post(f"{API}/sobjects/Contact", json={"LastName": "Recent Second"}).json()["id"]
    api.patch(f"{API}/sobjects/Account/{first}", json={"Name": "Recent First Again"})
    recent = get(api, "/recent", limit=2)
    assert recent == [
        {
            "attributes": {"type": "Account", "url": f"{API}/sobjects/Account/{first}"},
            "Id": first,
            "Name": "Recent First Again",
        },
        {
            "attributes": {"type": "Contact", "url": f"{API}/sobjects/Contact/{second}"},
            "Id": second,
            "Name": "Recent Second",
        },
    ]
    api.delete(f"{API}/sobjects/Account/{first}")
    assert first not in [item["Id"] for item in get(api, "/recent")]
    assert api.get(f"{API}/recent", params={"limit": "0"}).status_code == 400


def test_explain_gives_the_plan(api: TestClient) -> None:
    account = query(api, "SELECT Id FROM Account LIMIT 1")[0]["Id"]
    cases = len(query(api, "SELECT Id FROM Case"))
    matching = len(query(api, f"SELECT Id FROM Case WHERE AccountId = '{account}'"))
    soql = f"SELECT Id FROM Case WHERE AccountId = '{account}' AND Subject != null"
    assert get(api, "/query", explain=soql) == {
        "plans": [
            {
                "cardinality": len(query(api, soql)),
                "fields": ["AccountId"],
                "leadingOperationType": "Index",
                "notes": [
                    {
                        "description": "Not considering filter for optimization because unindexed",
                        "fields": ["Subject"],
                        "tableEnumOrId": "Case",
                    }
                ],
                "relativeCost": round(len(query(api, soql)) / cases, 6),
                "sobjectCardinality": cases,
                "sobjectType": "Case",
            }
        ],
        "sourceQuery": soql,
    }
    assert matching >= len(query(api, soql))
    scan = get(api, "/query", explain="SELECT Id FROM Case")["plans"][0]
    assert (scan["leadingOperationType"], scan["cardinality"]) == ("TableScan", cases)
    view = get(api, "/sobjects/Case/listviews")["listviews"][0]
    by_view = get(api, "/query", explain=view["id"])
    assert (
        by_view["sourceQuery"]
        == get(api, f"/sobjects/Case/listviews/{view['id']}/describe")["query"]
    )
    bad = api.get(f"{API}/query", params={"explain": "SELECT Nope FROM Case"})
    assert (bad.status_code, bad.json()[0]["errorCode"]) == (400, "INVALID_FIELD")


def test_a_records_relationships(api: TestClient) -> None:
    account = query(api, "SELECT Id, (SELECT Id FROM Contacts) FROM Account LIMIT 1")[0]
    children = get(api, f"/sobjects/Account/{account['Id']}/Contacts")
    assert children["totalSize"] == len(account["Contacts"]["records"])
    assert {r["Id"] for r in children["records"]} == {
        r["Id"] for r in account["Contacts"]["records"]
    }
    assert "LastName" in children["records"][0]
    picked = get(api, f"/sobjects/Account/{account['Id']}/contacts", fields="LastName")
    assert set(picked["records"][0]) == {"attributes", "LastName"}

    contact = children["records"][0]
    parent = get(api, f"/sobjects/Contact/{contact['Id']}/Account", fields="Name")
    assert set(parent) == {"attributes", "Name", "Id"}
    assert parent["Id"] == account["Id"]

    for path in (
        f"/sobjects/Account/{account['Id']}/Nope",
        "/sobjects/Account/001000000000000AAA/Contacts",
    ):
        response = api.get(f"{API}{path}")
        assert response.status_code == 404, path


@pytest.mark.parametrize("path", ["/sobjects/Account/listviews", "/sobjects/Account/quickActions"])
def test_object_resources_are_not_record_ids(api: TestClient, path: str) -> None:
    response = api.patch(f"{API}{path}", json={})
    assert response.status_code == 405
    assert response.headers["allow"] == "HEAD, GET, OPTIONS"


def test_a_layout_shows_the_standard_buttons_the_object_allows(api: TestClient) -> None:
    """What jsforce's layout tests read: buttonLayoutSection is an object of detail buttons."""
    [layout] = get(api, "/sobjects/Account/describe/layouts")["layouts"]
    buttons = layout["buttonLayoutSection"]["detailButtons"]
    assert [(b["name"], b["label"], b["custom"]) for b in buttons] == [
        ("Edit", "Edit", False),
        ("Delete", "Delete", False),
        ("Clone", "Clone", False),
    ]
    assert buttons[0] == {
        "behavior": None,
        "colors": [],
        "content": None,
        "contentSource": None,
        "custom": False,
        "encoding": None,
        "height": None,
        "icons": [],
        "label": "Edit",
        "menubar": None,
        "name": "Edit",
        "overridden": False,
        "resizeable": None,
        "scrollbars": None,
        "showsLocation": None,
        "showsStatus": None,
        "toolbar": None,
        "url": None,
        "width": None,
        "windowPosition": None,
    }
    # The organization is edited, never deleted or created.
    [organization] = get(api, "/sobjects/Organization/describe/layouts")["layouts"]
    assert [b["name"] for b in organization["buttonLayoutSection"]["detailButtons"]] == ["Edit"]


def test_users_alternate_layout_is_a_named_layout(api: TestClient) -> None:
    described = get(api, "/sobjects/User/describe")
    assert described["namedLayoutInfos"] == [
        {
            "name": "UserAlt",
            "urls": {"namedLayout": f"{API}/sobjects/User/describe/namedLayouts/UserAlt"},
        }
    ]
    named = get(api, "/sobjects/User/describe/namedLayouts/UserAlt")
    [layout] = named["layouts"]
    assert isinstance(layout["buttonLayoutSection"], dict)
    assert isinstance(layout["quickActionList"]["quickActionListItems"], list)
    assert named["recordTypeSelectorRequired"] == [False]
    assert get(api, "/sobjects/Account/describe")["namedLayoutInfos"] == []
    missing = api.get(f"{API}/sobjects/User/describe/namedLayouts/NoSuchLayout")
    assert missing.status_code == 404
    assert missing.json()[0]["errorCode"] == "NOT_FOUND"


def test_log_a_call_is_described_defaulted_and_run(api: TestClient) -> None:
    """The global LogACall action as jsforce's quick-action tests use it."""
    [listed] = get(api, "/quickActions")
    root = f"{API}/quickActions/LogACall"
    assert listed == {
        "actionEnumOrId": "LogACall",
        "label": "Log a Call",
        "name": "LogACall",
        "type": "LogACall",
        "urls": {
            "defaultValues": f"{root}/defaultValues",
            "quickAction": root,
            "describe": f"{root}/describe",
            "defaultValuesTemplate": f"{root}/defaultValues/{{ID}}",
        },
    }
    described = get(api, "/quickActions/LogACall/describe")
    assert (described["type"], described["name"], described["targetSobjectType"]) == (
        "LogACall",
        "LogACall",
        "Task",
    )
    assert isinstance(described["layout"]["layoutRows"], list)
    assert get(api, "/quickActions/LogACall") == described
    assert get(api, "/quickActions/LogACall/defaultValues") == {
        "attributes": {"type": "Task"},
        "Subject": "Call",
        "Status": "Completed",
        "TaskSubtype": "Call",
        "Description": None,
        "WhoId": None,
        "WhatId": None,
    }
    account = api.post(f"{API}/sobjects/Account", json={"Name": "Quick Action Co"}).json()["id"]
    for_account = get(api, f"/quickActions/LogACall/defaultValues/{account}")
    assert (for_account["WhatId"], for_account["WhoId"]) == (account, None)
    ran = api.post(
        root,
        json={"contextId": account, "record": {"Subject": "My Task Test", "Description": "Notes"}},
    )
    assert ran.status_code == 200, ran.text
    result = ran.json()
    assert result == {
        "contextId": account,
        "created": True,
        "errors": [],
        "feedItemIds": [],
        "id": result["id"],
        "ids": [result["id"]],
        "success": True,
        "successMessage": "Call logged",
    }
    task = get(api, f"/sobjects/Task/{result['id']}")
    assert (task["Subject"], task["WhatId"], task["Status"], task["TaskSubtype"]) == (
        "My Task Test",
        account,
        "Completed",
        "Call",
    )
    missing = api.get(f"{root.replace('LogACall', 'NoSuchAction')}/describe")
    assert (missing.status_code, missing.json()[0]["errorCode"]) == (404, "NOT_FOUND")
    bad = api.get(f"{root}/defaultValues/not-an-id")
    assert (bad.status_code, bad.json()[0]["errorCode"]) == (400, "MALFORMED_ID")
