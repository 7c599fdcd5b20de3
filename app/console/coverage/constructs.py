"""The SOQL and SOSL constructs of the report (constructs.yaml beside this file, one per item of
the reference's checklist): each one supported when its example prepares through localforce's
own pipeline on the original org (or, for one Salesforce refuses, fails as Salesforce does),
and the tests whose query text uses it."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from app.console.coverage.sources import QUOTED, SOQL_TEXT, SOSL_TEXT, TestCase, TestIndex
from app.errors import SalesforceError
from app.metadata.registry import SchemaRegistry
from app.services import query, search
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.function_registry import FUNCTIONS
from app.storage.backends import registered_backends
from app.storage.tables import TableSet

CONSTRUCTS = Path(__file__).parent / "constructs.yaml"


def load_catalog() -> dict[str, list[dict[str, Any]]]:
    """app/console/constructs.yaml: the constructs of each language."""
    catalog: dict[str, list[dict[str, Any]]] = yaml.safe_load(
        CONSTRUCTS.read_text(encoding="utf-8")
    )
    return catalog


def detector(entry: dict[str, Any]) -> re.Pattern[str]:
    return re.compile(str(entry["detect"]), re.IGNORECASE)


class Schemas:
    """The original org's registry, or it plus a SOQL corpus's objects and data categories."""

    def __init__(self, root: Path, scratch: Path) -> None:
        self.root = root
        self.scratch = scratch
        self._loaded: dict[str | None, tuple[SchemaRegistry, TableSet]] = {}

    def __call__(self, corpus: str | None) -> tuple[SchemaRegistry, TableSet]:

        if corpus not in self._loaded:
            original = self.root / "seed" / "orgs" / "original" / "objects"
            objects = original
            if corpus is not None:
                raw = yaml.safe_load(
                    (self.root / "tests" / "soql" / "fixtures" / f"{corpus}.yaml").read_text(
                        encoding="utf-8"
                    )
                )
                objects = self.scratch / corpus / "objects"
                objects.mkdir(parents=True)
                for path in original.glob("*.yaml"):
                    shutil.copy(path, objects / path.name)
                for definition in raw.get("objects", ()):
                    text = yaml.safe_dump(definition, sort_keys=False)
                    (objects / f"{definition['name']}.yaml").write_text(text, encoding="utf-8")
                if raw.get("data_categories"):
                    text = yaml.safe_dump(raw["data_categories"], sort_keys=False)
                    (objects.parent / "data_categories.yaml").write_text(text, encoding="utf-8")
            registry = SchemaRegistry.from_directory(objects)
            self._loaded[corpus] = (registry, TableSet(registry))
        return self._loaded[corpus]


def _prepare(language: str, example: str, schema: tuple[SchemaRegistry, TableSet]) -> None:
    """Prepare the example as a request would (a SOSL search on every back end: its index
    differs between them), with the built-in functions, on a calendar of no org's."""
    registry, tables = schema
    calendar, functions = UTC_EPOCH_CALENDAR, FUNCTIONS
    if language == "soql":
        text = query.checked_text(example)
        query.prepare(registry, tables, text, False, calendar, functions)
        return
    for backend in registered_backends():
        search.prepare(registry, tables, backend.name, example, calendar, functions)


# The last IN list of an example (the list a `pad_to` entry grows).
_IN_LIST = re.compile(r"\bIN\s*\([^()]*\)", re.IGNORECASE)


def example_text(entry: dict[str, Any]) -> str:
    """The entry's example; with `pad_to: N`, its last IN list grown by items (`, 'x'`, the
    last one longer as needed) until the text is N characters long: a limit on the length of
    a query, shown by an example too long to write out."""
    example = str(entry["example"])
    size = int(entry.get("pad_to") or 0)
    items, extra = divmod(size - len(example), len(", 'x'"))
    if items < 1:
        return example
    end = list(_IN_LIST.finditer(example))[-1].end() - 1
    filler = ", 'x'" * (items - 1) + ", '" + "x" * (1 + extra) + "'"
    return example[:end] + filler + example[end:]


def _reason(error: Exception) -> str:

    assert isinstance(error, SalesforceError)
    reason = str(getattr(error, "reason", None) or error.message)
    return f"{error.error_code}: {' '.join(reason.split())}"


def support(language: str, entry: dict[str, Any], schemas: Schemas) -> tuple[bool, str]:
    """Whether localforce handles the entry's example as Salesforce does, and if not, why."""

    rejected = entry.get("rejected")
    try:
        _prepare(language, example_text(entry), schemas(entry.get("schema")))
    except SalesforceError as error:
        if rejected is True or rejected == error.error_code:
            return True, ""
        if rejected:
            return False, f"answers {_reason(error)}; Salesforce answers {rejected}"
        return False, _reason(error)
    if rejected:
        code = "an error" if rejected is True else str(rejected)
        return False, f"accepted; Salesforce answers {code}"
    return True, ""


def constructs(
    language: str, entries: list[dict[str, Any]], root: Path, tests: TestIndex
) -> list[dict[str, Any]]:
    detectors = [detector(entry) for entry in entries]
    proofs = construct_tests(tests, language, detectors)
    rows = []
    with tempfile.TemporaryDirectory(prefix="localforce-coverage-") as scratch:
        schemas = Schemas(root, Path(scratch))
        for index, entry in enumerate(entries):
            supported, note = support(language, entry, schemas)
            rows.append(
                {
                    "construct": str(entry["construct"]),
                    "section": str(entry["section"]),
                    "example": str(entry["example"]),
                    "supported": supported,
                    "note": note,
                    "tests": sorted(proofs[index]),
                }
            )
    return rows


class _Detections:
    """Which constructs a query text uses, read once per text."""

    def __init__(self, detectors: list[re.Pattern[str]]) -> None:
        self._detectors = detectors
        self._found: dict[str, tuple[int, ...]] = {}

    def __call__(self, text: str) -> tuple[int, ...]:
        if text not in self._found:
            self._found[text] = tuple(i for i, rx in enumerate(self._detectors) if rx.search(text))
        return self._found[text]


def construct_tests(
    suite: TestIndex, language: str, detectors: list[re.Pattern[str]]
) -> list[set[str]]:
    """For each construct, the tests with query text using it: in their strings, or in the
    cases of a fixture file they read."""
    proofs: list[set[str]] = [set() for _ in detectors]
    uses = _Detections(detectors)
    is_query = SOQL_TEXT if language == "soql" else SOSL_TEXT
    for case in suite.cases:
        for text in _queries(case, is_query):
            for index in uses(text):
                proofs[index].add(case.test_id)
    for fixture in suite.fixtures(language):
        readers = [case.test_id for case in suite.cases if fixture.read_by(case)]
        for text in fixture.cases if readers else []:
            for index in uses(text):
                proofs[index].update(readers)
    return proofs


def _queries(case: TestCase, is_query: re.Pattern[str]) -> list[str]:
    """The query texts among a test's strings. A query with a placeholder outside its quotes
    is a template: the test's other strings may be the parts it is filled with, so all count."""
    queries = [text for text in case.strings if is_query.search(text)]
    if any("{}" in QUOTED.sub("''", text) for text in queries):
        return list(case.strings)
    return queries
