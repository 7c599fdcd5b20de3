"""Replacing an org's data in one transaction: seeding and importing both load through here.

The data tables are dropped, recreated (with the search index) and filled, the id sequences,
the org info row and the change journal are reset, all in a single transaction: a failure at any
point leaves the database exactly as it was. PostgreSQL runs DDL in transactions natively; on
SQLite the transaction is opened explicitly, since the driver would otherwise run the DROP and
CREATE statements outside it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select

from app.metadata.registry import SchemaRegistry
from app.storage.backends import backend_for
from app.storage.database import write_transaction
from app.storage.journal import JOURNAL, SEQUENCES, undo_all
from app.storage.platform import GENERATED_SOURCE, OrgInfo
from app.storage.records import insert_rows, set_sequences
from app.storage.search_index import create_search_index, drop_search_index
from app.storage.tables import TableSet, field_columns

Rows = dict[str, list[dict[str, Any]]]
ProgressCallback = Callable[[str, int, int], None]

INSERT_CHUNK = 2000
ORG_INFO = OrgInfo.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class OrgStamp:
    """What the org info row says about the data: which org, from what, and its hash."""

    org: str
    seed: int
    content_hash: str
    # GENERATED_SOURCE, or IMPORTED_SOURCE_PREFIX + the dump's sha256
    source: str = GENERATED_SOURCE


@contextmanager
def read_snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection whose reads all see one consistent state of the database."""
    with engine.connect() as conn:
        isolation = backend_for(conn.dialect.name).snapshot_isolation
        if isolation is not None:  # None: every transaction is a snapshot already
            conn = conn.execution_options(isolation_level=isolation)
        try:
            conn.begin()
            yield conn
        finally:
            conn.rollback()


def replace_org_data(
    engine: Engine,
    tables: TableSet,
    rows: Rows,
    *,
    stamp: OrgStamp,
    sequences: dict[str, int],
    on_progress: ProgressCallback | None = None,
    before_commit: Callable[[Connection], None] | None = None,
) -> None:
    """Make `rows` the org's whole data, in one transaction. `before_commit` runs last, inside
    the transaction, on the loaded data."""
    total = sum(len(batch) for batch in rows.values())
    done = 0
    with write_transaction(engine) as conn:
        drop_search_index(conn, tables)
        tables.metadata.drop_all(conn)
        tables.metadata.create_all(conn)
        create_search_index(conn, tables)
        for name, batch in rows.items():
            for start in range(0, len(batch), INSERT_CHUNK):
                chunk = batch[start : start + INSERT_CHUNK]
                insert_rows(conn, tables[name], chunk)
                done += len(chunk)
                if on_progress is not None:
                    on_progress(name, done, total)
        set_sequences(conn, sequences)
        if before_commit is not None:
            before_commit(conn)
        # The journal described writes to the data just replaced: nothing is left to undo.
        conn.execute(delete(JOURNAL))
        conn.execute(delete(ORG_INFO))
        conn.execute(
            insert(ORG_INFO).values(
                org=stamp.org,
                seed=stamp.seed,
                content_hash=stamp.content_hash,
                source=stamp.source,
                seeded_at=datetime.now(),
            )
        )


def org_stamp(conn: Connection) -> OrgStamp | None:
    """What the org info row of a database says, or None when it has none."""
    row = conn.execute(
        select(ORG_INFO.c.org, ORG_INFO.c.seed, ORG_INFO.c.content_hash, ORG_INFO.c.source)
    ).first()
    if row is None:
        return None
    return OrgStamp(org=row[0], seed=row[1], content_hash=row[2], source=row[3])


def copy_org_data(
    source: Engine, target: Engine, registry: SchemaRegistry, tables: TableSet
) -> OrgStamp:
    """Load into `target` the data `source` held when its episode last began: its rows, with the
    writes its change journal records undone. The target's platform tables must exist."""
    with read_snapshot(source) as conn:
        stamp = org_stamp(conn)
        if stamp is None:
            raise ValueError("the source database holds no org")
        rows: Rows = {
            sobject.name: [
                dict(row)
                for row in conn.execute(select(*field_columns(tables[sobject.name]))).mappings()
            ]
            for sobject in registry
        }
        sequences = {row[0]: row[1] for row in conn.execute(select(SEQUENCES))}
        journal = [dict(row) for row in conn.execute(select(JOURNAL)).mappings()]

    def undo_episode(conn: Connection) -> None:
        if journal:
            conn.execute(insert(JOURNAL), journal)
            undo_all(conn, tables)

    replace_org_data(
        target, tables, rows, stamp=stamp, sequences=sequences, before_commit=undo_episode
    )
    return stamp
