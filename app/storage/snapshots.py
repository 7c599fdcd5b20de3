"""Named snapshots of a sandbox, kept in its own database beside the change journal.

A snapshot holds what the journal says the episode touched, as it stood when the snapshot was
taken: the rows and the id sequences. Restoring is a reset (the journal replayed backwards)
followed by writing those rows back, journaled like any write, so a later reset still returns
to the seeded state and the diff still reads against it. Both cost what the episode changed,
not the org's size, and both run inside the caller's transaction: nothing is copied or
swapped underneath a request in flight.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from app.storage.journal import (
    JOURNAL,
    SEQUENCES,
    decode_row,
    encode_row,
    known_columns,
    log_insert,
    log_sequence,
    log_update,
    touched_records,
    undo_all,
)
from app.storage.platform import Snapshot
from app.storage.records import fetch_row, insert_rows, update_row
from app.storage.tables import TableSet

SNAPSHOTS = Snapshot.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class SnapshotSummary:
    name: str
    records: int


def snapshot_names(conn: Connection) -> list[str]:
    return list(conn.execute(select(SNAPSHOTS.c.name).order_by(SNAPSHOTS.c.name)).scalars())


def _sequence_value(conn: Connection, sobject: str) -> int | None:
    value = conn.execute(
        select(SEQUENCES.c.last_number).where(SEQUENCES.c.sobject == sobject)
    ).scalar_one_or_none()
    return None if value is None else int(value)


def _touched_sequences(conn: Connection) -> list[str]:
    rows = conn.execute(
        select(JOURNAL.c.sobject).where(JOURNAL.c.op == "sequence").distinct()
    ).scalars()
    return sorted(rows)


def take_snapshot(conn: Connection, tables: TableSet, name: str, now: datetime) -> SnapshotSummary:
    """Save (or replace) snapshot `name`: the current rows of every record the episode wrote."""
    records: list[list[Any]] = []
    for entry in touched_records(conn):
        if entry.sobject not in tables:  # an object the sandbox removed since
            continue
        row = fetch_row(conn, tables[entry.sobject], entry.record_id)
        records.append([entry.sobject, entry.record_id, None if row is None else encode_row(row)])
    sequences = {name: _sequence_value(conn, name) for name in _touched_sequences(conn)}
    conn.execute(delete(SNAPSHOTS).where(SNAPSHOTS.c.name == name))
    conn.execute(
        insert(SNAPSHOTS).values(
            name=name,
            taken_at=now,
            records=json.dumps(records),
            sequences=json.dumps(sequences),
        )
    )
    return SnapshotSummary(name=name, records=len(records))


def restore_snapshot(conn: Connection, tables: TableSet, name: str) -> SnapshotSummary | None:
    """Bring the sandbox back to snapshot `name`; None if there is no such snapshot."""
    saved = conn.execute(
        select(SNAPSHOTS.c.records, SNAPSHOTS.c.sequences).where(SNAPSHOTS.c.name == name)
    ).first()
    if saved is None:
        return None
    undo_all(conn, tables)
    records = json.loads(saved.records)
    for sobject, record_id, encoded in records:
        if encoded is None or sobject not in tables:
            continue  # absent when the snapshot was taken, and absent again after the undo
        table = tables[sobject]
        image = known_columns(table, decode_row(encoded))
        current = fetch_row(conn, table, record_id)
        if current is None:
            log_insert(conn, sobject, record_id)
            insert_rows(conn, table, [image])
        else:
            log_update(conn, sobject, current)
            update_row(conn, table, record_id, image)
    for sobject, last_number in json.loads(saved.sequences).items():
        log_sequence(conn, sobject, _sequence_value(conn, sobject))
        conn.execute(delete(SEQUENCES).where(SEQUENCES.c.sobject == sobject))
        if last_number is not None:
            conn.execute(insert(SEQUENCES).values(sobject=sobject, last_number=last_number))
    return SnapshotSummary(name=name, records=len(records))
