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
from sqlalchemy import text

from app.storage.text_keys import store_keys

revision = "0012_stored_text_keys"
down_revision = "0011_episode_results"
branch_labels = None
depends_on = None


# The schemas holding an index of a text key (the search index's are GIN): one query, however
# many sandboxes the database holds (a new template's migrations run this too).
_KEYED_SCHEMAS = (
    "SELECT DISTINCT schemaname FROM pg_indexes "
    "WHERE indexdef LIKE '%lf_text_key(%' AND indexdef LIKE '%USING btree%'"
)


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name == "postgresql":
        for schema in conn.execute(text(_KEYED_SCHEMAS)).scalars().all():
            store_keys(conn, schema)
    else:
        store_keys(conn)


def downgrade() -> None:
    """Nothing: an older version neither reads nor writes the key columns (it computes keys,
    without an index); the keys its writes leave stale are repaired when this one starts."""
