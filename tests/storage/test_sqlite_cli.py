"""A SQLite database localforce made is a plain SQLite file: the sqlite3 shell checks, vacuums,
reindexes, dumps and edits it (no index or trigger calls a function only localforce
registers), and localforce serving the edited file finds the rows the shell wrote by their
keys (app.storage.text_keys)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import make_url

from app.main import create_app
from tests.conftest import ADMIN_HEADERS, API, login, make_settings
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import as_token, create, state_of

SQLITE3 = shutil.which("sqlite3")
pytestmark = pytest.mark.skipif(SQLITE3 is None, reason="the sqlite3 shell is not installed")

PRODUCTS = f"{API}/sobjects/Product2"
# One row per keyed table, as a user of the shell would insert it: the fields only.
SHELL_ROWS = {
    "sobj_user": ("005000000009901AAA", "Username", "Shell.User@Example.com"),
    "sobj_product2": ("01t000000009901AAA", "External_ID__c", "Shell-Ext-ÄB"),
    "sobj_knowledge__kav": ("ka0000000009901AAA", "UrlName", "shell-article"),
}


def shell(path: Path, script: str) -> str:
    """Run `script` in the sqlite3 shell on `path`, stopping at the first error; its output."""
    assert SQLITE3 is not None
    done = subprocess.run(
        [SQLITE3, "-bail", str(path)], input=script, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def indexes(path: Path) -> list[tuple[str, str]]:
    """Every index of the file, by name, with the table it is on."""
    rows = shell(path, "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' ORDER BY 1;")
    return [(name, table) for name, table in (line.split("|") for line in rows.splitlines())]


def check_with_the_shell(path: Path, tmp_path: Path) -> None:
    """What a user of the shell does with the file: check, vacuum, reindex, back up and
    restore, insert into and delete from every keyed table."""
    assert shell(path, "PRAGMA integrity_check;") == "ok\n"
    shell(path, "VACUUM; REINDEX;")
    assert shell(path, "PRAGMA integrity_check;") == "ok\n"
    restored = tmp_path / f"restored-{path.name}"
    shell(restored, shell(path, ".dump"))
    assert indexes(restored) == indexes(path)
    for name in SHELL_ROWS:
        assert (f"ix_{name}_{SHELL_ROWS[name][1]}_key", name) in indexes(path)
    for table, (record_id, field, value) in SHELL_ROWS.items():
        shell(
            path,
            f"INSERT INTO {table} (Id, {field}, IsDeleted) VALUES ('{record_id}', '{value}', 0);"
            f"DELETE FROM {table} WHERE Id = '{record_id}';"
            f"INSERT INTO {table} (Id, {field}, IsDeleted) VALUES ('{record_id}', '{value}', 0);",
        )
        assert shell(path, f"SELECT count(*) FROM {table} WHERE Id = '{record_id}';") == "1\n"


def upsert_finds_the_shell_row(sf: TestClient) -> None:
    """Upsert by the shell row's external id, in another case, updates that row."""
    record_id, _, value = SHELL_ROWS["sobj_product2"]
    response = sf.patch(f"{PRODUCTS}/External_ID__c/{value.lower()}", json={"Name": "Found"})
    assert response.status_code == 200, response.text
    assert response.json() == {"id": record_id, "success": True, "errors": [], "created": False}
    found = sf.get(
        f"{API}/query", params={"q": f"SELECT Name FROM Product2 WHERE Id = '{record_id}'"}
    )
    assert [row["Name"] for row in found.json()["records"]] == ["Found"]


@pytest.fixture
def sqlite_only(backend: str) -> None:
    if backend != "sqlite":
        pytest.skip("the sqlite3 shell reads SQLite files")


def serve(url: str, data_dir: Path) -> Iterator[TestClient]:
    app = create_app(make_settings(url, data_dir))
    with TestClient(app, base_url="https://testserver", headers=ADMIN_HEADERS) as client:
        yield client


def test_the_shell_checks_and_edits_a_seeded_file_and_localforce_finds_its_rows(
    sqlite_only: None, database_factory: DatabaseFactory, seeded_template: str, tmp_path: Path
) -> None:
    url = database_factory.new_url(template=seeded_template)
    path = Path(make_url(url).database or "")
    check_with_the_shell(path, tmp_path)
    # A row the shell edits keeps a stale key: an existing product's external id changes.
    edited = shell(path, "SELECT max(Id) FROM sobj_product2 WHERE IsDeleted = 0;").strip()
    shell(path, f"UPDATE sobj_product2 SET External_ID__c = 'Shell-Edited' WHERE Id = '{edited}';")
    for client in serve(url, tmp_path):
        sf = as_token(client, login(client))
        upsert_finds_the_shell_row(sf)
        response = sf.patch(f"{PRODUCTS}/External_ID__c/SHELL-EDITED", json={"Name": "Edited"})
        assert response.status_code == 200, response.text
        assert response.json()["id"] == edited
        # Login by the shell user's Username, in another case.
        token = client.post(
            "/services/oauth2/token",
            data={"grant_type": "password", "username": "shell.user@example.COM", "password": "x"},
        )
        assert token.status_code == 200, token.text
        assert token.json()["id"].endswith(SHELL_ROWS["sobj_user"][0])
    # What localforce wrote since is as plain as what it seeded.
    assert shell(path, "PRAGMA integrity_check;") == "ok\n"


def test_the_shell_checks_and_edits_a_sandbox_file_and_its_template(
    sqlite_only: None,
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    tmp_path: Path,
) -> None:
    url = database_factory.new_url(template=sandbox_ready_template)
    data_dir = tmp_path / "data"
    database_factory.copy_sandbox_templates(sandbox_ready_template, url, data_dir)
    for client in serve(url, data_dir):
        token = create(client, id="shell-file")["access_token"]
        sf = as_token(client, token)
        for sobject, field in (
            ("User", "Title"),
            ("Product2", "Name"),
            ("Knowledge__kav", "Title"),
        ):
            # The first write copies each keyed table into the sandbox's file.
            query = f"SELECT Id FROM {sobject} ORDER BY Id LIMIT 1"
            record_id = sf.get(f"{API}/query", params={"q": query}).json()["records"][0]["Id"]
            written = sf.patch(f"{API}/sobjects/{sobject}/{record_id}", json={field: "Copied"})
            assert written.status_code == 204, written.text
        sandboxes = state_of(client).sandboxes
        sandbox = sandboxes.get("shell-file")
        # A sandbox's storage is named relative to the data directory: its copies say where.
        clone, template = (
            Path(sandboxes.copies.storage_of(name)) for name in (sandbox.url, sandbox.template)
        )
    check_with_the_shell(clone, tmp_path)
    assert shell(template, "PRAGMA integrity_check;") == "ok\n"
    restored = tmp_path / "template-restored.db"
    shell(restored, shell(template, ".dump"))
    assert indexes(restored) == indexes(template)
    # Served again: the sandbox's file is opened, and the shell's row found by its key.
    for client in serve(url, data_dir):
        upsert_finds_the_shell_row(as_token(client, token))
