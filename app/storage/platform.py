"""Platform tables (not sObjects): sessions, id sequences, org info and the change journal.

Alembic owns their schema (migrations/); this module is the single definition both Alembic and
the code read.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, DateTime, Float, LargeBinary, Text
from sqlmodel import Field, SQLModel

# The Alembic head these definitions match. Templates are named with it, so a template built
# before a migration is never cloned into a sandbox that expects the new tables (a test checks
# it against the migrations).
PLATFORM_REVISION = "0014_sandbox_schemas"


class AuthSession(SQLModel, table=True):
    """A bearer token handed out by OAuth or SOAP login, kept as its SHA-256 (hex): the
    database holds nothing a client could present."""

    __tablename__ = "lf_auth_session"

    token: str = Field(primary_key=True, max_length=120)
    username: str = Field(max_length=255)
    user_id: str = Field(max_length=18)
    created_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    # The sandbox whose data the token reaches; "default" is the org the server starts with.
    sandbox_id: str = Field(default="default", max_length=40)
    # When a request last carried the token (the inactivity timeout counts from it).
    last_used: datetime | None = Field(default=None, sa_column=Column(DateTime(), nullable=True))
    # A fingerprint of the strict login the session was issued under ("" in open mode):
    # changing the configured credentials ends the sessions they had let in.
    credentials: str = Field(default="", max_length=64)


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


class SandboxRecord(SQLModel, table=True):
    """A live sandbox, as every worker sees it. `instance` is new each time an id is created, so
    nothing of a deleted sandbox (sessions, cursors) reaches a later one with its id."""

    __tablename__ = "lf_sandbox"

    id: str = Field(primary_key=True, max_length=40)
    instance: str = Field(max_length=32, unique=True)
    org: str = Field(max_length=40)
    seed: int = Field(sa_column=Column(BigInteger(), nullable=False))
    url: str = Field(sa_column=Column(Text(), nullable=False))
    template: str = Field(sa_column=Column(Text(), nullable=False))
    # The clock: None is real time; else `clock_start`, frozen when pinned, else moving on
    # from it since `clock_origin` (the sandbox's creation or last reset, in real time).
    clock_start: datetime | None = Field(default=None, sa_column=Column(DateTime(), nullable=True))
    clock_pinned: bool
    clock_origin: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    last_used: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    # JSON list of its snapshots' names (the snapshots live in the sandbox's own database).
    snapshots: str = Field(default="[]", sa_column=Column(Text(), nullable=False))
    # The call log shows calls that ended after this time (ISO, ms): a reset moves it on
    # instead of deleting rows, which retention trims later.
    log_since: str = Field(default="", max_length=30)
    # SHA-256 of the password its users log in with (returned once, when it was created).
    password_hash: str = Field(default="", max_length=64)
    # Its changes to its org's schema (app.metadata.schema_changes, canonical JSON; "" for
    # none), and each snapshot's ({name: changes}): its registry is the org's with these.
    schema_changes: str = Field(default="", sa_column=Column(Text(), nullable=False))
    snapshot_schemas: str = Field(default="{}", sa_column=Column(Text(), nullable=False))


class EpisodeRecord(SQLModel, table=True):
    """A benchmark episode: the task an agent works on in the sandbox of the same id, and
    its result once answered. Kept after the sandbox is deleted; only a purge removes it."""

    __tablename__ = "lf_episode"

    id: str = Field(primary_key=True, max_length=40)
    task: str = Field(sa_column=Column(Text(), nullable=False))  # the task row, as JSON
    created_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    # The answer, its reward, and when (null until the episode is answered: it is final).
    response: str | None = Field(default=None, sa_column=Column(Text(), nullable=True))
    reward: float | None = Field(default=None, sa_column=Column(Float(), nullable=True))
    answered_at: datetime | None = Field(default=None, sa_column=Column(DateTime(), nullable=True))
    # Given at creation: the run it belongs to and the model or agent's label.
    run: str | None = Field(default=None, max_length=80, index=True)
    agent: str | None = Field(default=None, max_length=120)
    # The sandbox it ran in: org, seed and clock start.
    org: str | None = Field(default=None, max_length=40)
    seed: int | None = Field(default=None, sa_column=Column(BigInteger(), nullable=True))
    clock: datetime | None = Field(default=None, sa_column=Column(DateTime(), nullable=True))
    # Which channel answered (rest, mcp, openenv), the metric, and the outcome as it stood at
    # the answer (JSON: diff, call log, timings), so the result never changes afterwards.
    channel: str | None = Field(default=None, max_length=10)
    metric: str | None = Field(default=None, max_length=30)
    outcome: str | None = Field(default=None, sa_column=Column(Text(), nullable=True))


class ToolCallRecord(SQLModel, table=True):
    """One tool call of an episode (MCP or OpenEnv): its trajectory, kept with its result."""

    __tablename__ = "lf_tool_call"

    seq: int | None = Field(default=None, primary_key=True)
    episode_id: str = Field(max_length=40, index=True)
    at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    tool: str = Field(max_length=80)
    arguments: str = Field(sa_column=Column(Text(), nullable=False))  # JSON
    result: str = Field(sa_column=Column(Text(), nullable=False))  # JSON, or the error's text
    is_error: bool
    latency_ms: float = Field(sa_column=Column(Float(), nullable=False))


class WarmCopy(SQLModel, table=True):
    """A ready clone of a template, waiting in the pool any worker may take it from."""

    __tablename__ = "lf_copy"

    url: str = Field(primary_key=True, max_length=255)
    template: str = Field(sa_column=Column(Text(), nullable=False))
    created_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))


class TemplateRecord(SQLModel, table=True):
    """A template: being built (`ready` false, by whichever worker inserted the row) or ready."""

    __tablename__ = "lf_template"

    url: str = Field(primary_key=True, max_length=255)
    ready: bool
    last_used: datetime = Field(sa_column=Column(DateTime(), nullable=False))


class CallRecord(SQLModel, table=True):
    """One API call of a sandbox's episode (its call log)."""

    __tablename__ = "lf_call"

    seq: int | None = Field(default=None, primary_key=True)
    sandbox_id: str = Field(max_length=40, index=False)
    time: str = Field(max_length=30)
    method: str = Field(max_length=10)
    path: str = Field(sa_column=Column(Text(), nullable=False))
    query: str | None = Field(default=None, sa_column=Column(Text(), nullable=True))
    status: int
    duration_ms: float = Field(sa_column=Column(Float(), nullable=False))


class CursorRecord(SQLModel, table=True):
    """An open query locator: what ran, for whom, and how far; its rows are in lf_cursor_rows.
    Its seq is never reused (its rows are written after it is recorded)."""

    __tablename__ = "lf_cursor"
    __table_args__ = {"sqlite_autoincrement": True}

    seq: int | None = Field(default=None, primary_key=True)
    sandbox_instance: str = Field(max_length=32)
    user_id: str = Field(max_length=18)
    query: str = Field(sa_column=Column(Text(), nullable=False))
    include_deleted: bool
    # The org calendar the query ran with (JSON: today, zone, fiscal start month): the child
    # subqueries of later batches resolve their date literals against the same day.
    calendar: str = Field(sa_column=Column(Text(), nullable=False))
    batch_size: int
    total: int
    last_used: datetime = Field(sa_column=Column(DateTime(), nullable=False))


class CursorRows(SQLModel, table=True):
    """One batch of a cursor's result rows, from row `start` on, serialised."""

    __tablename__ = "lf_cursor_rows"

    cursor_seq: int = Field(primary_key=True)
    start: int = Field(primary_key=True)
    rows: bytes = Field(sa_column=Column(LargeBinary(), nullable=False))


class BulkJob(SQLModel, table=True):
    """A Bulk API job (or Bulk API 1.0 batch) of a sandbox: what it does, where it stands, and
    who runs it. Its data
    (the upload, the results) is in lf_bulk_data. Its seq is never reused: the job's id is
    made from it."""

    __tablename__ = "lf_bulk_job"
    __table_args__ = {"sqlite_autoincrement": True}

    seq: int | None = Field(default=None, primary_key=True)
    sandbox_id: str = Field(max_length=40, index=True)
    # The sandbox's instance when the job was made: a later namesake never sees the job.
    sandbox_instance: str = Field(max_length=32)
    # "ingest" or "query" (Bulk API 2.0); "job" or "batch" (Bulk API 1.0, whose batches
    # are run, each in its job: `parent_seq`).
    kind: str = Field(max_length=10)
    parent_seq: int | None = Field(default=None, index=True)
    # CSV (Bulk API 2.0's only one), or JSON or XML (Bulk API 1.0's too).
    content_type: str = Field(default="CSV", max_length=10)
    operation: str = Field(max_length=20)
    sobject: str | None = Field(default=None, max_length=80)
    external_id_field: str | None = Field(default=None, max_length=80)
    query: str | None = Field(default=None, sa_column=Column(Text(), nullable=True))
    column_delimiter: str = Field(max_length=12)
    line_ending: str = Field(max_length=4)
    api_version: str = Field(max_length=8)
    # Indexed: every worker's runner looks for the waiting ones each second.
    state: str = Field(max_length=20, index=True)
    created_by: str = Field(max_length=18)
    created_at: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    modstamp: datetime = Field(sa_column=Column(DateTime(), nullable=False))
    # The worker running it and when it last said so: a job whose runner fell silent is
    # taken up again by another (or by the same server after a restart).
    owner: str | None = Field(default=None, max_length=40)
    heartbeat: datetime | None = Field(default=None, sa_column=Column(DateTime(), nullable=True))
    processed: int = 0
    failed: int = 0
    error: str | None = Field(default=None, sa_column=Column(Text(), nullable=True))
    processing_ms: int = 0


class BulkJobData(SQLModel, table=True):
    """A part of a Bulk job's data: the uploaded CSV, or a result (successful, failed,
    unprocessed records, or a query's rows)."""

    __tablename__ = "lf_bulk_data"

    job_seq: int = Field(primary_key=True)
    part: str = Field(primary_key=True, max_length=20)
    content: bytes = Field(sa_column=Column(LargeBinary(), nullable=False))


class Counter(SQLModel, table=True):
    """Named counters shared by every worker (the API usage count)."""

    __tablename__ = "lf_counter"

    name: str = Field(primary_key=True, max_length=40)
    value: int = Field(sa_column=Column(BigInteger(), nullable=False))


PLATFORM_METADATA = SQLModel.metadata
