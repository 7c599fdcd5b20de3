"""sandboxes: the session's sandbox, and the change journal that reset replays

Revision ID: 0002_sandboxes
Revises: 0001_platform
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0002_sandboxes"
down_revision = "0001_platform"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lf_auth_session") as batch:
        batch.add_column(
            sa.Column("sandbox_id", sa.String(40), nullable=False, server_default="default")
        )
    op.create_table(
        "lf_journal",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("sobject", sa.String(80), nullable=False),
        sa.Column("record_id", sa.String(18), nullable=True),
        sa.Column("op", sa.String(10), nullable=False),
        sa.Column("before", sa.Text(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("lf_journal")
    with op.batch_alter_table("lf_auth_session") as batch:
        batch.drop_column("sandbox_id")
