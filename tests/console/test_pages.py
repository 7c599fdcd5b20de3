"""The console's pages over the app on both back ends: what each shows is what the API gives
for the same sandbox (records, query rows, errors, the call log and diff), forms act as the
control plane does, and bad input is a Salesforce error page, never a 500."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app.tasks.grading import grade
from tests.conftest import ADMIN_HEADERS, API, login
from tests.console.html_text import links, table_rows
from tests.databases import DatabaseFactory
from tests.servers import task_file_app

DEFAULT = "/console/sandboxes/default"
CONTROL = "/__localforce"


@pytest.fixture(scope="module")
def console(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tasks: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[TestClient]:
    directory = tmp_path_factory.mktemp("console")
    app = task_file_app(database_factory, sandbox_ready_template, tasks, directory)
    with TestClient(app, base_url="https://testserver", headers=ADMIN_HEADERS) as client:
        yield client


@pytest.fixture(scope="module")
def sf(console: TestClient) -> TestClient:
    """The REST API on the default sandbox, to compare pages with."""
    headers = {"Authorization": f"Bearer {login(console)}"}
    return TestClient(console.app, base_url=str(console.base_url), headers=headers)


def page(console: TestClient, path: str, status: int = 200) -> str:
    response = console.get(path)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    return response.text


def soql(sf: TestClient, text: str, **headers: str) -> dict[str, Any]:
    response = sf.get(f"{API}/query", params={"q": text}, headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def ids(rows: list[list[str]]) -> list[str]:
    return [row[0] for row in rows]


def pre_json(html: str, testid: str) -> Any:
    """The JSON in the <pre> of the element marked `testid`."""
    found = re.search(rf'data-testid="{testid}"[^>]*>.*?<pre>(.*?)</pre>', html, re.S)
    if found is None:
        found = re.search(rf'<pre[^>]*data-testid="{testid}"[^>]*>(.*?)</pre>', html, re.S)
    assert found is not None, html
    text = found.group(1).replace("&#34;", '"').replace("&quot;", '"').replace("&#39;", "'")
    return json.loads(text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


def test_the_front_page_leads_to_every_part(console: TestClient) -> None:
    html = page(console, "/console")
    for target in (
        f"{DEFAULT}/objects",
        f"{DEFAULT}/query",
        "/console/sandboxes",
        "/console/tasks",
        "/console/coverage",
    ):
        assert target in links(html)
    htmx = console.get("/console/static/htmx-2.0.11.min.js")
    assert htmx.status_code == 200
    assert "javascript" in htmx.headers["content-type"]


def test_the_objects_page_lists_every_object_of_the_org(console: TestClient) -> None:
    html = page(console, f"{DEFAULT}/objects")
    described = console.get(
        f"{API}/sobjects", headers={"Authorization": f"Bearer {login(console)}"}
    )
    names = [sobject["name"] for sobject in described.json()["sobjects"]]
    listed = [link.rsplit("/", 1)[-1] for link in links(html) if "/objects/" in link]
    assert listed == sorted(names, key=str.lower)


def test_a_record_list_is_the_newest_records_a_page_at_a_time(
    console: TestClient, sf: TestClient
) -> None:
    first = table_rows(page(console, f"{DEFAULT}/objects/Case"), "records")
    second = table_rows(page(console, f"{DEFAULT}/objects/Case?page=2"), "records")
    order = "ORDER BY CreatedDate DESC, Id DESC LIMIT 25"
    assert ids(first) == [r["Id"] for r in soql(sf, f"SELECT Id FROM Case {order}")["records"]]
    assert ids(second) == [
        r["Id"] for r in soql(sf, f"SELECT Id FROM Case {order} OFFSET 25")["records"]
    ]
    total = soql(sf, "SELECT COUNT() FROM Case")["totalSize"]
    assert f"{total} records; page 1 of {-(-total // 25)}" in page(
        console, f"{DEFAULT}/objects/Case"
    )


def test_the_search_box_finds_records_by_name_as_like_does(
    console: TestClient, sf: TestClient
) -> None:
    html = page(console, f"{DEFAULT}/objects/Account?q=MILLER")
    rows = table_rows(html, "records")
    expected = soql(sf, "SELECT Id FROM Account WHERE Name LIKE '%miller%'")
    assert expected["totalSize"] > 0
    assert sorted(ids(rows)) == sorted(r["Id"] for r in expected["records"])
    assert all("miller" in row[1].lower() for row in rows)
    # The term is text, not SOQL: quotes, wildcards and backslashes match themselves.
    for term in ("O'Brien", "100%", "a_b", "\\", "') OR Name LIKE ('%"):
        hostile = page(console, f"{DEFAULT}/objects/Account?q={quote(term)}")
        assert table_rows(hostile, "records") == []
        assert "0 records whose Name matches" in hostile


def test_a_record_page_shows_its_fields_parents_and_related_lists(
    console: TestClient, sf: TestClient
) -> None:
    contact = soql(sf, "SELECT Id, Email, AccountId FROM Contact WHERE AccountId != null LIMIT 1")
    record = contact["records"][0]
    html = page(console, f"{DEFAULT}/objects/Contact/{record['Id']}")
    fields = {row[1]: row[2] for row in table_rows(html, "fields")}
    assert fields["Id"] == record["Id"]
    assert fields["Email"] == record["Email"]
    assert f"{DEFAULT}/objects/Account/{record['AccountId']}" in links(html)
    parent = page(console, f"{DEFAULT}/objects/Account/{record['AccountId']}")
    assert 'data-relationship="Contacts"' in parent
    assert f"{DEFAULT}/objects/Contact/{record['Id']}" in links(parent)


@pytest.mark.parametrize(
    ("path", "code", "message"),
    [
        (
            f"{DEFAULT}/objects/Account/not-an-id",
            "NOT_FOUND",
            "Provided external ID field does not exist or is not accessible: not-an-id",
        ),
        (
            f"{DEFAULT}/objects/Account/001000000000000AAA",
            "NOT_FOUND",
            "The requested resource does not exist",
        ),
        (
            f"{DEFAULT}/objects/Widget__c",
            "NOT_FOUND",
            "The requested resource does not exist: no sObject named Widget__c",
        ),
        ("/console/sandboxes/nope/objects", "NOT_FOUND", "No sandbox has the id nope"),
        ("/console/sandboxes/nope", "NOT_FOUND", "No sandbox with id nope"),
    ],
)
def test_what_does_not_exist_is_a_404_page_with_the_apis_error(
    console: TestClient, path: str, code: str, message: str
) -> None:
    html = page(console, path, status=404)
    assert pre_json(html, "error-body") == [{"message": message, "errorCode": code}]


def test_the_query_runner_shows_the_rows_the_api_returns(
    console: TestClient, sf: TestClient
) -> None:
    text = (
        "SELECT Id, Name, Account.Name FROM Contact WHERE AccountId != null ORDER BY Name LIMIT 7"
    )
    html = page(console, f"{DEFAULT}/query?q={quote(text)}")
    rows = table_rows(html, "query-rows")
    expected = soql(sf, text)["records"]
    assert rows == [[r["Id"], r["Name"], r["Account"]["Name"]] for r in expected]
    assert "totalSize 7, done true; 7 rows shown" in html
    assert f"{DEFAULT}/objects/Contact/{expected[0]['Id']}" in links(html)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT Id FRM Contact",
        "SELECT Nope__c FROM Contact",
        "SELECT Id FROM Contact WHERE Name = 'a' AND Name = 'b' OR Name = 'c'",
        "FIND {} RETURNING Account",
    ],
)
def test_a_query_error_is_shown_as_the_api_gives_it(
    console: TestClient, sf: TestClient, text: str
) -> None:
    html = page(console, f"{DEFAULT}/query?q={quote(text)}")
    resource = "search" if text.startswith("FIND") else "query"
    answer = sf.get(f"{API}/{resource}", params={"q": text})
    assert answer.status_code == 400
    assert pre_json(html, "query-error") == answer.json()
    assert f"{answer.status_code} {answer.json()[0]['errorCode']}" in html


def test_the_runner_follows_next_records_url_as_queryMore_does(
    console: TestClient, sf: TestClient
) -> None:
    text = "SELECT Id FROM Case ORDER BY Id"
    html = page(console, f"{DEFAULT}/query?q={quote(text)}")
    first = ids(table_rows(html, "query-rows"))
    api = soql(sf, text, **{"Sforce-Query-Options": "batchSize=200"})
    assert first == [r["Id"] for r in api["records"]]
    following = [link for link in links(html) if "locator=" in link]
    assert len(following) == 1
    second_html = page(console, following[0].replace("&amp;", "&"))
    more = sf.get(api["nextRecordsUrl"]).json()
    assert ids(table_rows(second_html, "query-rows")) == [r["Id"] for r in more["records"]]


def test_the_runner_runs_sosl(console: TestClient, sf: TestClient) -> None:
    text = "FIND {Miller} IN NAME FIELDS RETURNING Account(Id, Name), Contact(Id, Name)"
    html = page(console, f"{DEFAULT}/query?q={quote(text)}")
    expected = sf.get(f"{API}/search", params={"q": text}).json()["searchRecords"]
    assert expected
    rows = table_rows(html, "query-rows")
    assert rows == [[r["attributes"]["type"], r["Id"], r["Name"]] for r in expected]


def test_a_sandboxs_page_shows_its_calls_as_a_timeline_and_its_diff(console: TestClient) -> None:
    made = console.post(f"{CONTROL}/sandboxes", json={"id": "console-diff"}).json()
    rest = TestClient(
        console.app,
        base_url=str(console.base_url),
        headers={"Authorization": f"Bearer {made['access_token']}"},
    )
    created = rest.post(f"{API}/sobjects/Contact", json={"LastName": "Timeline"}).json()["id"]
    account = rest.get(f"{API}/query", params={"q": "SELECT Id, Name FROM Account LIMIT 1"})
    before = account.json()["records"][0]
    patched = rest.patch(f"{API}/sobjects/Account/{before['Id']}", json={"Name": "Renamed Co"})
    assert patched.status_code == 204
    html = page(console, "/console/sandboxes/console-diff")
    calls = re.findall(
        r'<span class="method">(\w+)</span>\s*<span class="path">([^<]+)</span>\s*'
        r'<span class="status">(\d+)</span>',
        html,
    )
    assert calls == [
        ("POST", f"{API}/sobjects/Contact", "201"),
        ("GET", f"{API}/query", "200"),
        ("PATCH", f"{API}/sobjects/Account/{before['Id']}", "204"),
    ]
    assert "SELECT Id, Name FROM Account LIMIT 1" in html
    # A timeline: each call at when it ended, in seconds after the first.
    offsets = re.findall(r'<time datetime="[^"]+Z" title="[^"]+">\+([\d.]+) s</time>', html)
    assert len(offsets) == 3
    assert offsets[0] == "0.000"
    assert offsets == sorted(offsets, key=float)
    assert f"/console/sandboxes/console-diff/objects/Contact/{created}" in links(html)
    assert re.search(
        rf'<th scope="row">Name</th><td class="before">{re.escape(before["Name"])}</td>'
        r'<td class="after">Renamed Co</td>',
        html,
    )
    # The console's own reads are not API calls: the log holds the three calls above.
    page(console, "/console/sandboxes/console-diff/objects/Account")
    log = console.get(f"{CONTROL}/sandboxes/console-diff/log").json()["calls"]
    assert [call["method"] for call in log] == ["POST", "GET", "PATCH"]


def test_the_forms_reset_snapshot_restore_and_delete_a_sandbox(console: TestClient) -> None:
    created = console.post(
        "/console/sandboxes", data={"id": "console-forms"}, follow_redirects=False
    )
    assert created.status_code == 303
    assert created.headers["location"] == "/console/sandboxes/console-forms?done=created"
    assert console.get(f"{CONTROL}/sandboxes/console-forms").status_code == 200
    saved = console.post(
        "/console/sandboxes/console-forms/snapshots", data={"name": "s1"}, follow_redirects=False
    )
    assert (
        saved.headers["location"] == "/console/sandboxes/console-forms?done=snapshot%20s1%20saved"
    )
    assert console.get(f"{CONTROL}/sandboxes/console-forms").json()["snapshots"] == ["s1"]
    restored = console.post("/console/sandboxes/console-forms/snapshots/s1/restore")
    assert "Done: snapshot s1 restored" in restored.text
    reset = console.post("/console/sandboxes/console-forms/reset")
    assert reset.status_code == 200
    assert "Done: reset: 0 writes undone" in reset.text
    deleted = console.post("/console/sandboxes/console-forms/delete", follow_redirects=False)
    assert deleted.headers["location"] == "/console/sandboxes?done=deleted%20console-forms"
    assert console.get(f"{CONTROL}/sandboxes/console-forms").status_code == 404


@pytest.mark.parametrize(
    ("path", "form", "status", "code"),
    [
        ("/console/sandboxes", {"id": "bad id!"}, 400, "INVALID_INPUT"),
        ("/console/sandboxes", {"org": "nowhere"}, 400, "INVALID_INPUT"),
        ("/console/sandboxes/default/snapshots", {"name": "../x"}, 400, "INVALID_INPUT"),
        ("/console/sandboxes/default/snapshots/never/restore", {}, 404, "NOT_FOUND"),
        ("/console/sandboxes/default/delete", {}, 400, "INVALID_OPERATION"),
    ],
)
def test_a_form_with_bad_input_is_an_error_page(
    console: TestClient, path: str, form: dict[str, str], status: int, code: str
) -> None:
    response = console.post(path, data=form)
    assert response.status_code == status, response.text
    assert pre_json(response.text, "error-body")[0]["errorCode"] == code


def test_an_answered_episodes_reward_is_a_task_result(
    console: TestClient, tasks: list[dict[str, Any]]
) -> None:
    task = next(task for task in tasks if task["task"] == "case_routing")
    made = console.post(f"{CONTROL}/episodes", json={"task": task, "id": "console-episode"})
    assert made.status_code == 201, made.text
    graded = console.post(
        f"{CONTROL}/episodes/console-episode/answer", json={"response": task["answer"]}
    )
    assert graded.json()["reward"] == 1.0
    html = page(console, "/console/tasks")
    episodes = table_rows(html, "episodes")
    row = next(row for row in episodes if row[0] == "console-episode")
    assert row[1:3] == [str(task["idx"]), "case_routing"]
    assert row[5] == "1.000"
    scores = {row[0]: row for row in table_rows(html, "scores")}
    assert scores["case_routing"][1:] == ["exact_match", "1", "1", "1.000"]
    assert scores.pop("all")[-1] == "1.000"  # the mean over every answered episode
    assert len(scores) == len({task["task"] for task in tasks})
    sandbox = page(console, "/console/sandboxes/console-episode")
    assert '<strong data-testid="reward">1.000</strong>' in sandbox


def test_bad_query_parameters_are_the_apis_errors(console: TestClient) -> None:
    response = console.get(f"{DEFAULT}/objects/Account?page=0")
    assert response.status_code == 400
    assert response.json()[0]["errorCode"] == "INVALID_INPUT"
    long = console.get(f"{DEFAULT}/objects/Account", params={"q": "x" * 201})
    assert long.status_code == 400


@pytest.fixture(scope="module")
def locked(
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[TestClient]:
    directory: Path = tmp_path_factory.mktemp("locked")
    app = task_file_app(database_factory, sandbox_ready_template, [], directory, admin_key="k3y")
    with TestClient(app, base_url="https://testserver") as client:
        yield client


def test_with_an_admin_key_the_console_asks_for_it(locked: TestClient) -> None:
    sent = locked.get(f"{DEFAULT}/query?q=x", follow_redirects=False)
    assert sent.status_code == 303
    assert sent.headers["location"] == (
        "/console/login?next=%2Fconsole%2Fsandboxes%2Fdefault%2Fquery%3Fq%3Dx"
    )
    assert locked.post("/console/sandboxes", data={}, follow_redirects=False).status_code == 303
    wrong = locked.post("/console/login", data={"key": "nope", "next": "/console/tasks"})
    assert wrong.status_code == 401
    assert "That is not the admin key." in wrong.text
    right = locked.post(
        "/console/login", data={"key": "k3y", "next": "/console/tasks"}, follow_redirects=False
    )
    assert right.status_code == 303
    assert right.headers["location"] == "/console/tasks"
    assert locked.get("/console/tasks").status_code == 200  # the cookie carries the key
    locked.cookies.clear()
    assert locked.get("/console", follow_redirects=False).status_code == 303
    by_header = locked.get("/console", headers={"X-Localforce-Admin-Key": "k3y"})
    assert by_header.status_code == 200
    away = locked.post(
        "/console/login",
        data={"key": "k3y", "next": "https://elsewhere.example"},
        follow_redirects=False,
    )
    assert away.headers["location"] == "/console"


def test_the_consoles_locators_never_close_a_users(console: TestClient, sf: TestClient) -> None:
    """A user holds ten query locators, the oldest closed by an eleventh: the console's are
    its own, so looking at query results never closes an agent's."""
    opened = soql(
        sf, "SELECT Id FROM Case ORDER BY Id", **{"Sforce-Query-Options": "batchSize=200"}
    )
    for number in range(12):
        text = f"SELECT Id FROM Case WHERE CaseNumber != '{number}' ORDER BY Id"
        assert "Next batch" in page(console, f"{DEFAULT}/query?q={quote(text)}")
    more = sf.get(opened["nextRecordsUrl"])
    assert more.status_code == 200, more.text
    assert len(more.json()["records"]) == 200


def test_a_results_file_is_graded_per_task_type(
    console: TestClient, tasks: list[dict[str, Any]]
) -> None:
    results = [
        {"idx": task["idx"], "response": str(task["answer"])}
        for task in tasks
        if task["reward_metric"] != "diff_match"
    ]
    upload = {"results": ("results.json", json.dumps(results), "application/json")}
    response = console.post("/console/tasks/grade", files=upload)
    assert response.status_code == 200, response.text
    expected = grade(tasks, results)
    shown = table_rows(response.text, "graded")
    assert shown[:-1] == [
        [row.task, row.metric, str(row.tasks), str(row.answered), f"{row.score:.3f}"]
        for row in expected.by_type
    ]
    assert shown[-1] == ["all", "", str(len(tasks)), "", f"{expected.overall:.3f}"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b"{not json",
            "The results file is not JSON: Expecting property name enclosed in "
            "double quotes: line 1 column 2 (char 1)",
        ),
        (b'{"idx": 1}', "The results file must hold a JSON list of objects"),
        (
            b'[{"idx": 99999, "response": "x"}]',
            "Results name tasks the task file does not hold: [99999]",
        ),
        (
            b'[{"idx": "1"}]',
            'Each result must be an object {"idx": <task idx>, "response": <text>}',
        ),
        (
            b"\xff\xfe",
            "The results file is not JSON: 'utf-8' codec can't decode byte 0xff in "
            "position 0: invalid start byte",
        ),
    ],
)
def test_a_bad_results_file_is_an_error_page(
    console: TestClient, body: bytes, message: str
) -> None:
    response = console.post("/console/tasks/grade", files={"results": ("r.json", body)})
    assert response.status_code == 400
    assert pre_json(response.text, "error-body") == [
        {"message": message, "errorCode": "INVALID_INPUT"}
    ]
