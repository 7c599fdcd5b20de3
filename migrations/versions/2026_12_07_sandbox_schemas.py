"""sandbox schemas: a sandbox's changes to its org's schema (custom fields added through the
Metadata API), and each of its snapshots' changes.

Revision ID: 0014_sandbox_schemas
Revises: 0013_relative_sandbox_paths
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_sandbox_schemas"
down_revision = "0013_relative_sandbox_paths"
branch_labels = None
depends_on = None


COLUMNS = (
    sa.Column("schema_changes", sa.Text(), nullable=False, server_default=""),
    sa.Column("snapshot_schemas", sa.Text(), nullable=False, server_default="{}"),
)


def upgrade() -> None:
    # A database whose recorded revision was set back (to run a later migration again) may
    # have them already.
    present = {column["name"] for column in sa.inspect(op.get_bind()).get_columns("lf_sandbox")}
    with op.batch_alter_table("lf_sandbox") as batch:
        for column in COLUMNS:
            if column.name not in present:
                batch.add_column(column)


def downgrade() -> None:
    with op.batch_alter_table("lf_sandbox") as batch:
        batch.drop_column("snapshot_schemas")
        batch.drop_column("schema_changes")
