"""Importing a CRMArena SQLite dump into an org: every id kept, values converted to the field
types, the fields the dumps lack filled in, a report per object, and one transaction.

The work is in two steps. `read_dump` is pure: it reads the dump, checks its layout against the
org's metadata, converts and completes every row, and reports what it did; it touches no
database. Only when the whole dump has been read without error does `import_dump` replace the
org's data, in one transaction (`replace_org_data`), so a bad dump leaves the org as it was.

Decisions, for a dump in the CRMArena layout:

- A table whose name is not an object of the org is an error (probably a dump of another org);
  so is a missing table of an object the org's dump is known to hold (`DUMP_TABLES`). Objects of
  the metadata outside that list may be absent, and stay empty.
- A column that is not a field of the object is an error ("wrong column"), except the known
  harmless extras in `IGNORED_COLUMNS` (the row index a DataFrame export adds, the REST API's
  per-record `attributes`), which are skipped and reported. Column names compare
  case-insensitively, as Salesforce field names do (the dumps spell `PriceBookEntryId`).
- A value that cannot be read as its field's type rejects its row. Rejected rows fail the
  import, naming table, row, id and column, unless `skip_invalid` is set; then they are left out
  and reported.
- Fields the dump lacks get their defaults, the audit fields and derived values seeding gives
  (`complete_record`; the org's first user by id owns what has no owner), plus what the
  benchmark's tools need: Knowledge__kav.PublishStatus 'Online' and Language 'en_US',
  EmailMessage.ToAddress from the e-mail addresses of the ToIds recipients, and
  Pricebook2.IsStandard for the book named 'Standard Price Book'. A dump value is kept for
  auto-number fields; formula fields and compound names are always computed.
- Ids minted after the import never collide with imported ones: new ids use localforce's own
  pod, and each id sequence starts after both the row count and any imported id of that pod.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.seeding.conversion import BadValue, convert, converter
from app.seeding.dump_reader import Dump, DumpError, open_dump
from app.seeding.loading import OrgStamp, ProgressCallback, Rows, replace_org_data
from app.seeding.pipeline import complete_record, content_hash
from app.seeding.standard_records import standard_records
from app.storage.ids import BASE62, POD
from app.storage.platform import IMPORTED_SOURCE_PREFIX
from app.storage.tables import TableSet

ORIGINAL_TABLES = (
    "Account",
    "Case",
    "CaseHistory__c",
    "Contact",
    "EmailMessage",
    "Issue__c",
    "Knowledge__kav",
    "LiveChatTranscript",
    "Order",
    "OrderItem",
    "Pricebook2",
    "PricebookEntry",
    "Product2",
    "ProductCategory",
    "ProductCategoryProduct",
    "User",
)
PRO_TABLES = (
    *ORIGINAL_TABLES,
    "Contract",
    "Event",
    "Lead",
    "Opportunity",
    "OpportunityLineItem",
    "Quote",
    "QuoteLineItem",
    "Task",
    "Territory2",
    "UserTerritory2Association",
    "VoiceCallTranscript__c",
)
# The objects each org's dump holds a table for.
DUMP_TABLES: dict[str, tuple[str, ...]] = {
    "original": ORIGINAL_TABLES,
    "b2b": PRO_TABLES,
    "b2c": PRO_TABLES,
}
# Where CRMArena publishes each org's dump.
DUMP_BASE_URL = "https://github.com/SalesforceAIResearch/CRMArena/raw/main/local_data/"
DUMP_FILES = {
    "original": "crmarena_data.db",
    "b2b": "crmarenapro_b2b_data.db",
    "b2c": "crmarenapro_b2c_data.db",
}
# Columns that are not fields but are known to be harmless: skipped, and reported.
IGNORED_COLUMNS = frozenset({"index", "level_0", "attributes"})
STANDARD_PRICEBOOK = "Standard Price Book"
# How many rejections an error message spells out before it summarizes.
SHOWN_REJECTIONS = 3
PROGRESS_EVERY = 1000
# The owners whose e-mail address a ToIds recipient resolves to.
RECIPIENT_EMAILS = {"User": "Email", "Contact": "Email", "Lead": "Email"}


@dataclass(frozen=True)
class Rejection:
    """A value the importer could not read: where it is and why."""

    table: str
    row: int
    record_id: str | None
    column: str
    reason: str

    def describe(self) -> str:
        where = f"{self.table} row {self.row}"
        if self.record_id:
            where += f" (Id {self.record_id})"
        return f"{where}, column {self.column}: {self.reason}"


@dataclass
class ObjectReport:
    """What the import did with one object's table."""

    sobject: str
    table: str | None
    loaded: int = 0
    converted: Counter[str] = field(default_factory=Counter)
    filled: Counter[str] = field(default_factory=Counter)
    rejections: list[Rejection] = field(default_factory=list)
    rejected_rows: int = 0
    ignored_columns: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def converted_values(self) -> int:
        return sum(self.converted.values())

    def reasons(self) -> list[str]:
        """The rejections grouped by column, each with its first row and a count."""
        groups: dict[str, list[Rejection]] = {}
        for rejection in self.rejections:
            groups.setdefault(rejection.column, []).append(rejection)
        return [
            f"{column}: {found[0].reason} (row {found[0].row}"
            + (f" and {len(found) - 1} more)" if len(found) > 1 else ")")
            for column, found in groups.items()
        ]

    def notes(self) -> list[str]:
        notes = [
            f"{name} filled in {count:,} row{'' if count == 1 else 's'}"
            for name, count in self.filled.items()
        ]
        if self.ignored_columns:
            notes.append(f"ignored column(s): {', '.join(self.ignored_columns)}")
        return notes + self.warnings


@dataclass
class DumpContents:
    """A dump read, converted and completed: ready to load."""

    org: str
    sha256: str
    rows: Rows
    reports: list[ObjectReport]
    sequences: dict[str, int]


@dataclass(frozen=True)
class ImportResult:
    org: str
    source: str
    sha256: str
    content_hash: str
    reports: list[ObjectReport]
    seconds: float

    @property
    def counts(self) -> dict[str, int]:
        return {report.sobject: report.loaded for report in self.reports}


class DumpRejected(DumpError):
    """Rows of the dump hold values that cannot be read; the reports say which."""

    def __init__(self, reports: list[ObjectReport]) -> None:
        self.reports = reports
        rejections = [r for report in reports for r in report.rejections]
        rows = sum(report.rejected_rows for report in reports)
        shown = "; ".join(r.describe() for r in rejections[:SHOWN_REJECTIONS])
        more = len(rejections) - SHOWN_REJECTIONS
        summary = f" (and {more} more problems)" if more > 0 else ""
        super().__init__(
            f"{rows} row(s) of the dump cannot be imported: {shown}{summary}. "
            "Fix the dump, or pass --skip-invalid-rows to import without those rows."
        )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_tables(dump: Dump, registry: SchemaRegistry, org: str) -> None:
    unknown = [table for table in dump.tables if registry.get(table) is None]
    if unknown:
        others = ", ".join(f"--org {name}" for name in DUMP_TABLES if name != org)
        raise DumpError(
            f"Table {unknown[0]} of the dump is not an object of org {org}"
            + (f" (nor are: {', '.join(unknown[1:])})" if len(unknown) > 1 else "")
            + f". Is this a dump of another org? ({others})"
        )
    expected = DUMP_TABLES.get(org, tuple(sobject.name for sobject in registry))
    missing = [name for name in expected if registry.get(name) and dump.table(name) is None]
    if missing:
        raise DumpError(
            f"The dump has no table {missing[0]}"
            + (f" (nor {', '.join(missing[1:])})" if len(missing) > 1 else "")
            + f": a CRMArena {org} dump has one table per object ({', '.join(expected)})."
        )


def _column_plan(
    dump: Dump, table: str, sobject: SObjectDef, org: str, report: ObjectReport
) -> list[tuple[int, FieldDef]]:
    """Which dump column (by position) fills which field; wrong columns are errors."""
    plan: list[tuple[int, FieldDef]] = []
    seen: dict[str, str] = {}
    for position, column in enumerate(dump.columns(table)):
        target = sobject.field(column)
        if target is None:
            if column.lower() in IGNORED_COLUMNS:
                report.ignored_columns.append(column)
                continue
            raise DumpError(
                f"Table {table}, column {column}: org {org} has no field "
                f"{sobject.name}.{column} (wrong column; is this a dump of another org?)"
            )
        if target.name in seen:
            raise DumpError(
                f"Table {table} has two columns for the field {sobject.name}.{target.name}: "
                f"{seen[target.name]} and {column}"
            )
        seen[target.name] = column
        plan.append((position, target))
    if "Id" not in seen:
        raise DumpError(f"Table {table} has no Id column: the importer keeps every record's id")
    return plan


def _read_table(
    dump: Dump,
    table: str,
    sobject: SObjectDef,
    org: str,
    report: ObjectReport,
    advance: Callable[[int], None],
) -> list[dict[str, Any]]:
    columns = _column_plan(dump, table, sobject, org, report)
    plan = [(position, target, converter(target)) for position, target in columns]
    id_position = next(position for position, f, _ in plan if f.name == "Id")
    records: list[dict[str, Any]] = []
    first_row_of: dict[str, int] = {}
    prefixes: Counter[str] = Counter()
    pending = 0
    for number, raw in enumerate(dump.rows(table), start=1):
        record, changed, problems = _convert_row(plan, raw)
        record_id: str | None = record.get("Id")
        problems += _id_problems(record_id, problems, first_row_of)
        if problems or record_id is None:
            shown_id = raw[id_position] if isinstance(raw[id_position], str) else None
            report.rejected_rows += 1
            report.rejections.extend(
                Rejection(table, number, shown_id, name, reason) for name, reason in problems
            )
        else:
            first_row_of[record_id] = number
            report.converted.update(changed)
            prefixes[record_id[:3]] += 1
            records.append(record)
        pending += 1
        if pending == PROGRESS_EVERY:
            advance(pending)
            pending = 0
    advance(pending)
    report.warnings.extend(_foreign_prefixes(prefixes, sobject.key_prefix))
    return records


def _convert_row(
    plan: list[tuple[int, FieldDef, Any]], raw: Sequence[Any]
) -> tuple[dict[str, Any], list[str], list[tuple[str, str]]]:
    """A dump row's record, the fields whose values conversion changed, and the (field,
    reason) of each value that cannot be read as its field's type."""
    record: dict[str, Any] = {}
    changed: list[str] = []
    problems: list[tuple[str, str]] = []
    for position, target, read in plan:
        try:
            value, was_changed = convert(target, read, raw[position])
        except BadValue as error:
            problems.append((target.name, str(error)))
            continue
        record[target.name] = value
        if was_changed:
            changed.append(target.name)
    return record, changed, problems


def _id_problems(
    record_id: str | None, problems: list[tuple[str, str]], first_row_of: dict[str, int]
) -> list[tuple[str, str]]:
    """What is wrong with a row's id beyond its conversion: none at all, or a repeated one."""
    if record_id is None and not any(name == "Id" for name, _ in problems):
        return [("Id", "the row has no Id")]
    if record_id is not None and record_id in first_row_of:
        return [("Id", f"the same Id as row {first_row_of[record_id]}")]
    return []


def _foreign_prefixes(prefixes: Counter[str], key_prefix: str) -> list[str]:
    """A warning per id prefix of a table that is not its object's key prefix."""
    foreign = {prefix: count for prefix, count in prefixes.items() if prefix != key_prefix}
    return [
        f"{count:,} id(s) start with {prefix}, not the key prefix {key_prefix} "
        "the org's metadata gives"
        for prefix, count in sorted(foreign.items())
    ]


def _fill_null_defaults(sobject: SObjectDef, row: dict[str, Any], report: ObjectReport) -> None:
    """A checkbox is never null, nor a required field that has a default."""
    for target in sobject.fields:
        if row[target.name] is not None or target.system:
            continue
        if target.type is FieldType.BOOLEAN:
            row[target.name] = bool(target.default)
        elif not target.nillable and target.default is not None:
            row[target.name] = target.default
            report.filled[target.name] += 1


def _recipient_emails(records: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    emails: dict[str, str] = {}
    for name, email_field in RECIPIENT_EMAILS.items():
        for record in records.get(name, []):
            if record.get(email_field):
                emails[record["Id"]] = record[email_field]
    return emails


def _fill_for_tools(
    sobject: SObjectDef,
    row: dict[str, Any],
    present: set[str],
    emails: dict[str, str],
    report: ObjectReport,
) -> None:
    """The values the benchmark's tools rely on that the dumps do not hold."""

    def fill(name: str, value: Any) -> None:
        """Set `name` unless the dump gave it a value (a default does not count)."""
        missing = name not in present or row[name] is None
        if sobject.field(name) is not None and missing and value is not None:
            row[name] = value
            report.filled[name] += 1

    if sobject.name == "Knowledge__kav":
        fill("PublishStatus", "Online")
        fill("Language", "en_US")
    elif sobject.name == "EmailMessage":
        found = [emails[i] for i in row.get("ToIds") or [] if i in emails]
        fill("ToAddress", "; ".join(found) or None)
    elif (
        sobject.name == "Pricebook2"
        and "IsStandard" not in present
        and row.get("Name") == STANDARD_PRICEBOOK
    ):
        row["IsStandard"] = True
        report.filled["IsStandard"] += 1


def _ordinal(record_id: str) -> int:
    """The record number of an id minted by localforce's own pod, else 0."""
    if record_id[3:6] != POD + "0":
        return 0
    number = 0
    for char in record_id[6:15]:
        number = number * 62 + BASE62.index(char)
    return number


@dataclass
class _Reading:
    """The dump's tables read, before completion: per object, its report, its records and the
    fields the dump has a column for."""

    reports: list[ObjectReport] = field(default_factory=list)
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    present: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class _Progress:
    """Rows read so far across the dump's tables, told to `on_progress`."""

    total: int
    on_progress: ProgressCallback | None
    done: int = 0

    def advance(self, name: str, count: int) -> None:
        self.done += count
        if self.on_progress is not None:
            self.on_progress(f"Reading {name}", self.done, self.total)


def read_dump(
    path: Path,
    registry: SchemaRegistry,
    *,
    org: str,
    skip_invalid: bool = False,
    on_progress: ProgressCallback | None = None,
) -> DumpContents:
    """Read, check, convert and complete a dump. Raises DumpError (DumpRejected for bad rows)."""
    sha256 = file_sha256(path) if path.is_file() else ""
    with open_dump(path) as dump:
        _check_tables(dump, registry, org)
        reading = _read_tables(dump, registry, org, on_progress)
    if any(report.rejections for report in reading.reports) and not skip_invalid:
        raise DumpRejected(reading.reports)
    users = sorted(record["Id"] for record in reading.records.get("User", []))
    admin_id = users[0] if users else ""
    emails = _recipient_emails(reading.records)
    rows: Rows = {}
    sequences: dict[str, int] = {}
    for sobject, report in zip(registry, reading.reports, strict=True):
        completed = _complete_table(sobject, reading, report, admin_id, emails)
        rows[sobject.name] = completed
        report.loaded = len(completed)
        highest = max((_ordinal(row["Id"]) for row in completed), default=0)
        sequences[sobject.name] = max(len(completed), highest)
    return DumpContents(
        org=org, sha256=sha256, rows=rows, reports=reading.reports, sequences=sequences
    )


def _read_tables(
    dump: Dump, registry: SchemaRegistry, org: str, on_progress: ProgressCallback | None
) -> _Reading:
    """Every object's table of the dump read; an object without one has the org's standard
    records (a dump without the Organization, or the profiles, still gets the org's own)."""
    reading = _Reading()
    standard = standard_records(org)  # built once, not per missing table
    found = {sobject.name: dump.table(sobject.name) for sobject in registry}
    total = sum(dump.count(table) for table in found.values() if table is not None)
    progress = _Progress(total, on_progress)
    for sobject in registry:
        table = found[sobject.name]
        report = ObjectReport(sobject=sobject.name, table=table)
        reading.reports.append(report)
        if table is None:
            reading.records[sobject.name] = standard.get(sobject.name, [])
            reading.present[sobject.name] = set()
            continue
        advance = functools.partial(progress.advance, sobject.name)
        reading.records[sobject.name] = _read_table(dump, table, sobject, org, report, advance)
        reading.present[sobject.name] = {
            target.name for column in dump.columns(table) if (target := sobject.field(column))
        }
    return reading


def _complete_table(
    sobject: SObjectDef,
    reading: _Reading,
    report: ObjectReport,
    admin_id: str,
    emails: dict[str, str],
) -> list[dict[str, Any]]:
    """An object's records completed into rows; a dump's auto-number values are kept."""
    auto_numbers = [f.name for f in sobject.fields if f.auto_number]
    completed = []
    for number, record in enumerate(reading.records[sobject.name], start=1):
        row = complete_record(sobject, record, number, admin_id)
        for name in auto_numbers:
            if record.get(name) is not None:
                row[name] = record[name]
        _fill_null_defaults(sobject, row, report)
        _fill_for_tools(sobject, row, reading.present[sobject.name], emails, report)
        completed.append(row)
    return completed


def import_dump(
    engine: Engine,
    registry: SchemaRegistry,
    tables: TableSet,
    path: Path,
    *,
    org: str,
    source: str | None = None,
    skip_invalid: bool = False,
    on_progress: ProgressCallback | None = None,
) -> ImportResult:
    """Replace the org's data with the dump's, or raise DumpError and change nothing."""
    started = time.perf_counter()
    contents = read_dump(
        path, registry, org=org, skip_invalid=skip_invalid, on_progress=on_progress
    )
    digest = content_hash(registry, contents.rows)

    def loading(name: str, done: int, total: int) -> None:
        if on_progress is not None:
            on_progress(f"Loading {name}", done, total)

    replace_org_data(
        engine,
        tables,
        contents.rows,
        stamp=OrgStamp(
            org=org,
            seed=0,
            content_hash=digest,
            source=f"{IMPORTED_SOURCE_PREFIX}{contents.sha256}",
        ),
        sequences=contents.sequences,
        on_progress=loading,
    )
    return ImportResult(
        org=org,
        source=source or str(path),
        sha256=contents.sha256,
        content_hash=digest,
        reports=contents.reports,
        seconds=time.perf_counter() - started,
    )
