"""episode results: an episode's result kept whole (run, agent label, org, seed, clock, the
channel that answered, the outcome at the answer), its tool calls, and a sandbox's password.

Revision ID: 0011_episode_results
Revises: 0010_episode_rewards
Create Date: 2026-12-05
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_episode_results"
down_revision = "0010_episode_rewards"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lf_episode") as batch:
        batch.add_column(sa.Column("run", sa.String(80), nullable=True))
        batch.add_column(sa.Column("agent", sa.String(120), nullable=True))
        batch.add_column(sa.Column("org", sa.String(40), nullable=True))
        batch.add_column(sa.Column("seed", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("clock", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("channel", sa.String(10), nullable=True))
        batch.add_column(sa.Column("metric", sa.String(30), nullable=True))
        batch.add_column(sa.Column("outcome", sa.Text(), nullable=True))
        batch.create_index("ix_lf_episode_run", ["run"])
    op.create_table(
        "lf_tool_call",
        sa.Column("seq", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("episode_id", sa.String(40), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("tool", sa.String(80), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("is_error", sa.Boolean(), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
    )
    op.create_index("ix_lf_tool_call_episode_id", "lf_tool_call", ["episode_id"])
    with op.batch_alter_table("lf_sandbox") as batch:
        batch.add_column(
            sa.Column("password_hash", sa.String(64), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("lf_sandbox") as batch:
        batch.drop_column("password_hash")
    op.drop_index("ix_lf_tool_call_episode_id", "lf_tool_call")
    op.drop_table("lf_tool_call")
    with op.batch_alter_table("lf_episode") as batch:
        batch.drop_index("ix_lf_episode_run")
        for column in ("outcome", "metric", "channel", "clock", "seed", "org", "agent", "run"):
            batch.drop_column(column)
