"""org info: where the org's data came from (generated from a seed, or imported from a dump)

Revision ID: 0003_org_source
Revises: 0002_sandboxes
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_org_source"
down_revision = "0002_sandboxes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lf_org_info") as batch:
        batch.add_column(
            sa.Column("source", sa.String(80), nullable=False, server_default="generated")
        )


def downgrade() -> None:
    with op.batch_alter_table("lf_org_info") as batch:
        batch.drop_column("source")
