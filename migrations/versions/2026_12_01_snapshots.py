"""snapshots: a sandbox's named states, as the rows its episode had written when each was taken

Revision ID: 0004_snapshots
Revises: 0003_org_source
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_snapshots"
down_revision = "0003_org_source"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lf_snapshot",
        sa.Column("name", sa.String(40), primary_key=True),
        sa.Column("taken_at", sa.DateTime(), nullable=False),
        sa.Column("records", sa.Text(), nullable=False),
        sa.Column("sequences", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lf_snapshot")
