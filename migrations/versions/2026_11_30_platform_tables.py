"""platform tables: auth sessions, id sequences, org info

Revision ID: 0001_platform
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0001_platform"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lf_auth_session",
        sa.Column("token", sa.String(120), primary_key=True),
        sa.Column("username", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(18), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "lf_id_sequence",
        sa.Column("sobject", sa.String(80), primary_key=True),
        sa.Column("last_number", sa.Integer(), nullable=False),
    )
    op.create_table(
        "lf_org_info",
        sa.Column("org", sa.String(40), primary_key=True),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("seeded_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("lf_org_info")
    op.drop_table("lf_id_sequence")
    op.drop_table("lf_auth_session")
