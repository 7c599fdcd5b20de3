"""episodes: the task each benchmark episode's sandbox was made for.

Revision ID: 0008_episodes
Revises: 0007_cursor_ids
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_episodes"
down_revision = "0007_cursor_ids"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lf_episode",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("task", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lf_episode")
