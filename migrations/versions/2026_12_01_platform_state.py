"""platform state: the sandbox registry, shared warm copies, templates, call logs, cursors and
the API usage counter, so that every worker and replica serves every sandbox

Revision ID: 0005_platform_state
Revises: 0004_snapshots
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_platform_state"
down_revision = "0004_snapshots"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lf_sandbox",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("instance", sa.String(32), nullable=False, unique=True),
        sa.Column("org", sa.String(40), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("template", sa.Text(), nullable=False),
        sa.Column("clock_start", sa.DateTime(), nullable=True),
        sa.Column("clock_pinned", sa.Boolean(), nullable=False),
        sa.Column("clock_origin", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_used", sa.DateTime(), nullable=False),
        sa.Column("snapshots", sa.Text(), nullable=False, server_default="[]"),
        sa.Column("log_since", sa.String(30), nullable=False, server_default=""),
    )
    op.create_table(
        "lf_copy",
        sa.Column("url", sa.String(255), primary_key=True),
        sa.Column("template", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "lf_template",
        sa.Column("url", sa.String(255), primary_key=True),
        sa.Column("ready", sa.Boolean(), nullable=False),
        sa.Column("last_used", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "lf_call",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("sandbox_id", sa.String(40), nullable=False),
        sa.Column("time", sa.String(30), nullable=False),
        sa.Column("method", sa.String(10), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
    )
    op.create_index("ix_lf_call_sandbox", "lf_call", ["sandbox_id", "seq"])
    op.create_table(
        "lf_cursor",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("sandbox_instance", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(18), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("include_deleted", sa.Boolean(), nullable=False),
        sa.Column("calendar", sa.Text(), nullable=False),
        sa.Column("batch_size", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("last_used", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_lf_cursor_owner", "lf_cursor", ["sandbox_instance", "user_id", "seq"])
    op.create_table(
        "lf_cursor_rows",
        sa.Column("cursor_seq", sa.Integer(), primary_key=True),
        sa.Column("start", sa.Integer(), primary_key=True),
        sa.Column("rows", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "lf_counter",
        sa.Column("name", sa.String(40), primary_key=True),
        sa.Column("value", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    for table in ("lf_counter", "lf_cursor_rows", "lf_cursor", "lf_call", "lf_template"):
        op.drop_table(table)
    op.drop_table("lf_copy")
    op.drop_table("lf_sandbox")
