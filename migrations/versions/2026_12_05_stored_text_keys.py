"""stored text keys: the key of each unique or external id text field moves from an expression
index (calling localforce's lf_text_key, which the sqlite3 tool lacks) into a column of its own
with a plain index (app.storage.text_keys). On PostgreSQL every schema is converted: templates
and sandboxes are schemas of this database; on SQLite they are files of their own, converted
when the server starts (SandboxManager's storage upgrade).

Revision ID: 0012_stored_text_keys
Revises: 0011_episode_results
Create Date: 2026-12-05
"""

from alembic import op
from sqlalchemy import inspect

from app.storage.text_keys import store_keys

revision = "0012_stored_text_keys"
down_revision = "0011_episode_results"
branch_labels = None
depends_on = None


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        for schema in inspect(conn).get_schema_names():
            store_keys(conn, schema)
    else:
        store_keys(conn)


def downgrade() -> None:
    """Nothing: the key columns are data localforce keeps in step; an older version ignores
    them (it names its expression indexes alike, and would find them present)."""
