"""`localforce import`: a dump in the CRMArena layout loads with every id kept and every value
in its field's type, SOQL and SOSL serve it in Salesforce's formats, sandboxes clone it, and a
broken dump fails with a message naming the table, column or row while the org stays as it was.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, select
from typer.testing import CliRunner

from app import cli as cli_module
from app.api.state import AppState
from app.cli import cli
from app.config import REPO_ROOT
from app.metadata.registry import SchemaRegistry
from app.seeding import loading
from app.seeding.bootstrap import ImportedOrgInTheWay, ensure_database
from app.seeding.download import verify_sha256
from app.seeding.dump_reader import DumpError
from app.seeding.importer import DumpRejected, ImportResult, import_dump, read_dump
from app.seeding.loading import ORG_INFO
from app.state import build_state
from app.storage.database import migrate_platform
from app.storage.ids import POD, to_18
from app.storage.platform import IMPORTED_SOURCE_PREFIX
from app.storage.records import insert_rows
from tests.conftest import API, login, make_settings, open_client
from tests.crmarena import STANDARD_COUNTS
from tests.databases import DatabaseFactory
from tests.seeding.dumps import (
    ACCOUNT_1,
    ACCOUNT_2,
    ARTICLE_1,
    ARTICLE_2,
    CASE_1,
    CASE_2,
    CONTACT_2,
    EMAIL_1,
    EMAIL_2,
    LEAD_1,
    OPPORTUNITY_1,
    ORDER_1,
    ORDER_ITEM_1,
    ORDER_ITEM_2,
    PRODUCT_1,
    PRODUCT_2,
    STANDARD_BOOK,
    SUMMER_BOOK,
    USER_1,
    USER_2,
    Dump,
    b2b_dump,
    b2c_dump,
    original_dump,
    write_dump,
)
from tests.seeding.test_pipeline import REGISTRY


def dump_file(tmp_path: Path, tables: Dump | None = None, name: str = "crmarena_data.db") -> Path:
    return write_dump(tmp_path / name, original_dump() if tables is None else tables)


def run_import(
    url: str, workdir: Path, path: Path, org: str = "original", **options: Any
) -> ImportResult:
    settings = make_settings(url, workdir, org=org)
    state = build_state(settings)
    try:
        migrate_platform(state.engine)
        return import_dump(state.engine, state.registry, state.tables, path, org=org, **options)
    finally:
        state.sandboxes.close()
        state.engine.dispose()


def logged_in(client: TestClient) -> TestClient:
    return TestClient(
        client.app,
        base_url=str(client.base_url),
        headers={"Authorization": f"Bearer {login(client)}"},
    )


def query(sf: TestClient, soql: str) -> list[dict[str, Any]]:
    response = sf.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    records = response.json()["records"]
    for record in records:
        record.pop("attributes")
    return list(records)


def state_of(client: TestClient) -> AppState:
    state: AppState = client.app.state.localforce  # type: ignore[attr-defined]
    return state


# -- reading and converting (no database) -------------------------------------------------


def test_reading_converts_every_stored_value_to_its_field_type(tmp_path: Path) -> None:
    contents = read_dump(dump_file(tmp_path), REGISTRY, org="original")
    rows = {name: {row["Id"]: row for row in batch} for name, batch in contents.rows.items()}
    assert rows["User"][USER_1]["Phone"] == "5551234567"  # REAL 5551234567.0 in the dump
    assert rows["User"][USER_2]["Phone"] is None
    assert rows["User"][USER_1]["Name"] == "Ava Stone"
    assert rows["Account"][ACCOUNT_1]["Name"] == "Cleo Park"
    assert rows["Account"][ACCOUNT_1]["IsPersonAccount"] is True
    assert rows["Account"][ACCOUNT_1]["OwnerId"] == USER_1  # the first user owns the unowned
    assert rows["Product2"][PRODUCT_1]["IsActive"] is True
    assert rows["Product2"][PRODUCT_2]["IsActive"] is False
    item = rows["OrderItem"][ORDER_ITEM_1]
    assert (item["Quantity"], item["UnitPrice"], item["TotalPrice"]) == (1.0, 22.5, 22.5)
    assert rows["OrderItem"][ORDER_ITEM_2]["TotalPrice"] == 178.0
    assert item["PricebookEntryId"] is not None  # the dump spells the column PriceBookEntryId
    case = rows["Case"][CASE_1]
    assert case["CreatedDate"] == datetime(2020, 12, 22, 11, 0)
    assert case["ClosedDate"] == datetime(2020, 12, 22, 13, 30)
    assert case["IsClosed"] is True and rows["Case"][CASE_2]["IsClosed"] is False
    assert case["CaseNumber"] == "00000001"
    assert rows["Case"][CASE_2]["Description"] is None  # "" is null, as in Salesforce
    assert rows["Order"][ORDER_1]["EffectiveDate"] == date(2020, 12, 20)
    assert rows["Pricebook2"][STANDARD_BOOK]["IsStandard"] is True
    assert rows["Pricebook2"][SUMMER_BOOK]["IsStandard"] is False
    assert rows["Pricebook2"][SUMMER_BOOK]["ValidTo"] == datetime(2020, 8, 31, 23, 59, 59)
    assert rows["EmailMessage"][EMAIL_1]["ToIds"] == [USER_1]
    assert rows["EmailMessage"][EMAIL_1]["ToAddress"] == "ava@shoes.example"
    assert rows["EmailMessage"][EMAIL_2]["ToAddress"] == "dev@mail.example; ava@shoes.example"
    article = rows["Knowledge__kav"][ARTICLE_1]
    assert (article["PublishStatus"], article["Language"]) == ("Online", "en_US")
    assert article["FAQ_Answer__c"] == "Returns within 30 days &amp; unworn."


def test_the_report_counts_loaded_converted_and_filled_values(tmp_path: Path) -> None:
    contents = read_dump(dump_file(tmp_path), REGISTRY, org="original")
    reports = {report.sobject: report for report in contents.reports}
    dumped = {name: len(table.rows) for name, table in original_dump().items()}
    # Objects the dump lacks load empty, but for the org's own Organization and profiles.
    absent = {sobject.name: 0 for sobject in REGISTRY} | STANDARD_COUNTS
    assert {name: report.loaded for name, report in reports.items()} == absent | dumped
    assert reports["User"].converted["Phone"] == 1  # the other phone is null
    assert reports["OrderItem"].converted["Quantity"] == 2
    assert reports["Product2"].converted["IsActive"] == 2
    assert reports["Case"].converted["CreatedDate"] == 2
    assert reports["Knowledge__kav"].filled["PublishStatus"] == 2
    assert reports["EmailMessage"].filled["ToAddress"] == 2
    assert all(not report.rejections and not report.warnings for report in reports.values())
    # New ids come from localforce's own pod: they cannot meet the live org's ids.
    assert contents.sequences["Case"] == 2 and CASE_1[3:5] != POD


def test_new_id_sequences_start_after_imported_ids_of_our_own_pod(tmp_path: Path) -> None:
    tables = original_dump()
    tables["Issue__c"].set(1, "Id", "a1MLf000000000Z")  # 15 characters, record number 35
    contents = read_dump(dump_file(tmp_path, tables), REGISTRY, org="original")
    assert to_18("a1MLf000000000Z") in {row["Id"] for row in contents.rows["Issue__c"]}
    assert contents.sequences["Issue__c"] == 35


def test_a_harmless_extra_column_is_skipped_and_reported(tmp_path: Path) -> None:
    tables = original_dump()
    tables["Issue__c"].add_column("index", "INTEGER", [0, 1])
    contents = read_dump(dump_file(tmp_path, tables), REGISTRY, org="original")
    report = next(r for r in contents.reports if r.sobject == "Issue__c")
    assert report.ignored_columns == ["index"] and report.loaded == 2


def test_ids_outside_the_objects_key_prefix_are_kept_with_a_warning(tmp_path: Path) -> None:
    tables = original_dump()
    tables["Issue__c"].set(0, "Id", "a03Ws0000001xYzIAI")
    contents = read_dump(dump_file(tmp_path, tables), REGISTRY, org="original")
    report = next(r for r in contents.reports if r.sobject == "Issue__c")
    assert report.loaded == 2
    assert report.warnings == [
        "1 id(s) start with a03, not the key prefix a1M the org's metadata gives"
    ]


# -- broken dumps ----------------------------------------------------------------------------


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "crmarena_data.db"
    path.write_text("Id,Name\n001,Acme\n")
    with pytest.raises(DumpError, match="is not a SQLite database"):
        read_dump(path, REGISTRY, org="original")
    with pytest.raises(DumpError, match="No such file"):
        read_dump(tmp_path / "missing.db", REGISTRY, org="original")


def test_a_missing_table_is_named(tmp_path: Path) -> None:
    tables = original_dump()
    del tables["Knowledge__kav"]
    with pytest.raises(DumpError, match="The dump has no table Knowledge__kav"):
        read_dump(dump_file(tmp_path, tables), REGISTRY, org="original")


def test_a_table_of_another_org_is_named(tmp_path: Path) -> None:
    with pytest.raises(DumpError) as raised:
        read_dump(dump_file(tmp_path, b2b_dump()), REGISTRY, org="original")
    message = str(raised.value)
    assert message.startswith("Table Contract of the dump is not an object of org original")
    assert "--org b2b" in message


def test_a_wrong_column_is_named_with_its_table(tmp_path: Path) -> None:
    tables = original_dump()
    tables["Case"].add_column("Resolution__c", "TEXT", ["x", "y"])
    with pytest.raises(DumpError, match=r"Table Case, column Resolution__c: org original has no"):
        read_dump(dump_file(tmp_path, tables), REGISTRY, org="original")
    tables = original_dump()
    tables["Issue__c"].drop_column("Id")
    with pytest.raises(DumpError, match="Table Issue__c has no Id column"):
        read_dump(dump_file(tmp_path, tables, "no-id.db"), REGISTRY, org="original")


@pytest.mark.parametrize(
    ("table", "row", "column", "value", "reason"),
    [
        ("OrderItem", 1, "Quantity", "two", "'two' is not a number"),
        ("Product2", 0, "IsActive", 2, "2 is not a checkbox value (1/0 or true/false)"),
        ("Order", 0, "EffectiveDate", "20/12/2020", "'20/12/2020' is not a date (YYYY-MM-DD)"),
        ("Case", 1, "CreatedDate", "yesterday", "'yesterday' is not a datetime"),
        ("EmailMessage", 0, "ToIds", "[005, 003]", "'[005, 003]' is not a JSON array of ids"),
        ("Contact", 1, "AccountId", "acct-2", "'acct-2' is not a Salesforce id"),
    ],
)
def test_a_bad_value_names_table_row_id_and_column(
    tmp_path: Path, table: str, row: int, column: str, value: Any, reason: str
) -> None:
    tables = original_dump()
    tables[table].set(row, column, value)
    record_id = tables[table].get(row, "Id")
    with pytest.raises(DumpRejected) as raised:
        read_dump(dump_file(tmp_path, tables), REGISTRY, org="original")
    message = str(raised.value)
    assert f"{table} row {row + 1} (Id {record_id}), column {column}: {reason}" in message
    assert "--skip-invalid-rows" in message
    report = next(r for r in raised.value.reports if r.sobject == table)
    assert report.rejected_rows == 1


def test_a_duplicate_id_is_a_bad_row(tmp_path: Path) -> None:
    tables = original_dump()
    tables["Issue__c"].set(1, "Id", tables["Issue__c"].get(0, "Id"))
    with pytest.raises(DumpRejected, match=r"Issue__c row 2 .*column Id: the same Id as row 1"):
        read_dump(dump_file(tmp_path, tables), REGISTRY, org="original")


def test_skip_invalid_rows_leaves_them_out_and_reports_why(tmp_path: Path) -> None:
    tables = original_dump()
    tables["OrderItem"].set(1, "Quantity", "two")
    contents = read_dump(dump_file(tmp_path, tables), REGISTRY, org="original", skip_invalid=True)
    assert [row["Id"] for row in contents.rows["OrderItem"]] == [ORDER_ITEM_1]
    report = next(r for r in contents.reports if r.sobject == "OrderItem")
    assert (report.loaded, report.rejected_rows) == (1, 1)
    assert report.reasons() == ["Quantity: 'two' is not a number (row 2)"]


def test_a_checksum_mismatch_is_refused(tmp_path: Path) -> None:
    path = dump_file(tmp_path)
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    assert verify_sha256(path, actual.upper()) == actual
    with pytest.raises(DumpError, match=f"Checksum mismatch for crmarena_data.db: .* got {actual}"):
        verify_sha256(path, "0" * 64)
    with pytest.raises(DumpError, match="64 hexadecimal digits"):
        verify_sha256(path, "abc")


# -- an imported org, over the API -----------------------------------------------------------


@pytest.fixture(scope="module")
def imported(
    database_factory: DatabaseFactory, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, ImportResult]:
    """A database holding the original dump, imported; never written to by tests."""
    url = database_factory.new_url()
    path = dump_file(tmp_path_factory.mktemp("dump"))
    return url, run_import(url, database_factory.workdir, path)


@pytest.fixture(scope="module")
def imported_client(
    database_factory: DatabaseFactory, imported: tuple[str, ImportResult]
) -> Iterator[TestClient]:
    yield from open_client(database_factory, imported[0])


@pytest.fixture(scope="module")
def sf(imported_client: TestClient) -> TestClient:
    return logged_in(imported_client)


def test_the_org_info_records_the_import(
    imported: tuple[str, ImportResult], imported_client: TestClient
) -> None:
    result = imported[1]
    with state_of(imported_client).engine.connect() as conn:
        row = conn.execute(select(ORG_INFO)).mappings().one()
    assert row["org"] == "original"
    assert row["source"] == f"{IMPORTED_SOURCE_PREFIX}{result.sha256}"
    assert row["content_hash"] == result.content_hash


def test_soql_returns_the_dumps_ids_and_values_in_salesforce_formats(sf: TestClient) -> None:
    cases = query(
        sf,
        "SELECT Id, CaseNumber, Status, IsClosed, CreatedDate, ClosedDate, Owner.Email, "
        "Account.Name, OrderItemId__c FROM Case ORDER BY CreatedDate",
    )
    assert [case["Id"] for case in cases] == [CASE_1, CASE_2]
    assert cases[0]["CreatedDate"] == "2020-12-22T11:00:00.000+0000"
    assert cases[0]["ClosedDate"] == "2020-12-22T13:30:00.000+0000"
    assert cases[1]["ClosedDate"] is None
    assert (cases[0]["IsClosed"], cases[1]["IsClosed"]) == (True, False)
    assert cases[0]["Owner"]["Email"] == "ava@shoes.example"
    assert cases[0]["Account"]["Name"] == "Cleo Park"
    assert cases[0]["OrderItemId__c"] == ORDER_ITEM_1
    items = query(
        sf,
        "SELECT Quantity, UnitPrice, TotalPrice FROM OrderItem "
        f"WHERE OrderId = '{ORDER_1}' ORDER BY Quantity",
    )
    assert items == [
        {"Quantity": 1.0, "UnitPrice": 22.5, "TotalPrice": 22.5},
        {"Quantity": 2.0, "UnitPrice": 89.0, "TotalPrice": 178.0},
    ]
    users = query(sf, "SELECT Id, Phone FROM User ORDER BY Id")
    assert users == [{"Id": USER_1, "Phone": "5551234567"}, {"Id": USER_2, "Phone": None}]
    products = query(sf, "SELECT Id FROM Product2 WHERE IsActive = true")
    assert products == [{"Id": PRODUCT_1}]
    orders = query(sf, "SELECT EffectiveDate FROM Order WHERE EffectiveDate = 2020-12-20")
    assert orders == [{"EffectiveDate": "2020-12-20"}]
    emails = query(sf, f"SELECT ToIds, ToAddress FROM EmailMessage WHERE ParentId = '{CASE_2}'")
    assert emails == [
        {"ToIds": [CONTACT_2, USER_1], "ToAddress": "dev@mail.example; ava@shoes.example"}
    ]
    articles = query(
        sf,
        "SELECT Id FROM Knowledge__kav WHERE PublishStatus = 'Online' AND Language = 'en_US' "
        "ORDER BY Title",
    )
    assert articles == [{"Id": ARTICLE_1}, {"Id": ARTICLE_2}]


def test_sosl_finds_the_imported_records(sf: TestClient) -> None:
    response = sf.get(
        f"{API}/search", params={"q": "FIND {trail} IN ALL FIELDS RETURNING Product2(Id, Name)"}
    )
    assert response.status_code == 200, response.text
    found = [(r["Id"], r["Name"]) for r in response.json()["searchRecords"]]
    assert found == [(PRODUCT_1, "Trail Runner X")]


def test_records_created_after_the_import_get_ids_that_do_not_collide(sf: TestClient) -> None:
    response = sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Wrong Color"})
    assert response.status_code == 201, response.text
    new_id = response.json()["id"]
    assert new_id.startswith("a1M" + POD)
    issues = query(sf, "SELECT Id FROM Issue__c")
    assert len(issues) == 3 and len({issue["Id"] for issue in issues}) == 3
    fetched = sf.get(f"{API}/sobjects/Case/{CASE_1}")
    assert fetched.status_code == 200 and fetched.json()["Subject"] == "Sole came apart"


def test_sandboxes_of_an_imported_org_clone_the_imported_data(imported_client: TestClient) -> None:
    sf = logged_in(imported_client)
    # A write in the default sandbox is not part of what the org was imported as.
    made = sf.post(f"{API}/sobjects/Issue__c", json={"Name": "Default Sandbox Only"})
    assert made.status_code == 201, made.text
    body = imported_client.post("/__localforce/sandboxes", json={"id": "imported-copy"})
    assert body.status_code == 201, body.text
    copy = TestClient(
        imported_client.app,
        base_url=str(imported_client.base_url),
        headers={"Authorization": f"Bearer {body.json()['access_token']}"},
    )
    assert [c["Id"] for c in query(copy, "SELECT Id FROM Case ORDER BY Id")] == [CASE_1, CASE_2]
    names = sorted(i["Name"] for i in query(copy, "SELECT Name FROM Issue__c"))
    assert names == ["Product Defect", "Shipping Delay"]
    again = imported_client.post("/__localforce/sandboxes", json={"id": "imported-seeded"})
    assert again.status_code == 201
    sandbox = state_of(imported_client).sandboxes.get("imported-seeded")
    with sandbox.engine.connect() as conn:
        row = conn.execute(select(ORG_INFO.c.source)).one()
    assert row[0].startswith(IMPORTED_SOURCE_PREFIX)


# -- the org before a failed import is the org after it --------------------------------------


def org_answers(sf: TestClient) -> Any:
    return (
        query(sf, "SELECT COUNT() FROM Case"),
        query(sf, "SELECT Id, Subject, CreatedDate FROM Case ORDER BY Id LIMIT 3"),
        query(sf, "SELECT Id, Name FROM Issue__c ORDER BY Name"),
    )


def test_a_broken_dump_leaves_the_org_untouched(
    client: TestClient, api: TestClient, tmp_path: Path
) -> None:
    before = org_answers(api)
    settings = state_of(client).settings
    url, workdir = settings.effective_database_url, settings.data_dir
    tables = original_dump()
    tables["OrderItem"].set(1, "UnitPrice", "n/a")
    with pytest.raises(DumpRejected, match=f"OrderItem row 2 \\(Id {ORDER_ITEM_2}\\)"):
        run_import(url, workdir, dump_file(tmp_path, tables))
    assert org_answers(api) == before


def test_a_failure_while_loading_rolls_everything_back(
    client: TestClient, api: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = org_answers(api)
    settings = state_of(client).settings
    calls = []

    def failing_insert(*args: Any) -> None:
        calls.append(args)
        if len(calls) == 5:
            raise RuntimeError("the disk is full")
        insert_rows(*args)

    monkeypatch.setattr(loading, "insert_rows", failing_insert)
    with pytest.raises(RuntimeError, match="the disk is full"):
        run_import(settings.effective_database_url, settings.data_dir, dump_file(tmp_path))
    assert org_answers(api) == before
    with state_of(client).engine.connect() as conn:
        assert conn.execute(select(ORG_INFO.c.source)).scalar_one() == "generated"


# -- the command line ------------------------------------------------------------------------


def invoke(args: list[str], url: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LOCALFORCE_DATABASE_URL", url)
    monkeypatch.delenv("LOCALFORCE_ORG", raising=False)
    monkeypatch.setattr(cli_module.console, "width", 400)  # no wrapping of the report's lines
    return CliRunner().invoke(cli, args)


def test_the_import_command_loads_and_prints_the_report(
    database_factory: DatabaseFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = dump_file(tmp_path)
    url = database_factory.new_url()
    args = ["import", str(path), "--org", "original", "--data-dir", str(tmp_path)]
    result = invoke(args, url, monkeypatch)
    assert result.exit_code == 0, result.output
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    assert f"sha256: {sha256}" in result.output
    assert "Import report" in result.output
    assert "PublishStatus filled in 2 rows" in result.output
    # the dump's 30 records, then the org's Organization and 4 profiles
    assert "Imported" in result.output and "35 records" in result.output
    bad = original_dump()
    bad["Case"].add_column("Resolution__c", "TEXT", ["x", "y"])
    args[1] = str(dump_file(tmp_path, bad, "bad.db"))
    failed = invoke(args, url, monkeypatch)
    assert failed.exit_code == 1
    assert "Import failed: Table Case, column Resolution__c" in failed.output
    assert "The org's data was not changed." in failed.output
    wrong = invoke([*args[:2], "--org", "original", "--sha256", "0" * 64], url, monkeypatch)
    assert wrong.exit_code == 1 and "Checksum mismatch" in wrong.output
    missing = invoke([*args[:1], str(tmp_path / "none.db"), *args[2:]], url, monkeypatch)
    assert missing.exit_code == 1
    assert "CRMArena publishes the original dump at https://github.com/" in missing.output


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def file_server(directory: Path) -> Iterator[str]:
    """An http server on 127.0.0.1 serving `directory` (tests never reach the internet)."""
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_import_command_downloads_a_url_and_checks_its_sha256(
    database_factory: DatabaseFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    path = dump_file(served)
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    url = database_factory.new_url()
    data_dir = tmp_path / "data"
    with file_server(served) as base:
        common = ["--org", "original", "--data-dir", str(data_dir)]
        wrong = invoke(
            ["import", f"{base}/crmarena_data.db", *common, "--sha256", "f" * 64],
            url,
            monkeypatch,
        )
        assert wrong.exit_code == 1
        expected = f"expected sha256 {'f' * 64}, got {sha256}"
        assert f"Checksum mismatch for crmarena_data.db: {expected}" in wrong.output
        missing = invoke(["import", f"{base}/nothing.db", *common], url, monkeypatch)
        assert missing.exit_code == 1 and "HTTP 404" in missing.output
        result = invoke(
            ["import", f"{base}/crmarena_data.db", *common, "--sha256", sha256], url, monkeypatch
        )
    assert result.exit_code == 0, result.output
    assert f"sha256: {sha256}" in result.output
    leftovers = [p.name for p in data_dir.iterdir() if p.name.startswith("import-")]
    assert leftovers == []  # the download was a temporary file
    state = build_state(make_settings(url, tmp_path))
    try:
        with state.engine.connect() as conn:
            cases = conn.execute(select(state.tables["Case"].c.Id).order_by("Id")).scalars()
            assert list(cases) == [CASE_1, CASE_2]
    finally:
        state.sandboxes.close()
        state.engine.dispose()


# -- CRMArena-Pro --------------------------------------------------------------------------


@pytest.mark.parametrize(("org", "make"), [("b2b", b2b_dump), ("b2c", b2c_dump)])
def test_pro_dumps_read_against_their_orgs_metadata(
    tmp_path: Path, org: str, make: Callable[[], Dump]
) -> None:
    registry = SchemaRegistry.from_directory(REPO_ROOT / "seed" / "orgs" / org / "objects")
    contents = read_dump(dump_file(tmp_path, make(), f"{org}.db"), registry, org=org)
    rows = {name: {row["Id"]: row for row in batch} for name, batch in contents.rows.items()}
    opportunity = rows["Opportunity"][OPPORTUNITY_1]
    assert (opportunity["Amount"], opportunity["CloseDate"]) == (125000.0, date(2024, 9, 30))
    assert rows["Lead"][LEAD_1]["IsConverted"] is False
    assert rows["EmailMessage"][EMAIL_2]["ToAddress"] == "gia@lead.example"
    assert rows["Account"][ACCOUNT_2]["Name"] in ("Boise Outfitters", "Dev Rao")
    with pytest.raises(DumpError, match=f"Table Case, column Resolution__c: org {org} has no"):
        broken = make()
        broken["Case"].add_column("Resolution__c", "TEXT", ["x", "y"])
        read_dump(dump_file(tmp_path, broken, f"{org}-broken.db"), registry, org=org)


def test_a_b2b_dump_imports_into_the_b2b_org(
    database_factory: DatabaseFactory, tmp_path: Path
) -> None:
    url = database_factory.new_url()
    path = dump_file(tmp_path, b2b_dump(), "crmarenapro_b2b_data.db")
    result = run_import(url, database_factory.workdir, path, org="b2b")
    reports = {report.sobject: report for report in result.reports}
    assert reports["Opportunity"].loaded == 1 and reports["Quote"].loaded == 0
    # The Pro orgs give Issue__c another key prefix than the original org's ids here carry.
    assert reports["Issue__c"].warnings == [
        "2 id(s) start with a1M, not the key prefix a03 the org's metadata gives"
    ]
    for client in open_client(database_factory, url, org="b2b"):
        sf = logged_in(client)
        opportunity = query(
            sf, "SELECT Id, Amount, Probability, CloseDate, Account.Name FROM Opportunity"
        )
        assert opportunity == [
            {
                "Id": OPPORTUNITY_1,
                "Amount": 125000.0,
                "Probability": 75.0,
                "CloseDate": "2024-09-30",
                "Account": {
                    "attributes": {
                        "type": "Account",
                        "url": f"/services/data/v59.0/sobjects/Account/{ACCOUNT_1}",
                    },
                    "Name": "Acme Fitness",
                },
            }
        ]
        emails = query(sf, f"SELECT ToAddress FROM EmailMessage WHERE Id = '{EMAIL_2}'")
        assert emails == [{"ToAddress": "gia@lead.example"}]
        leads = query(sf, "SELECT Id, IsConverted FROM Lead")
        assert leads == [{"Id": LEAD_1, "IsConverted": False}]


def test_a_server_for_another_org_refuses_to_seed_over_an_import(
    database_factory: DatabaseFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = database_factory.new_url()
    path = dump_file(tmp_path, b2b_dump(), "crmarenapro_b2b_data.db")
    run_import(url, database_factory.workdir, path, org="b2b")
    state = build_state(make_settings(url, database_factory.workdir, org="original"))
    try:
        with pytest.raises(ImportedOrgInTheWay, match="holds the imported org 'b2b'"):
            ensure_database(state.engine, state.registry, state.tables, state.settings)
    finally:
        state.sandboxes.close()
        state.engine.dispose()
    served = invoke(["serve", "--data-dir", str(tmp_path)], url, monkeypatch)
    assert served.exit_code == 1
    assert "LOCALFORCE_ORG=b2b" in served.output
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.execute(select(ORG_INFO.c.org)).scalar_one() == "b2b"
    finally:
        engine.dispose()
