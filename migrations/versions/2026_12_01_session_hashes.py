"""session hashes: sessions keep a hash of their token, when they were last used, and which
strict credentials they were issued under

Revision ID: 0006_session_hashes
Revises: 0005_platform_state
Create Date: 2026-12-01
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0006_session_hashes"
down_revision = "0005_platform_state"
branch_labels = None
depends_on = None

SESSIONS = sa.table(
    "lf_auth_session",
    sa.column("token", sa.String()),
    sa.column("created_at", sa.DateTime()),
    sa.column("last_used", sa.DateTime()),
)


def upgrade() -> None:
    op.add_column("lf_auth_session", sa.Column("last_used", sa.DateTime(), nullable=True))
    op.add_column(
        "lf_auth_session",
        sa.Column("credentials", sa.String(64), nullable=False, server_default=""),
    )
    connection = op.get_bind()
    # The tokens stored in clear become their hashes: the sessions go on working.
    for token, created_at in connection.execute(
        sa.select(SESSIONS.c.token, SESSIONS.c.created_at)
    ).all():
        connection.execute(
            SESSIONS.update()
            .where(SESSIONS.c.token == token)
            .values(token=hashlib.sha256(token.encode()).hexdigest(), last_used=created_at)
        )


def downgrade() -> None:
    # Hashes cannot be turned back into tokens: the sessions end.
    op.execute(SESSIONS.delete())
    op.drop_column("lf_auth_session", "credentials")
    op.drop_column("lf_auth_session", "last_used")
