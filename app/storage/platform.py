"""Platform tables (not sObjects): sessions, id sequences, org info and the change journal.

Alembic owns their schema (migrations/); this module is the single definition both Alembic and
the code read.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, DateTime, Text
from sqlmodel import Field, SQLModel

# The Alembic head these definitions match. Templates are named with it, so a template built
# before a migration is never cloned into a sandbox that expects the new tables (a test checks
# it against the migrations).
PLATFORM_REVISION = "0004_snapshots"


class AuthSession(SQLModel, table=True):
    """A bearer token handed out by OAuth or SOAP login."""

    __tablename__ = "lf_auth_session"

    token: str = Field(primary_key=True, max_length=120)
    username: str = Field(max_length=255)
    user_id: str = Field(max_length=18)
    created_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    # The sandbox whose data the token reaches; "default" is the org the server starts with.
    sandbox_id: str = Field(default="default", max_length=40)


class IdSequence(SQLModel, table=True):
    """The last record number handed out per sObject, so new ids never collide with seeded ones."""

    __tablename__ = "lf_id_sequence"

    sobject: str = Field(primary_key=True, max_length=80)
    last_number: int


# OrgInfo.source: generated from the seed, or imported from a dump ("import:<sha256>").
GENERATED_SOURCE = "generated"
IMPORTED_SOURCE_PREFIX = "import:"


class OrgInfo(SQLModel, table=True):
    """One row: which org and seed the data holds, and the content hash of the seeding.

    source is "generated" (made from the seed) or "import:<sha256 of the dump>" (loaded by
    `localforce import`; the seed then means nothing)."""

    __tablename__ = "lf_org_info"

    org: str = Field(primary_key=True, max_length=40)
    seed: int
    content_hash: str = Field(max_length=64)
    seeded_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    source: str = Field(default=GENERATED_SOURCE, max_length=80)


class JournalEntry(SQLModel, table=True):
    """One write of the current episode, with what it replaced: reset replays these backwards.

    op is "insert" (the record did not exist), "update" (before holds the full row as JSON) or
    "sequence" (before holds the id sequence's previous last number).
    """

    __tablename__ = "lf_journal"

    seq: int | None = Field(default=None, primary_key=True)
    sobject: str = Field(max_length=80)
    record_id: str | None = Field(default=None, max_length=18)
    op: str = Field(max_length=10)
    before: str | None = Field(default=None, sa_column=Column(Text(), nullable=True))


class Snapshot(SQLModel, table=True):
    """A named state of a sandbox: every record its episode had written when the snapshot was
    taken, as it then stood, and the id sequences. Restoring resets to the seeded state and
    writes these back, so a snapshot costs what the episode changed, not the org's size."""

    __tablename__ = "lf_snapshot"

    name: str = Field(primary_key=True, max_length=40)
    taken_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    # JSON: [[sobject, record id, row as the journal encodes it, or null if absent], ...]
    records: str = Field(sa_column=Column(Text(), nullable=False))
    # JSON: {sobject: last number handed out, or null if the sequence did not exist}
    sequences: str = Field(sa_column=Column(Text(), nullable=False))


PLATFORM_METADATA = SQLModel.metadata
