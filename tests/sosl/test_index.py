"""The search index: which fields it holds, its DDL's life cycle, the SQLite wildcard matcher."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import insert, text, update

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.storage.database import create_db_engine, data_tables_exist, recreate_data_tables
from app.storage.search_index import (
    FieldGroup,
    drop_search_index,
    rebuild_search_index,
    search_spec,
    wildcard_match,
)
from app.storage.tables import TableSet

REGISTRY = SchemaRegistry.from_directory(Settings().seed_dir / "orgs" / "original" / "objects")


def groups(name: str) -> dict[str, FieldGroup]:
    sobject = REGISTRY.get(name)
    assert sobject is not None
    spec = search_spec(sobject)
    assert spec is not None
    return {field.name: field.group for field in spec.fields}


def test_searched_fields_follow_salesforce() -> None:
    contact = groups("Contact")
    assert {name: contact[name] for name in ("FirstName", "LastName", "Name")} == {
        "FirstName": FieldGroup.NAME,
        "LastName": FieldGroup.NAME,
        "Name": FieldGroup.NAME,
    }
    assert (contact["Email"], contact["Phone"], contact["MobilePhone"]) == (
        FieldGroup.EMAIL,
        FieldGroup.PHONE,
        FieldGroup.PHONE,
    )
    # Other text is searched IN ALL FIELDS; picklists (Salutation, LeadSource) are not.
    assert contact["MailingCity"] is contact["Description"] is FieldGroup.OTHER
    assert not {"Salutation", "LeadSource", "Birthdate", "DoNotCall"} & set(contact)
    knowledge = groups("Knowledge__kav")
    assert knowledge["Title"] is FieldGroup.NAME
    assert knowledge["FAQ_Answer__c"] is FieldGroup.OTHER
    # Picklists, numbers, checkboxes, ids and dates are not searched.
    assert not {"PublishStatus", "Language", "VersionNumber", "IsLatestVersion", "Id"} & set(
        knowledge
    )
    assert "Family" not in groups("Product2")
    sobject = REGISTRY.get("ProductCategoryProduct")
    assert sobject is not None and search_spec(sobject) is None  # nothing to search


def test_sqlite_index_life_cycle(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'index.db'}")
    tables = TableSet(REGISTRY)
    recreate_data_tables(engine, tables)
    assert data_tables_exist(engine, tables)
    issue = tables["Issue__c"]
    row = {"Id": "a00Lf0000000001AAA", "Name": "Damaged Parcel", "IsDeleted": False}
    defaults = {"CreatedById": "005Lf0000000001AAA", "LastModifiedById": "005Lf0000000001AAA"}
    match = text("SELECT rowid FROM sobj_issue__c_fts WHERE sobj_issue__c_fts MATCH :q")
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM sobj_issue__c"))
        conn.execute(insert(issue).values(**row, **defaults, CreatedDate=None))
        assert len(conn.execute(match, {"q": "parcels"}).all()) == 1
        conn.execute(update(issue).values(Name="Lost Parcel"))
        assert len(conn.execute(match, {"q": "damaged"}).all()) == 0
        assert len(conn.execute(match, {"q": "lost"}).all()) == 1
        rebuild_search_index(conn, tables)
        assert len(conn.execute(match, {"q": "lost"}).all()) == 1
        conn.execute(text("DELETE FROM sobj_issue__c"))
        assert len(conn.execute(match, {"q": "lost"}).all()) == 0
    with engine.begin() as conn:
        drop_search_index(conn, tables)
    # A database without the index counts as unseeded, so the next start rebuilds it.
    assert not data_tables_exist(engine, tables)
    recreate_data_tables(engine, tables)  # twice in a row is fine
    recreate_data_tables(engine, tables)
    assert data_tables_exist(engine, tables)
    engine.dispose()


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("Joe Smith", "sm?th", True),
        ("Joe Smithers", "sm?th", False),
        ("Joe Smithers", "sm?th*", True),
        ("blacksmith", "smith", False),
        ("Racing Suit", "racin*", True),
        ("Jump-Rope", "jump rop*", True),
        ("jump, then a rope", "jump rop*", False),
        ("snake_case", "case", True),
        ("ABC", "*bc", True),
        ("abc", "a*b*c*", True),
        # Every literal run of the pattern is in the text, but not inside matching words.
        ("x10000y 2020-01-01", "*10000* 01 01*", False),
        ("x10000y-01-01", "*10000* 01 01*", True),
        ("ab-cd", "*b c*", True),
        ("abcd", "*b c*", False),
        ("", "ab*", False),
    ],
)
def test_wildcard_match(text: str, pattern: str, expected: bool) -> None:
    assert wildcard_match(text, pattern) is expected


@pytest.mark.timing
def test_wildcard_match_never_backtracks_exponentially() -> None:
    started = time.perf_counter()
    assert wildcard_match("a" * 20_000, "a*a*a*a*a*a*a*a*a*a*x") is False
    assert wildcard_match("ab " * 20_000, "a*b*a*b*x") is False
    assert time.perf_counter() - started < 2
    assert wildcard_match(None, "x") is None
