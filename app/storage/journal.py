"""The change journal: every write of an episode records what it replaced, in the same
transaction, so a reset can replay the journal backwards at a cost that follows the writes, not
the size of the org. The same entries give the episode's diff.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, select, update

from app.storage.platform import IdSequence, JournalEntry
from app.storage.tables import TableSet

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


def log_sequence(conn: Connection, sobject: str, last_number: int | None) -> None:
    """Record an id sequence's value before it moved (None: the sequence did not exist)."""
    before = None if last_number is None else str(last_number)
    conn.execute(insert(JOURNAL).values(sobject=sobject, op="sequence", before=before))


def journal_size(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(JOURNAL)).scalar_one())


def undo_all(conn: Connection, tables: TableSet) -> int:
    """Restore every row and sequence the journal names to its state before the episode;
    returns the number of entries undone.

    Only each record's first entry matters (what it was before the episode touched it), so the
    work is one batched statement per object, whatever the number of writes in between.
    """
    entries = conn.execute(
        select(JOURNAL.c.sobject, JOURNAL.c.record_id, JOURNAL.c.op, JOURNAL.c.before).order_by(
            JOURNAL.c.seq
        )
    ).all()
    sequences: dict[str, str | None] = {}
    first: dict[tuple[str, str], tuple[str, str | None]] = {}
    for sobject, record_id, op, before in entries:
        if op == "sequence":
            sequences.setdefault(sobject, before)
        else:
            first.setdefault((sobject, record_id), (op, before))
    created: dict[str, list[str]] = {}
    restored: dict[str, list[dict[str, Any]]] = {}
    for (sobject, record_id), (op, before) in first.items():
        if op == "insert":
            created.setdefault(sobject, []).append(record_id)
        elif before is not None:
            restored.setdefault(sobject, []).append(decode_row(before))
    for sobject, ids in created.items():
        table = tables[sobject]
        conn.execute(delete(table).where(table.c.Id.in_(ids)))
    for sobject, rows in restored.items():
        table = tables[sobject]
        columns = [name for name in rows[0] if name != "Id"]
        statement = (
            update(table)
            .where(table.c.Id == bindparam("record_id"))
            .values({name: bindparam(f"v_{name}") for name in columns})
        )
        conn.execute(
            statement,
            [
                {"record_id": row["Id"], **{f"v_{name}": row[name] for name in columns}}
                for row in rows
            ],
        )
    for sobject, before in sequences.items():
        if before is None:
            conn.execute(delete(SEQUENCES).where(SEQUENCES.c.sobject == sobject))
        else:
            conn.execute(
                update(SEQUENCES)
                .where(SEQUENCES.c.sobject == sobject)
                .values(last_number=int(before))
            )
    conn.execute(delete(JOURNAL))
    return len(entries)


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
        .where(JOURNAL.c.op != "sequence")
        .order_by(JOURNAL.c.seq)
    ).all()
    first: dict[tuple[str, str], Touched] = {}
    for sobject, record_id, op, before in entries:
        key = (sobject, record_id)
        if key not in first:
            first[key] = Touched(sobject, record_id, None if op == "insert" else decode_row(before))
    return list(first.values())
