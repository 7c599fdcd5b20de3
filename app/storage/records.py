"""Row-level DML on sObject tables, with no validation: the services layer validates first.

Functions take the connection first and never commit: the caller owns the transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Table, insert, select, update

from app.storage.journal import log_sequence
from app.storage.overlay import ensure_local
from app.storage.platform import IdSequence
from app.storage.tables import field_columns
from app.storage.text_keys import with_keys
from app.storage.upserts import upsert_into

ID_SEQUENCE = IdSequence.__table__  # type: ignore[attr-defined]


def next_record_number(conn: Connection, sobject: str) -> int:
    """Take the next number of the object's id sequence, inside the caller's transaction.

    One atomic statement (an upsert that returns the new value), so two transactions can never
    be handed the same number. The move is journaled, so a reset hands out the same ids again.
    """
    upsert = upsert_into(conn.dialect.name, ID_SEQUENCE).values(sobject=sobject, last_number=1)
    statement = upsert.on_conflict_do_update(
        index_elements=[ID_SEQUENCE.c.sobject],
        set_={"last_number": ID_SEQUENCE.c.last_number + 1},
    ).returning(ID_SEQUENCE.c.last_number)
    number = int(conn.execute(statement).scalar_one())
    log_sequence(conn, sobject, number - 1 if number > 1 else None)
    return number


def set_sequences(conn: Connection, last_numbers: dict[str, int]) -> None:
    conn.execute(ID_SEQUENCE.delete())
    if last_numbers:
        conn.execute(
            insert(ID_SEQUENCE),
            [{"sobject": name, "last_number": n} for name, n in last_numbers.items()],
        )


def insert_rows(conn: Connection, table: Table, rows: Iterable[dict[str, Any]]) -> None:
    batch = [with_keys(table, row) for row in rows]
    if batch:
        ensure_local(conn, table)
        conn.execute(insert(table), batch)


def fetch_row(conn: Connection, table: Table, record_id: str) -> dict[str, Any] | None:
    """A record's fields (its stored text keys are the storage's, not the record's)."""
    statement = select(*field_columns(table)).where(table.c.Id == record_id)
    row = conn.execute(statement).mappings().first()
    return dict(row) if row is not None else None


def update_row(conn: Connection, table: Table, record_id: str, values: dict[str, Any]) -> None:
    ensure_local(conn, table)
    written = with_keys(table, values)
    conn.execute(update(table).where(table.c.Id == record_id).values(**written))


def ids_exist(conn: Connection, table: Table, record_ids: Iterable[str]) -> set[str]:
    """Which of `record_ids` name live (not deleted) rows of `table`."""
    wanted = list(record_ids)
    if not wanted:
        return set()
    rows = conn.execute(
        select(table.c.Id).where(table.c.Id.in_(wanted), table.c.IsDeleted.is_(False))
    )
    return {row[0] for row in rows}


def deleted_flags(conn: Connection, table: Table, record_ids: Iterable[str]) -> dict[str, bool]:
    """Each of `record_ids` that names a row of `table`, and whether that row is deleted."""
    wanted = list(record_ids)
    if not wanted:
        return {}
    rows = conn.execute(select(table.c.Id, table.c.IsDeleted).where(table.c.Id.in_(wanted)))
    return {row[0]: bool(row[1]) for row in rows}


def child_ids(conn: Connection, table: Table, field: str, parent_ids: list[str]) -> list[str]:
    rows = conn.execute(
        select(table.c.Id).where(table.c[field].in_(parent_ids), table.c.IsDeleted.is_(False))
    )
    return [row[0] for row in rows]
