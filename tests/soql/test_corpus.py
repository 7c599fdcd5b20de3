"""The SOQL corpus: table-driven queries with exact expected records or errors, on both backends.

The cases live in tests/soql/fixtures/corpus_*.yaml (their header comments give the format). A
file of record cases first creates its own fixture records through the REST API, so expectations
name those records and never depend on the generated data; a file that declares extra `objects`
runs on an org whose schema has them (the seeded tables plus theirs), its error cases too. Other
error cases run on the base org.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from app.config import REPO_ROOT
from app.main import create_app
from app.metadata.registry import SchemaRegistry
from app.storage.database import create_db_engine
from app.storage.tables import TableSet
from tests.conftest import API, login, make_settings
from tests.databases import DatabaseFactory

FIXTURES = Path(__file__).parent / "fixtures"
ORIGINAL_OBJECTS = REPO_ROOT / "seed" / "orgs" / "original" / "objects"
# Salesforce echoes about this many characters of a long line either side of the error.
WINDOW = 40
_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)(\.15|\.lower)?")
_PLACEHOLDER = re.compile(r"<([A-Z_]+)>")


@dataclass(frozen=True)
class Corpus:
    name: str
    objects: tuple[dict[str, Any], ...]
    data_categories: dict[str, Any]
    fixtures: tuple[dict[str, Any], ...]
    delete: tuple[str, ...]
    placeholders: dict[str, str]
    cases: tuple[dict[str, Any], ...]


def load_corpus(path: Path) -> Corpus:
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return Corpus(
        name=path.stem,
        objects=tuple(raw.get("objects", ())),
        data_categories=dict(raw.get("data_categories", {})),
        fixtures=tuple(raw.get("fixtures", ())),
        delete=tuple(raw.get("delete", ())),
        placeholders=dict(raw.get("placeholders", {})),
        cases=tuple(raw["cases"]),
    )


def load_corpora() -> dict[str, Corpus]:
    corpora = [load_corpus(path) for path in sorted(FIXTURES.glob("corpus_*.yaml"))]
    return {corpus.name: corpus for corpus in corpora}


CORPORA = load_corpora()


def _params(kind: str) -> list[Any]:
    """(corpus name, case) pairs of the record cases or of the error cases."""
    params = []
    for corpus in CORPORA.values():
        for case in corpus.cases:
            if ("errorCode" in case) == (kind == "error"):
                case_id = f"{corpus.name.removeprefix('corpus_')}:{case['name'].replace(' ', '-')}"
                params.append(pytest.param(corpus.name, case, id=case_id))
    return params


RECORD_CASES = _params("records")
ERROR_CASES = _params("error")


# -- the orgs the corpora run on -------------------------------------------------------------------


@dataclass
class Org:
    """A logged-in client and the ids of the corpus's fixture records, by reference name."""

    client: TestClient
    ids: dict[str, str]

    def ref(self, match: re.Match[str]) -> str:
        record_id = self.ids[match[1]]
        if match[2] == ".15":
            return record_id[:15]
        if match[2] == ".lower":
            return record_id.lower()
        return record_id

    def substitute(self, text: str) -> str:
        return _REF.sub(self.ref, text)

    def expand(self, value: Any) -> Any:
        """An expected value with ids substituted and `attributes: [Type, $ref]` spelled out
        (`[Name, Type, $ref]`: the Name entity of a polymorphic lookup, its url of Type)."""
        if isinstance(value, str):
            return self.substitute(value)
        if isinstance(value, list):
            return [self.expand(item) for item in value]
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if key == "attributes" and isinstance(item, list):
                    *entity, sobject, ref = item
                    url = f"{API}/sobjects/{sobject}/{self.substitute(ref)}"
                    out[key] = {"type": entity[0] if entity else sobject, "url": url}
                else:
                    out[key] = self.expand(item)
            return out
        return value


def create_fixtures(client: TestClient, corpus: Corpus) -> dict[str, str]:
    """Create the corpus's records through the REST API; their ids by reference name."""
    ids: dict[str, str] = {}
    for fixture in corpus.fixtures:
        body = {
            name: ids[value[1:]] if isinstance(value, str) and value.startswith("$") else value
            for name, value in fixture["fields"].items()
        }
        response = client.post(f"{API}/sobjects/{fixture['type']}", json=body)
        assert response.status_code == 201, (fixture, response.text)
        ids[fixture["ref"]] = response.json()["id"]
    if corpus.fixtures:
        first = corpus.fixtures[0]
        response = client.get(
            f"{API}/sobjects/{first['type']}/{ids[first['ref']]}", params={"fields": "CreatedById"}
        )
        assert response.status_code == 200, response.text
        ids["me"] = response.json()["CreatedById"]
    by_ref = {fixture["ref"]: fixture["type"] for fixture in corpus.fixtures}
    for ref in corpus.delete:
        response = client.delete(f"{API}/sobjects/{by_ref[ref]}/{ids[ref]}")
        assert response.status_code == 204, response.text
    return ids


def open_org_with_objects(
    corpus: Corpus, factory: DatabaseFactory, template: str, seed_dir: Path
) -> Iterator[TestClient]:
    """A client on a copy of the seeded org whose schema also has the corpus's objects."""
    objects_dir = seed_dir / "orgs" / "original" / "objects"
    objects_dir.mkdir(parents=True)
    for path in ORIGINAL_OBJECTS.glob("*.yaml"):
        shutil.copy(path, objects_dir / path.name)
    for definition in corpus.objects:
        text = yaml.safe_dump(definition, sort_keys=False)
        (objects_dir / f"{definition['name']}.yaml").write_text(text, encoding="utf-8")
    if corpus.data_categories:
        categories = yaml.safe_dump(corpus.data_categories, sort_keys=False)
        (objects_dir.parent / "data_categories.yaml").write_text(categories, encoding="utf-8")
    url = factory.new_url(template=template)
    tables = TableSet(SchemaRegistry.from_directory(objects_dir))
    engine = create_db_engine(url)  # on PostgreSQL, with citext's schema on the path
    new_tables = [tables[definition["name"]] for definition in corpus.objects]
    tables.metadata.create_all(engine, tables=new_tables)
    engine.dispose()
    app = create_app(make_settings(url, factory.workdir, seed_dir=seed_dir))
    with TestClient(app, base_url="https://testserver") as client:
        yield TestClient(
            app,
            base_url="https://testserver",
            headers={"Authorization": f"Bearer {login(client)}"},
        )


class Orgs:
    """The org of each corpus, set up the first time a case of that corpus runs."""

    def __init__(
        self,
        api: TestClient,
        factory: DatabaseFactory,
        template: str,
        tmp: pytest.TempPathFactory,
    ) -> None:
        self.api = api
        self.factory = factory
        self.template = template
        self.tmp = tmp
        self.orgs: dict[str, Org] = {}
        self.closers: list[Iterator[TestClient]] = []
        # A corpus whose setup failed fails its other cases with the same error, without a
        # database of its own each (they would hold the server's connections to the end).
        self.failures: dict[str, Exception] = {}

    def get(self, corpus_name: str) -> Org:
        if corpus_name in self.failures:
            raise self.failures[corpus_name]
        if corpus_name not in self.orgs:
            try:
                self.orgs[corpus_name] = self._open(CORPORA[corpus_name])
            except Exception as error:
                self.failures[corpus_name] = error
                raise
        return self.orgs[corpus_name]

    def _open(self, corpus: Corpus) -> Org:
        client = self.api
        if corpus.objects or corpus.data_categories:
            opened = open_org_with_objects(
                corpus, self.factory, self.template, self.tmp.mktemp("seed")
            )
            client = next(opened)
            self.closers.append(opened)
        return Org(client, create_fixtures(client, corpus))

    def close(self) -> None:
        for opened in self.closers:
            for _ in opened:
                pass


@pytest.fixture(scope="module")
def orgs(
    api: TestClient,
    database_factory: DatabaseFactory,
    seeded_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Orgs]:
    all_orgs = Orgs(api, database_factory, seeded_template, tmp_path_factory)
    yield all_orgs
    all_orgs.close()


# -- comparing records -----------------------------------------------------------------------------


def canonical(value: Any) -> Any:
    """A form that compares key order and number types too (COUNT is an int, SUM a float)."""
    if isinstance(value, dict):
        return ("object", tuple((key, canonical(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("array", tuple(canonical(item) for item in value))
    return (type(value).__name__, value)


def _sort_key(record: Any) -> str:
    return json.dumps(record, sort_keys=True, default=str)


# What Salesforce writes a datetime as; `any_datetime` cases mask such values (audit timestamps).
_DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+0000")


def masked(value: Any, keys: frozenset[str]) -> Any:
    """`value` with each datetime under one of `keys` (at any depth) written `<datetime>`: the
    audit timestamps of fixture records are the clock's, which a case can't spell out."""
    if isinstance(value, list):
        return [masked(item, keys) for item in value]
    if isinstance(value, dict):
        return {
            key: "<datetime>"
            if key in keys and isinstance(item, str) and _DATETIME.fullmatch(item)
            else masked(item, keys)
            for key, item in value.items()
        }
    return value


def has_order_by(query: str) -> bool:
    return re.search(r"\border\s+by\b", query, re.IGNORECASE) is not None


@pytest.mark.parametrize(("corpus_name", "case"), RECORD_CASES)
def test_query_returns_the_expected_records(
    orgs: Orgs, corpus_name: str, case: dict[str, Any]
) -> None:
    assert_records(orgs.get(corpus_name), case)


def assert_records(org: Org, case: dict[str, Any]) -> None:
    """The case's query answers exactly the case's records."""
    query = org.substitute(case["q"])
    endpoint = case.get("endpoint", "query")
    response = org.client.get(f"{API}/{endpoint}", params={"q": query})
    assert response.status_code == 200, response.text
    body = response.json()
    expected = org.expand(case["records"])
    assert list(body) == ["totalSize", "done", "records"]
    assert body["done"] is True
    assert body["totalSize"] == case.get("totalSize", len(expected))
    records = body["records"]
    if not case.get("keep_attributes", False):
        for record in records:
            assert "attributes" in record and next(iter(record)) == "attributes"
        records = [{k: v for k, v in r.items() if k != "attributes"} for r in records]
    records = masked(records, frozenset(case.get("any_datetime", ())))
    if case.get("ordered", has_order_by(query)):
        assert records == expected
        assert canonical(records) == canonical(expected)
    else:
        assert sorted(records, key=_sort_key) == sorted(expected, key=_sort_key)
        assert Counter(map(repr, map(canonical, records))) == Counter(
            map(repr, map(canonical, expected))
        )


# -- comparing errors ------------------------------------------------------------------------------


def positioned(query: str, row: int, column: int, reason: str) -> str:
    """Salesforce's message for an error at (row, column): the line (or a window of a long one),
    a caret under the column, the position, then the reason."""
    line = query.split("\n")[row - 1]
    start = max(0, column - 1 - WINDOW)
    echo = line[start : column - 1 + WINDOW]
    caret = " " * (column - 1 - start) + "^"
    return f"\n{echo}\n{caret}\nERROR at Row:{row}:Column:{column}\n{reason}"


def position_of(query: str, text: str, nth: int) -> tuple[int, int]:
    """The 1-based row and column of the nth occurrence of `text` in `query`."""
    offset = -1
    for _ in range(nth):
        offset = query.index(text, offset + 1)
    row = query.count("\n", 0, offset) + 1
    column = offset - (query.rfind("\n", 0, offset) + 1) + 1
    return row, column


def expected_message(case: dict[str, Any], query: str, placeholders: dict[str, str]) -> str | None:
    def fill(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: placeholders.get(m[1], m[0]), str(text))

    if "message" in case:
        return fill(case["message"])
    if "caret" in case:
        row, column = position_of(query, str(case["caret"]), case.get("nth", 1))
        return positioned(query, row, column, fill(case["reason"]))
    if "at" in case:
        row, column = case["at"]
        return positioned(query, row, column, fill(case["reason"]))
    if "reason" in case:
        return fill(case["reason"])
    return None


@pytest.mark.parametrize(("corpus_name", "case"), ERROR_CASES)
def test_query_fails_as_salesforce_does(
    api: TestClient, orgs: Orgs, corpus_name: str, case: dict[str, Any]
) -> None:
    corpus = CORPORA[corpus_name]
    # A corpus with objects of its own runs its errors on its org: the base org lacks them.
    client = orgs.get(corpus_name).client if corpus.objects else api
    assert_error(client, corpus, case)


def assert_error(api: TestClient, corpus: Corpus, case: dict[str, Any]) -> None:
    """The case's query fails with exactly the case's status, errorCode and message."""
    query = case["q"]
    params = {} if query is None else {"q": query}
    response = api.get(f"{API}/{case.get('endpoint', 'query')}", params=params)
    assert response.status_code == case.get("status", 400), response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, list) and len(body) == 1, body
    error = body[0]
    assert {"message", "errorCode"} <= set(error), error
    assert error["errorCode"] == case["errorCode"], error
    message = error["message"]
    assert isinstance(message, str) and message
    expected = expected_message(case, query or "", corpus.placeholders)
    if expected is not None:
        assert message == expected
    if "endswith" in case:
        assert message.endswith(case["endswith"]), message


def test_the_corpus_is_large() -> None:
    assert len(RECORD_CASES) + len(ERROR_CASES) >= 220
    assert len(ERROR_CASES) >= 60
