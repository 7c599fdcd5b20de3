"""Copy-on-write sandboxes: a sandbox holds only the tables its episode wrote, and reads the
rest from its template, with answers identical to a full copy's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Connection, text

from app.sandbox.model import Sandbox
from app.storage.database import write_transaction
from app.storage.overlay import OWN_TABLES, ensure_local, overlay_of
from tests.conftest import API, login
from tests.sandbox.test_sandboxes import as_token, create, state_of
from tests.soql.test_crmarena_queries import QUERIES, ROWS

SEARCH = "FIND {Zq Overlay*} IN NAME FIELDS RETURNING Contact(Id, Name)"


def own_tables(sandbox: Sandbox) -> set[str]:
    with sandbox.engine.connect() as conn:
        overlay = overlay_of(conn)
        assert overlay is not None
        if conn.dialect.name == "sqlite":
            query = "SELECT name FROM main.sqlite_master WHERE type = 'table'"
            names = conn.execute(text(query)).scalars()
            # FTS5 keeps an index in tables of its own, named after it.
            return {n for n in names if "_fts" not in n}
        query = "SELECT tablename FROM pg_tables WHERE schemaname = :s"
        return set(conn.execute(text(query), {"s": overlay.local}).scalars())


def sandbox_of(client: TestClient, sandbox_id: str) -> Sandbox:
    return state_of(client).sandboxes.get(sandbox_id)


def contact_count(conn: Connection) -> int:
    # With a parameter, as the API's statements have: what drivers prepare on the server.
    query = text('SELECT count(*) FROM sobj_contact WHERE "Id" <> :none')
    return int(conn.execute(query, {"none": ""}).scalar_one())


def test_a_new_sandbox_holds_only_its_own_tables(client: TestClient, backend: str) -> None:
    create(client, id="cow-new")
    sandbox = sandbox_of(client, "cow-new")
    assert own_tables(sandbox) == set(OWN_TABLES)
    if backend == "sqlite":
        copies = state_of(client).sandboxes.copies
        path = Path(copies.database_url(sandbox.url).removeprefix("sqlite:///"))
        assert path.stat().st_size <= 1_000_000
    sf = as_token(client, create(client, id="cow-reads")["access_token"])
    count = sf.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Case"}).json()["totalSize"]
    assert count == 977  # read from the template


def test_the_first_write_copies_that_table_only(client: TestClient) -> None:
    sf = as_token(client, create(client, id="cow-write")["access_token"])
    made = sf.post(f"{API}/sobjects/Contact", json={"LastName": "Zq Overlay Ada"})
    assert made.status_code == 201, made.text
    sandbox = sandbox_of(client, "cow-write")
    assert own_tables(sandbox) == {*OWN_TABLES, "sobj_contact"}
    found = sf.get(f"{API}/query", params={"q": "SELECT Name FROM Contact WHERE Name LIKE 'Zq%'"})
    assert [r["Name"] for r in found.json()["records"]] == ["Zq Overlay Ada"]
    searched = sf.get(f"{API}/search", params={"q": SEARCH}).json()["searchRecords"]
    assert [r["Id"] for r in searched] == [made.json()["id"]]
    # Another sandbox of the same template sees none of it.
    other = as_token(client, create(client, id="cow-other")["access_token"])
    assert other.get(f"{API}/search", params={"q": SEARCH}).json()["searchRecords"] == []


def test_connections_opened_before_a_copy_read_the_copy(client: TestClient) -> None:
    """Each pooled connection had read the template's table, often enough for a driver to
    prepare the statement; after another copied it, every one of them reads the sandbox's own."""
    token = create(client, id="cow-pool")["access_token"]
    sandbox = sandbox_of(client, "cow-pool")
    with sandbox.engine.connect() as one, sandbox.engine.connect() as two:
        for _ in range(8):  # psycopg prepares a statement on its fifth run
            before = [contact_count(one), contact_count(two)]
            one.commit()  # (a rollback would drop what the transaction prepared)
            two.commit()
        made = as_token(client, token).post(f"{API}/sobjects/Contact", json={"LastName": "Zq X"})
        assert made.status_code == 201
        assert [contact_count(one), contact_count(two)] == [n + 1 for n in before]


@pytest.mark.parametrize("sobject", ["Contact", "PricebookEntry"])  # searchable or not
def test_the_connection_that_copies_reads_its_copy_at_once(
    client: TestClient, backend: str, sobject: str
) -> None:
    """A connection that had prepared its reads of the template's table, then copied it in a
    write, reads the copy within that transaction and after; one whose copy rolled back
    reads the template again."""
    create(client, id=f"cow-self-{sobject}")
    sandbox = sandbox_of(client, f"cow-self-{sobject}")
    table = sandbox.schema.tables[sobject]
    live = text(f'SELECT count(*) FROM {table.name} WHERE "IsDeleted" = :no')
    drop = text(f'UPDATE {table.name} SET "IsDeleted" = :yes WHERE "Id" = :id')

    def count(conn: Connection) -> int:
        return int(conn.execute(live, {"no": False}).scalar_one())

    with sandbox.engine.connect() as conn:
        record_id = conn.execute(text(f'SELECT "Id" FROM {table.name} LIMIT 1')).scalar_one()
        for _ in range(8):  # prepared by now, on either back end
            before = count(conn)
            conn.commit()
    with pytest.raises(RolledBack), write_transaction(sandbox.engine) as conn:
        driver = conn.connection.dbapi_connection
        ensure_local(conn, table)
        conn.execute(drop, {"yes": True, "id": record_id})
        assert count(conn) == before - 1
        raise RolledBack  # the copy goes with the write
    assert own_tables(sandbox) == set(OWN_TABLES)
    with write_transaction(sandbox.engine) as conn:
        if backend == "sqlite":  # one connection throughout: the sandbox pool's only one
            assert conn.connection.dbapi_connection is driver
        assert count(conn) == before
        ensure_local(conn, table)
        conn.execute(drop, {"yes": True, "id": record_id})
        assert count(conn) == before - 1
    with sandbox.engine.connect() as conn:
        assert count(conn) == before - 1


class RolledBack(Exception):
    pass


def test_a_write_rolled_back_leaves_no_copy(client: TestClient) -> None:
    sf = as_token(client, create(client, id="cow-rollback")["access_token"])
    body = {
        "allOrNone": True,
        "records": [
            {"attributes": {"type": "Account"}, "Name": "Zq kept only if all pass"},
            {"attributes": {"type": "Account"}, "NoSuchField__c": 1},
        ],
    }
    response = sf.post(f"{API}/composite/sobjects", json=body)
    assert response.status_code == 200, response.text
    assert not any(result["success"] for result in response.json())
    assert own_tables(sandbox_of(client, "cow-rollback")) == set(OWN_TABLES)


def test_search_ranks_a_copied_table_as_the_template_does(client: TestClient) -> None:
    sf = as_token(client, create(client, id="cow-rank")["access_token"])
    subject = sf.get(f"{API}/query", params={"q": "SELECT Subject FROM Case LIMIT 1"})
    word = max(re.findall(r"[A-Za-z]+", subject.json()["records"][0]["Subject"]), key=len)
    query = f"FIND {{{word}}} RETURNING Case(Id ORDER BY Id LIMIT 5), Contact(Id)"
    unranked = f"FIND {{{word}}} RETURNING Case(Id)"
    before = sf.get(f"{API}/search", params={"q": unranked}).json()["searchRecords"]
    ordered = sf.get(f"{API}/search", params={"q": query}).json()["searchRecords"]
    assert before, word
    case_id = before[-1]["Id"]
    patched = sf.patch(f"{API}/sobjects/Case/{case_id}", json={"Priority": "High"})
    assert patched.status_code == 204, patched.text
    assert "sobj_case" in own_tables(sandbox_of(client, "cow-rank"))
    assert sf.get(f"{API}/search", params={"q": unranked}).json()["searchRecords"] == before
    assert sf.get(f"{API}/search", params={"q": query}).json()["searchRecords"] == ordered


def test_reset_keeps_the_copy_and_restores_its_rows(client: TestClient) -> None:
    sf = as_token(client, create(client, id="cow-reset")["access_token"])
    sf.post(f"{API}/sobjects/Contact", json={"LastName": "Zq Overlay gone"})
    sandbox = sandbox_of(client, "cow-reset")
    with sandbox.engine.connect() as conn:
        seeded = contact_count(conn) - 1
    assert client.post("/__localforce/sandboxes/cow-reset/reset").status_code == 200
    with sandbox.engine.connect() as conn:
        assert contact_count(conn) == seeded
    assert sf.get(f"{API}/search", params={"q": SEARCH}).json()["searchRecords"] == []


SEARCHES = [
    "FIND {Zipper} RETURNING Case(Id, Subject), Knowledge__kav(Id, Title)",
    "FIND {refund OR return} IN ALL FIELDS RETURNING EmailMessage(Id ORDER BY Id), Case(Id)",
    f"FIND {{{ROWS['Contact'][0]['LastName']}}} IN NAME FIELDS "
    "RETURNING Contact(Id, Name), Account(Id, Name)",
]


def answers(sf: TestClient) -> dict[str, object]:
    """The first page of every CRMArena tool query and some searches, as the API answers."""
    out: dict[str, object] = {}
    for name, soql in QUERIES.items():
        body = sf.get(f"{API}/query", params={"q": soql}).json()
        if isinstance(body, dict):
            body.pop("nextRecordsUrl", None)  # names a locator of this sandbox
        out[name] = body
    for sosl in SEARCHES:
        out[sosl] = sf.get(f"{API}/search", params={"q": sosl}).json()
    return out


def test_queries_answer_as_the_full_org_does_before_and_after_copies(
    client: TestClient, backend: str
) -> None:
    """The CRMArena tools' queries, and searches, answer the same on the server's own (full)
    org, on a sandbox reading the template, and on one whose every table was copied."""
    server = as_token(client, login(client))
    expected = answers(server)
    sf = as_token(client, create(client, id="cow-same")["access_token"])
    assert answers(sf) == expected
    sandbox = sandbox_of(client, "cow-same")
    with write_transaction(sandbox.engine) as conn:
        for _, table in sandbox.schema.tables.items():
            ensure_local(conn, table)
    assert len(own_tables(sandbox)) == len(OWN_TABLES) + len(sandbox.schema.tables.items())
    assert answers(sf) == expected
