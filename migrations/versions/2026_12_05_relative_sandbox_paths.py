"""relative sandbox paths: SQLite sandboxes and templates are named by their path relative to
the data directory (`sandboxes/template-....db`, `sandboxes/<server>/copy-....db`) instead of
an absolute URL, so a data directory copied or moved elsewhere uses its own files; the default
sandbox's row names no file at all ("server": the server's own database).

Revision ID: 0013_relative_sandbox_paths
Revises: 0011_episode_results
Create Date: 2026-12-05
"""

from collections.abc import Callable
from pathlib import Path, PurePosixPath

import sqlalchemy as sa
from alembic import op

from app.config import get_settings

revision = "0013_relative_sandbox_paths"
down_revision = "0011_episode_results"
branch_labels = None
depends_on = None

SQLITE_PREFIX = "sqlite:///"
SERVER_DATABASE = "server"
# (table, key column, columns naming a sandbox's or template's storage)
COLUMNS = (
    ("lf_sandbox", "instance", ("url", "template")),
    ("lf_copy", "url", ("url", "template")),
    ("lf_template", "url", ("url",)),
)
# How many trailing parts of an absolute path the data-directory-relative one keeps.
KEPT_PARTS = {"template-": 2, "copy-": 3}  # sandboxes/template-x.db, sandboxes/<db>/copy-x.db


def _relative(value: str) -> str:
    if not value.startswith(SQLITE_PREFIX):
        return value  # PostgreSQL names schemas, wherever the server is; "" is a reservation
    path = PurePosixPath(value.removeprefix(SQLITE_PREFIX))
    for prefix, kept in KEPT_PARTS.items():
        if path.name.startswith(prefix):
            return str(PurePosixPath(*path.parts[-kept:]))
    return value


def _absolute(value: str, data_dir: Path) -> str:
    if not value or value.startswith(("sqlite:", "postgresql")):
        return value
    return f"{SQLITE_PREFIX}{data_dir / value}"


def _rewrite(change: Callable[[str], str]) -> None:
    conn = op.get_bind()
    for table, key, columns in COLUMNS:
        found = sa.table(table, sa.column(key), *(sa.column(c) for c in columns if c != key))
        for row in conn.execute(sa.select(found)).mappings().all():
            values = {c: change(row[c]) for c in columns}
            if values != {c: row[c] for c in columns}:
                conn.execute(sa.update(found).where(found.c[key] == row[key]).values(**values))


def upgrade() -> None:
    _rewrite(_relative)
    sandboxes = sa.table("lf_sandbox", sa.column("id"), sa.column("url"))
    op.get_bind().execute(
        sa.update(sandboxes).where(sandboxes.c.id == "default").values(url=SERVER_DATABASE)
    )


def downgrade() -> None:
    settings = get_settings()
    data_dir = settings.data_dir.resolve()
    _rewrite(lambda value: _absolute(value, data_dir))
    sandboxes = sa.table("lf_sandbox", sa.column("id"), sa.column("url"))
    op.get_bind().execute(
        sa.update(sandboxes)
        .where(sandboxes.c.id == "default")
        .values(url=settings.effective_database_url)
    )
