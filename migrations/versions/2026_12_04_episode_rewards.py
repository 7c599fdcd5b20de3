"""episode rewards: an answered episode keeps its response, reward and when it was graded.

Revision ID: 0010_episode_rewards
Revises: 0009_bulk_jobs
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_episode_rewards"
down_revision = "0009_bulk_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lf_episode") as batch:
        batch.add_column(sa.Column("response", sa.Text(), nullable=True))
        batch.add_column(sa.Column("reward", sa.Float(), nullable=True))
        batch.add_column(sa.Column("answered_at", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("lf_episode") as batch:
        batch.drop_column("answered_at")
        batch.drop_column("reward")
        batch.drop_column("response")
