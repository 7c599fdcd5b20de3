"""relative sandbox paths: sandboxes and templates are named where they sit in the data, not
by an absolute URL: on SQLite by their path relative to the data directory
(`sandboxes/template-....db`, `sandboxes/<server>/copy-....db`), so a data directory copied or
moved elsewhere uses its own files; on PostgreSQL by their schema (the URL named the server
and its credentials too). The default sandbox's row names no database at all ("server": the
server's own).

Revision ID: 0013_relative_sandbox_paths
Revises: 0012_stored_text_keys
Create Date: 2026-12-05
"""

from collections.abc import Callable
from pathlib import Path, PurePosixPath

import sqlalchemy as sa
from alembic import op
from sqlalchemy import make_url

from app.config import get_settings

revision = "0013_relative_sandbox_paths"
down_revision = "0012_stored_text_keys"
branch_labels = None
depends_on = None

SQLITE_PREFIX = "sqlite:///"
PATH_OPTION = "-csearch_path="  # a PostgreSQL URL named its schema in its options
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
    if value.startswith("postgresql"):
        options = make_url(value).query.get("options", "")
        if isinstance(options, str) and options.startswith(PATH_OPTION):
            return options.removeprefix(PATH_OPTION).split(",")[0]
        return value
    if not value.startswith(SQLITE_PREFIX):
        return value  # "": a reservation
    path = PurePosixPath(value.removeprefix(SQLITE_PREFIX))
    for prefix, kept in KEPT_PARTS.items():
        if path.name.startswith(prefix):
            return str(PurePosixPath(*path.parts[-kept:]))
    return value


def _absolute(value: str, data_dir: Path, database_url: str) -> str:
    if not value or value.startswith(("sqlite:", "postgresql")):
        return value
    if database_url.startswith("postgresql"):
        schema = make_url(database_url).update_query_dict({"options": PATH_OPTION + value})
        return schema.render_as_string(hide_password=False)
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
    url = settings.effective_database_url
    _rewrite(lambda value: _absolute(value, data_dir, url))
    sandboxes = sa.table("lf_sandbox", sa.column("id"), sa.column("url"))
    op.get_bind().execute(sa.update(sandboxes).where(sandboxes.c.id == "default").values(url=url))
