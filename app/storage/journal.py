"""The change journal: every write of an episode records what it replaced, in the same
transaction, so a reset can replay the journal backwards at a cost that follows the writes, not
the size of the org. The same entries give the episode's diff.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, Delete, Table, bindparam, delete, func, insert, select, update

from app.storage.platform import IdSequence, JournalEntry
from app.storage.tables import TableSet
from app.storage.text_keys import with_keys

JOURNAL = JournalEntry.__table__  # type: ignore[attr-defined]
SEQUENCES = IdSequence.__table__  # type: ignore[attr-defined]


def _encode(value: Any) -> Any:
    # Tagged, so that decoding restores the exact Python type the column holds.
    if isinstance(value, datetime):
        return ["dt", value.isoformat()]
    if isinstance(value, date):
        return ["d", value.isoformat()]
    if isinstance(value, list):
        return ["l", value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        tag, payload = value
        if tag == "dt":
            return datetime.fromisoformat(payload)
        if tag == "d":
            return date.fromisoformat(payload)
        return payload
    return value


def encode_row(row: dict[str, Any]) -> str:
    return json.dumps({name: _encode(value) for name, value in row.items()})


def decode_row(text: str) -> dict[str, Any]:
    return {name: _decode(value) for name, value in json.loads(text).items()}


def log_insert(conn: Connection, sobject: str, record_id: str) -> None:
    conn.execute(insert(JOURNAL).values(sobject=sobject, record_id=record_id, op="insert"))


def log_update(conn: Connection, sobject: str, before: dict[str, Any]) -> None:
    """Record a row as it was before an update (soft deletes are updates too)."""
    conn.execute(
        insert(JOURNAL).values(
            sobject=sobject, record_id=before["Id"], op="update", before=encode_row(before)
        )
    )


# A Bulk job's mark in the journal: written in the transaction of a chunk of the job's record
# writes, it says they are in (a runner taking the job up again after a crash finds it and does
# not run them twice) and holds their results. Reset clears it with the rest; undo ignores it.
BULK_JOB_OP = "bulk_job"
RECORD_OPS = ("insert", "update")


def log_bulk_job(conn: Connection, job_id: str, results: str) -> None:
    conn.execute(
        insert(JOURNAL).values(sobject="", record_id=job_id, op=BULK_JOB_OP, before=results)
    )


def bulk_job_chunks(conn: Connection, job_id: str) -> list[str]:
    """The results a Bulk job logged with the writes of each chunk of its rows, in order: the
    chunks whose writes are in."""
    found = conn.execute(
        select(JOURNAL.c.before)
        .where(JOURNAL.c.op == BULK_JOB_OP, JOURNAL.c.record_id == job_id)
        .order_by(JOURNAL.c.seq)
    ).scalars()
    return [str(text) for text in found]


def log_sequence(conn: Connection, sobject: str, last_number: int | None) -> None:
    """Record an id sequence's value before it moved (None: the sequence did not exist)."""
    before = None if last_number is None else str(last_number)
    conn.execute(insert(JOURNAL).values(sobject=sobject, op="sequence", before=before))


def journal_size(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(JOURNAL)).scalar_one())


# Reset's statements, built once: a reset is a handful of statements, and building them
# afresh each time cost as much as running them.
_ENTRY_COUNTS = select(JOURNAL.c.sobject, JOURNAL.c.op, func.count()).group_by(
    JOURNAL.c.sobject, JOURNAL.c.op
)
_CREATED_IDS = select(JOURNAL.c.record_id).where(
    JOURNAL.c.sobject == bindparam("object_name"), JOURNAL.c.op == "insert"
)
_FIRST_UPDATES = (
    select(JOURNAL.c.record_id, JOURNAL.c.before)
    .where(
        JOURNAL.c.sobject == bindparam("object_name"),
        JOURNAL.c.op == "update",
        JOURNAL.c.record_id.not_in(_CREATED_IDS),
    )
    .order_by(JOURNAL.c.seq)
)
_FIRST_SEQUENCES = select(JOURNAL.c.sobject, JOURNAL.c.before).where(
    JOURNAL.c.seq.in_(
        select(func.min(JOURNAL.c.seq))
        .where(JOURNAL.c.op == "sequence")
        .group_by(JOURNAL.c.sobject)
    )
)
_DROP_SEQUENCE = delete(SEQUENCES).where(SEQUENCES.c.sobject == bindparam("object_name"))
_SET_SEQUENCE = (
    update(SEQUENCES)
    .where(SEQUENCES.c.sobject == bindparam("object_name"))
    .values(last_number=bindparam("number"))
)
_CLEAR_JOURNAL = delete(JOURNAL)


@cache
def _delete_created(table: Table) -> Delete:
    return delete(table).where(table.c.Id.in_(_CREATED_IDS))


def undo_all(conn: Connection, tables: TableSet) -> int:
    """Restore every row and sequence the journal names to its state before the episode;
    returns the number of entries undone.

    Only each record's first entry matters (what it was before the episode touched it), so the
    work is a few set-based statements per object, whatever the number of writes in between:
    the records the episode created are deleted by their ids in the journal, unread.
    """
    counts = conn.execute(_ENTRY_COUNTS).all()
    objects: dict[str, set[str]] = {}
    for sobject, op, _ in counts:
        objects.setdefault(op, set()).add(sobject)
    # An object the schema no longer has (a custom object the sandbox removed) is skipped: its
    # table goes with the reset (app.storage.schema_ddl).
    for sobject in sorted(objects.get("insert", ())):
        if sobject in tables:
            conn.execute(_delete_created(tables[sobject]), {"object_name": sobject})
    for sobject in sorted(objects.get("update", ())):
        if sobject in tables:
            _restore_updated(conn, tables, sobject)
    if "sequence" in objects:
        for sobject, before in conn.execute(_FIRST_SEQUENCES).all():
            if before is None:
                conn.execute(_DROP_SEQUENCE, {"object_name": sobject})
            else:
                conn.execute(_SET_SEQUENCE, {"object_name": sobject, "number": int(before)})
    conn.execute(_CLEAR_JOURNAL)
    return sum(count for _, op, count in counts if op != BULK_JOB_OP)


def _restore_updated(conn: Connection, tables: TableSet, sobject: str) -> None:
    """Write back the rows as they were before the episode's first update of each (records
    the episode created are the delete's)."""
    first: dict[str, str] = {}
    for record_id, before in conn.execute(_FIRST_UPDATES, {"object_name": sobject}):
        first.setdefault(record_id, before)
    if not first:  # every record updated was also created in the episode
        return
    table = tables[sobject]
    # A before-image is the record's fields; the keys of those that have them go back too.
    # Its fields are those of the schema it was taken under: a field added since was empty
    # before the episode, and one removed since is no column of `table`.
    rows = [with_keys(table, known_columns(table, decode_row(before))) for before in first.values()]
    columns = sorted({name for row in rows for name in row} - {"Id"})
    statement = (
        update(table)
        .where(table.c.Id == bindparam("record_id"))
        .values({name: bindparam(f"v_{name}") for name in columns})
    )
    conn.execute(
        statement,
        [
            {"record_id": row["Id"], **{f"v_{name}": row.get(name) for name in columns}}
            for row in rows
        ],
    )


def known_columns(table: Table, image: dict[str, Any]) -> dict[str, Any]:
    """A stored row image's values for the columns `table` has."""
    return {name: value for name, value in image.items() if name in table.c}


@dataclass(frozen=True)
class Touched:
    """A record the episode wrote: its state before the first write (None if it is new)."""

    sobject: str
    record_id: str
    before: dict[str, Any] | None


def touched_records(conn: Connection) -> list[Touched]:
    """Every record written since the last reset, in the order first written."""
    entries = conn.execute(
        select(JOURNAL.c.sobject, JOURNAL.c.record_id, JOURNAL.c.op, JOURNAL.c.before)
        .where(JOURNAL.c.op.in_(RECORD_OPS))
        .order_by(JOURNAL.c.seq)
    ).all()
    first: dict[tuple[str, str], Touched] = {}
    for sobject, record_id, op, before in entries:
        key = (sobject, record_id)
        if key not in first:
            first[key] = Touched(sobject, record_id, None if op == "insert" else decode_row(before))
    return list(first.values())


def recently_written(conn: Connection, limit: int) -> list[tuple[str, str]]:
    """(sobject, record id) of the records written since the last reset, the latest first."""
    last = func.max(JOURNAL.c.seq)
    rows = conn.execute(
        select(JOURNAL.c.sobject, JOURNAL.c.record_id)
        .where(JOURNAL.c.op.in_(RECORD_OPS))
        .group_by(JOURNAL.c.sobject, JOURNAL.c.record_id)
        .order_by(last.desc())
        .limit(limit)
    ).all()
    return [(str(sobject), str(record_id)) for sobject, record_id in rows]
