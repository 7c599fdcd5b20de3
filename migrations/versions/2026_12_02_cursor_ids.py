"""cursor ids never reused: on SQLite, lf_cursor's seq AUTOINCREMENT (a plain rowid reuses the
largest id once its row is deleted, and a locator's rows are written after it is recorded, so a
reused id could meet rows meant for another); PostgreSQL's serial never reuses one. Open
locators are dropped: a client pages its query again.

Revision ID: 0007_cursor_ids
Revises: 0006_session_hashes
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_cursor_ids"
down_revision = "0006_session_hashes"
branch_labels = None
depends_on = None


def _cursor_table(**options: object) -> None:
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
        **options,
    )
    op.create_index("ix_lf_cursor_owner", "lf_cursor", ["sandbox_instance", "user_id", "seq"])


def _rebuild(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DELETE FROM lf_cursor_rows")
    op.drop_index("ix_lf_cursor_owner", table_name="lf_cursor")
    op.drop_table("lf_cursor")
    _cursor_table(sqlite_autoincrement=autoincrement)


def upgrade() -> None:
    _rebuild(autoincrement=True)


def downgrade() -> None:
    _rebuild(autoincrement=False)
