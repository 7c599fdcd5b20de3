"""Stored text keys (app.storage.text_keys): a database from before them is converted by the
platform migration (its sandboxes' storage too), keys another tool left wrong are repaired
when localforce opens the database, and the key columns are no part of any record."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Connection, create_engine, event, text

from app.main import create_app
from app.storage.backends import backend_for
from app.storage.backends.text_key import sql_text_key, text_key
from app.storage.database import create_db_engine
from app.storage.tables import key_column_name, key_index_name
from tests.conftest import ADMIN_HEADERS, API, login, make_settings
from tests.databases import DatabaseFactory
from tests.sandbox.test_sandboxes import CONTROL, as_token, create, state_of

KEYED = {
    "sobj_user": "Username",
    "sobj_product2": "External_ID__c",
    "sobj_knowledge__kav": "UrlName",
}
PRODUCTS = f"{API}/sobjects/Product2"


def serve(url: str, data_dir: Path) -> Iterator[TestClient]:
    app = create_app(make_settings(url, data_dir))
    with TestClient(app, base_url="https://testserver", headers=ADMIN_HEADERS) as client:
        yield client


def old_layout(conn: Connection, schema: str | None = None) -> None:
    """Make the keyed fields of a database (or a PostgreSQL schema) as they were before keys
    were stored: no key column, an expression index of the key (which calls lf_text_key),
    named as the tables were made, or by PostgreSQL as a sandbox's copy of a table names it."""
    backend = backend_for(conn.dialect.name)
    prefix = f'"{schema}".' if schema else ""
    tables = set(conn.execute(text(_TABLES[conn.dialect.name]), {"s": schema}).scalars())
    for table, field in KEYED.items():
        if table not in tables:
            continue
        if conn.dialect.name == "sqlite":  # PostgreSQL drops a column's index with it
            conn.execute(text(f'DROP INDEX "{key_index_name(table, field)}"'))
        conn.execute(text(f'ALTER TABLE {prefix}"{table}" DROP COLUMN "{key_column_name(field)}"'))
        key = backend.text_key(f'"{field}"')
        named = schema in (None, "public")
        name = f'"{key_index_name(table, field)}"' if named else ""
        conn.execute(text(f'CREATE INDEX {name} ON {prefix}"{table}" ({key})'))


_TABLES = {
    "sqlite": "SELECT name FROM sqlite_master WHERE type = 'table' AND :s IS NULL",
    "postgresql": "SELECT tablename FROM pg_tables WHERE schemaname = :s",
}


def _sqlite_file(path: Path) -> Iterator[Connection]:
    """A connection on a SQLite file with localforce's key function, leaving its journal mode."""
    engine = create_engine(f"sqlite:///{path}")

    def register(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.create_function("lf_text_key", 1, sql_text_key, deterministic=True)

    event.listen(engine, "connect", register)
    with engine.begin() as conn:
        yield conn
    engine.dispose()


def index_definitions(conn: Connection) -> list[str]:
    """The data tables' indexes (on PostgreSQL the btree ones: the search index keys text)."""
    if conn.dialect.name == "sqlite":
        query = "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
    else:
        query = (
            "SELECT indexdef FROM pg_indexes "
            "WHERE tablename LIKE 'sobj%' AND indexdef LIKE '%USING btree%'"
        )
    return [str(sql) for sql in conn.execute(text(query)).scalars()]


def test_a_database_and_its_sandboxes_from_before_stored_keys_are_converted(
    database_factory: DatabaseFactory, sandbox_ready_template: str, tmp_path: Path
) -> None:
    url = database_factory.new_url(template=sandbox_ready_template)
    data_dir = tmp_path / "data"
    database_factory.copy_sandbox_templates(sandbox_ready_template, url, data_dir)
    for client in serve(url, data_dir):
        token = create(client, id="old-layout")["access_token"]
        sf = as_token(client, token)
        made = sf.post(PRODUCTS, json={"Name": "Old", "External_ID__c": "Öld-1"})
        assert made.status_code == 201, made.text  # Product2 is copied into the sandbox
        sandbox = state_of(client).sandboxes.get("old-layout")
        copies = state_of(client).sandboxes.copies
        storage = [copies.storage_of(u) for u in (sandbox.url, sandbox.template)]
    engine = create_db_engine(url)
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SET search_path TO public, extensions"))
            for schema in ("public", *storage):
                old_layout(conn, schema)
        else:
            old_layout(conn)
        conn.execute(text("UPDATE alembic_version SET version_num = '0011_episode_results'"))
    if engine.dialect.name == "sqlite":
        for path in storage:
            for conn in _sqlite_file(Path(path)):
                old_layout(conn)
                assert any("lf_text_key" in sql for sql in index_definitions(conn))
    with engine.connect() as conn:
        assert any("lf_text_key" in sql for sql in index_definitions(conn))

    for client in serve(url, data_dir):
        sf = as_token(client, login(client))
        seeded = sf.get(
            f"{API}/query", params={"q": "SELECT Id, External_ID__c FROM Product2 LIMIT 1"}
        ).json()["records"][0]
        swapped = seeded["External_ID__c"].swapcase()
        response = sf.patch(f"{PRODUCTS}/External_ID__c/{swapped}", json={"Name": "Kept"})
        assert response.status_code == 200, response.text
        assert response.json()["id"] == seeded["Id"]
        in_sandbox = as_token(client, token)
        response = in_sandbox.patch(f"{PRODUCTS}/External_ID__c/öLD-1", json={"Name": "Kept"})
        assert response.status_code == 200, response.text
        assert response.json()["id"] == made.json()["id"]
    with engine.connect() as conn:
        assert not any("lf_text_key" in sql for sql in index_definitions(conn))
        for table, field in KEYED.items():
            key = key_column_name(field)
            rows = conn.execute(text(f'SELECT "{field}", "{key}" FROM {table}')).all()
            assert rows and all(k == (None if v is None else text_key(v)) for v, k in rows)
    engine.dispose()
    if database_factory.backend == "sqlite":
        for path in storage:
            with closing(sqlite3.connect(path)) as db:
                sql = db.execute("SELECT group_concat(sql) FROM sqlite_master").fetchone()[0]
                assert "lf_text_key" not in sql
                mode = db.execute("PRAGMA journal_mode").fetchone()[0]
                assert mode == ("delete" if path == storage[1] else "wal")


def test_keys_another_tool_left_wrong_are_repaired_at_start(
    database_factory: DatabaseFactory, seeded_template: str, tmp_path: Path
) -> None:
    url = database_factory.new_url(template=seeded_template)
    engine = create_engine(url)  # no function of localforce's: as another tool writes
    with engine.begin() as conn:
        product = conn.execute(text('SELECT max("Id") FROM sobj_product2')).scalar_one()
        conn.execute(
            text('UPDATE sobj_product2 SET "External_ID__c" = \'Tool-Ñ\' WHERE "Id" = :id'),
            {"id": product},
        )
        conn.execute(
            text(
                'INSERT INTO sobj_product2 ("Id", "Name", "External_ID__c", "IsDeleted") '
                "VALUES ('01t000000009902AAA', 'Tool', 'tool-2', false)"
            )
        )
    engine.dispose()
    for client in serve(url, tmp_path):
        sf = as_token(client, login(client))
        for value, record_id in (("TOOL-ñ", product), ("TOOL-2", "01t000000009902AAA")):
            response = sf.patch(f"{PRODUCTS}/External_ID__c/{value}", json={"Name": "Found"})
            assert response.status_code == 200, response.text
            assert response.json()["id"] == record_id
        created = sf.patch(f"{PRODUCTS}/External_ID__c/tool-3", json={"Name": "New"})
        assert created.status_code == 201, created.text


def test_the_key_columns_are_no_part_of_a_record(api: TestClient, client: TestClient) -> None:
    fields = [f["name"] for f in api.get(f"{PRODUCTS}/describe").json()["fields"]]
    assert "External_ID__c" in fields and not any(name.endswith("__key") for name in fields)
    everything = api.get(f"{API}/query", params={"q": "SELECT FIELDS(ALL) FROM Product2 LIMIT 1"})
    record = everything.json()["records"][0]
    assert "External_ID__c" in record and not any(name.endswith("__key") for name in record)
    hidden = api.get(f"{API}/query", params={"q": "SELECT External_ID__c__key FROM Product2"})
    assert hidden.status_code == 400
    assert hidden.json()[0]["errorCode"] == "INVALID_FIELD"
    sandbox = create(client)
    sf = as_token(client, sandbox["access_token"])
    made = sf.patch(f"{PRODUCTS}/External_ID__c/Diff-1", json={"Name": "Diffed"})
    assert made.status_code == 201, made.text
    changed = sf.patch(f"{PRODUCTS}/{made.json()['id']}", json={"External_ID__c": "Diff-2"})
    assert changed.status_code == 204, changed.text
    found = sf.patch(f"{PRODUCTS}/External_ID__c/DIFF-2", json={"Name": "Found"})
    assert found.json()["id"] == made.json()["id"]  # the key moved with the field
    diff = client.get(f"{CONTROL}/{sandbox['id']}/diff").json()
    assert diff["created"][0]["fields"]["External_ID__c"] == "Diff-2"
    assert not any(name.endswith("__key") for name in diff["created"][0]["fields"])
