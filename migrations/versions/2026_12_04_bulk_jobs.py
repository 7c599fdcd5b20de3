"""bulk jobs: Bulk API 2.0 ingest and query jobs, Bulk API 1.0 jobs and batches, and their data.

Revision ID: 0009_bulk_jobs
Revises: 0008_episodes
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_bulk_jobs"
down_revision = "0008_episodes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lf_bulk_job",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("sandbox_id", sa.String(40), nullable=False),
        sa.Column("sandbox_instance", sa.String(32), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("parent_seq", sa.Integer(), nullable=True),
        sa.Column("content_type", sa.String(10), nullable=False),
        sa.Column("operation", sa.String(20), nullable=False),
        sa.Column("sobject", sa.String(80), nullable=True),
        sa.Column("external_id_field", sa.String(80), nullable=True),
        sa.Column("query", sa.Text(), nullable=True),
        sa.Column("column_delimiter", sa.String(12), nullable=False),
        sa.Column("line_ending", sa.String(4), nullable=False),
        sa.Column("api_version", sa.String(8), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("created_by", sa.String(18), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("modstamp", sa.DateTime(), nullable=False),
        sa.Column("owner", sa.String(40), nullable=True),
        sa.Column("heartbeat", sa.DateTime(), nullable=True),
        sa.Column("processed", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("processing_ms", sa.Integer(), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_lf_bulk_job_sandbox_id", "lf_bulk_job", ["sandbox_id"])
    op.create_index("ix_lf_bulk_job_state", "lf_bulk_job", ["state"])
    op.create_index("ix_lf_bulk_job_parent_seq", "lf_bulk_job", ["parent_seq"])
    op.create_table(
        "lf_bulk_data",
        sa.Column("job_seq", sa.Integer(), primary_key=True),
        sa.Column("part", sa.String(20), primary_key=True),
        sa.Column("content", sa.LargeBinary(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lf_bulk_data")
    op.drop_index("ix_lf_bulk_job_parent_seq", table_name="lf_bulk_job")
    op.drop_index("ix_lf_bulk_job_state", table_name="lf_bulk_job")
    op.drop_index("ix_lf_bulk_job_sandbox_id", table_name="lf_bulk_job")
    op.drop_table("lf_bulk_job")
