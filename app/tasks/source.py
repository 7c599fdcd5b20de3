"""Where tasks are drawn from: an org's database, given by its URL, or the org generated from its
seed into a throwaway SQLite file (the same records every sandbox of that org and seed starts
from)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.seeding.templates import fill_template
from app.storage.database import create_db_engine
from app.storage.tables import TableSet


@dataclass(frozen=True)
class OrgDatabase:
    engine: Engine
    tables: TableSet


@contextmanager
def org_database(
    objects_dir: Path, *, org: str, seed: int, database_url: str | None = None
) -> Iterator[OrgDatabase]:
    """The org's database: the one at `database_url` (which holds the org's tables), or, without
    one, `org` generated from `seed` into a temporary file, deleted afterwards."""
    tables = TableSet(SchemaRegistry.from_directory(objects_dir))
    with tempfile.TemporaryDirectory(prefix="localforce-tasks-") as workdir:
        url = database_url
        if url is None:
            url = Settings(data_dir=Path(workdir)).effective_database_url  # the embedded default
            fill_template(url, objects_dir=objects_dir, org=org, seed=seed, imported_from=None)
        engine = create_db_engine(url, must_exist=True)
        try:
            yield OrgDatabase(engine=engine, tables=tables)
        finally:
            engine.dispose()
