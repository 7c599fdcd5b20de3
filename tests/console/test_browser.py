"""The console in a real browser: Playwright driving Debian's Chromium (/usr/bin/chromium, or
LOCALFORCE_CHROMIUM) against the app served over a socket. Every page opens without console
errors; a SOQL run shows its rows; a created record appears in the list; an episode's
timeline and diff show its writes. Screenshots go to build/test-artifacts/console (or
LOCALFORCE_TEST_ARTIFACTS). Skipped without Chromium, except in CI, where it must run."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect, sync_playwright

from app.config import REPO_ROOT
from tests.conftest import ADMIN_HEADERS, API, TEST_ADMIN_KEY

PASSWORD_LOGIN = {"grant_type": "password", "username": "agent@example.com", "password": "x"}
CHROMIUM = os.environ.get("LOCALFORCE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(
    os.environ.get("LOCALFORCE_TEST_ARTIFACTS", REPO_ROOT / "build" / "test-artifacts")
)

if not Path(CHROMIUM).exists() and os.environ.get("CI") != "true":
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


# One back end: what the pages show on each is tested in test_pages.py.
pytestmark = pytest.mark.parametrize("database_factory", ["sqlite"], indirect=True, scope="session")


@pytest.fixture(scope="module")
def base_url(task_base_url: str) -> str:
    """The app served with the module's `tasks` as its task file."""
    return task_base_url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"CI needs Chromium at {CHROMIUM} (apt-get install chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


class Problems:
    """What a page reported: console errors, uncaught exceptions, failed requests."""

    def __init__(self, page: Page) -> None:
        self.seen: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.seen.append(f"uncaught: {error}"))
        page.on("requestfailed", lambda request: self.seen.append(f"failed: {request.url}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in {"error", "warning"}:
            self.seen.append(f"console {message.type}: {message.text}")


@pytest.fixture
def page(browser: Browser, base_url: str) -> Iterator[Page]:
    """A page logged in to the console."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    log_in(opened, base_url)
    yield opened
    context.close()


def log_in(page: Page, base_url: str) -> None:
    """Through the console's login page, as the operator does (a cookie keeps the key)."""
    page.goto(f"{base_url}/console/login")
    page.get_by_label("Key").fill(TEST_ADMIN_KEY)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{base_url}/console")


@pytest.fixture
def problems(page: Page) -> Problems:
    return Problems(page)


def screenshot(page: Page, name: str) -> None:
    directory = ARTIFACTS / "console"
    directory.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=directory / f"{name}.png", full_page=True)


@pytest.fixture(scope="module")
def rest(base_url: str) -> Iterator[httpx.Client]:
    """The REST API on the default sandbox."""
    with httpx.Client(base_url=base_url, timeout=30) as anonymous:
        token = anonymous.post("/services/oauth2/token", data=PASSWORD_LOGIN).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=30) as client:
        yield client


def pages(rest: httpx.Client) -> dict[str, str]:
    account = rest.get(f"{API}/query", params={"q": "SELECT Id FROM Account LIMIT 1"}).json()
    record = account["records"][0]["Id"]
    return {
        "front": "/console",
        "objects": "/console/sandboxes/default/objects",
        "records": "/console/sandboxes/default/objects/Case",
        "record": f"/console/sandboxes/default/objects/Account/{record}",
        "query": "/console/sandboxes/default/query?q=SELECT+Id,+Subject+FROM+Case+LIMIT+5",
        "query-error": "/console/sandboxes/default/query?q=SELECT+Id+FRM+Case",
        "sosl": "/console/sandboxes/default/query?q=FIND+%7BMiller%7D+RETURNING+Account(Name)",
        "sandboxes": "/console/sandboxes",
        "sandbox": "/console/sandboxes/default",
        "tasks": "/console/tasks",
        "coverage": "/console/coverage",
        "not-found": "/console/sandboxes/default/objects/Nothing__c",
    }


def test_every_page_opens_without_console_errors(
    page: Page, problems: Problems, base_url: str, rest: httpx.Client
) -> None:
    for name, path in pages(rest).items():
        response = page.goto(base_url + path)
        assert response is not None
        assert response.status == (404 if name == "not-found" else 200), path
        expect(page.locator("header nav")).to_contain_text("Coverage")
        screenshot(page, f"page-{name}")
    # The one page that is a 404 on purpose is the one the console reports.
    assert problems.seen == [
        "console error: Failed to load resource: the server responded with a status of 404 "
        "(Not Found)"
    ]


def test_a_soql_run_shows_its_rows(
    page: Page, problems: Problems, base_url: str, rest: httpx.Client
) -> None:
    page.goto(f"{base_url}/console/sandboxes/default/query")
    text = "SELECT Id, Subject, Status FROM Case ORDER BY Id LIMIT 12"
    page.get_by_label("SOQL or SOSL").fill(text)
    page.get_by_role("button", name="Run").click()
    rows = page.locator('[data-testid="query-rows"] tbody tr')
    expect(rows).to_have_count(12)
    expected = rest.get(f"{API}/query", params={"q": text}).json()["records"]
    assert rows.nth(0).locator("td").nth(0).inner_text() == expected[0]["Id"]
    assert rows.nth(11).locator("td").nth(1).inner_text() == expected[11]["Subject"]
    expect(page).to_have_url(re.compile(r"/query\?q=SELECT"))  # htmx pushed the URL
    screenshot(page, "soql-run")
    page.get_by_label("SOQL or SOSL").fill("SELECT Id FROM Case WHERE Nope = 1")
    page.get_by_role("button", name="Run").click()
    expect(page.get_by_test_id("query-error")).to_contain_text("INVALID_FIELD")
    screenshot(page, "soql-error")
    assert problems.seen == []


def test_a_created_record_appears_in_the_list(
    page: Page, problems: Problems, base_url: str, rest: httpx.Client
) -> None:
    made = rest.post(
        f"{API}/sobjects/Contact", json={"FirstName": "Wilhelmina", "LastName": "Browserfield"}
    )
    assert made.status_code == 201, made.text
    record = made.json()["id"]
    page.goto(f"{base_url}/console/sandboxes/default/objects/Contact")
    page.get_by_label("Search Contacts").fill("Browserfield")  # htmx searches as one types
    rows = page.locator('[data-testid="records"] tbody tr')
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Wilhelmina Browserfield")
    screenshot(page, "created-record-listed")
    rows.first.get_by_role("link", name=record).click()
    expect(page.locator("h1")).to_contain_text("Wilhelmina Browserfield")
    screenshot(page, "created-record")
    assert problems.seen == []


def test_an_episodes_timeline_and_diff_show_its_writes(
    page: Page, problems: Problems, base_url: str, tasks: list[dict[str, Any]]
) -> None:
    task = next(task for task in tasks if task["task"] == "case_routing")
    with httpx.Client(base_url=base_url, headers=ADMIN_HEADERS, timeout=30) as control:
        made = control.post("/__localforce/episodes", json={"task": task, "id": "browser-ep"})
        assert made.status_code == 201, made.text
        headers = {"Authorization": f"Bearer {made.json()['access_token']}"}
        agent = httpx.Client(base_url=base_url, headers=headers, timeout=30)
        case = agent.get(f"{API}/query", params={"q": "SELECT Id FROM Case LIMIT 1"}).json()
        case_id = case["records"][0]["Id"]
        old = agent.get(f"{API}/query", params={"q": "SELECT Id FROM EmailMessage LIMIT 1"}).json()
        old_email = old["records"][0]["Id"]
        assert (
            agent.patch(
                f"{API}/sobjects/Case/{case_id}", json={"Subject": "Routed by the agent"}
            ).status_code
            == 204
        )
        created = agent.post(f"{API}/sobjects/Task", json={"Subject": "Call back"}).json()["id"]
        assert agent.delete(f"{API}/sobjects/EmailMessage/{old_email}").status_code == 204
    page.goto(f"{base_url}/console/sandboxes/browser-ep")
    calls = page.locator('[data-testid="timeline"] li')
    expect(calls).to_have_count(5)
    assert [calls.nth(i).locator(".method").inner_text() for i in range(5)] == [
        "GET",
        "GET",
        "PATCH",
        "POST",
        "DELETE",
    ]
    expect(calls.nth(0)).to_contain_text("SELECT Id FROM Case LIMIT 1")
    diff = page.get_by_test_id("diff")
    expect(diff.locator(".updated")).to_contain_text("Routed by the agent")
    expect(diff.locator(".updated")).to_contain_text(case_id)
    expect(diff.locator(".created")).to_contain_text(created)
    expect(diff.locator(".deleted")).to_contain_text(old_email)
    screenshot(page, "episode")
    # Reset while the episode is open (once answered, its state is final: 409).
    page.get_by_role("button", name="Reset").click()
    expect(page.get_by_role("status")).to_contain_text(re.compile(r"reset: \d+ writes undone"))
    expect(page.locator('[data-testid="timeline"] li')).to_have_count(0)
    for heading in ("Created (0)", "Updated (0)", "Deleted (0)"):
        expect(page.get_by_test_id("diff")).to_contain_text(heading)
    screenshot(page, "episode-reset")
    with httpx.Client(base_url=base_url, headers=ADMIN_HEADERS, timeout=30) as control:
        graded = control.post(
            "/__localforce/episodes/browser-ep/answer", json={"response": task["answer"]}
        )
    assert graded.json()["reward"] == 1.0
    page.reload()
    expect(page.get_by_test_id("reward")).to_have_text("1.000")
    page.goto(f"{base_url}/console/tasks")
    expect(page.get_by_test_id("episodes")).to_contain_text("browser-ep")
    screenshot(page, "tasks")
    assert problems.seen == []
