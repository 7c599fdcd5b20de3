"""Where tasks are drawn from: an org's database, given by its URL, or the org generated from its
seed into a throwaway SQLite file (the same records every sandbox of that org and seed starts
from)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, select

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import ORG_INFO
from app.seeding.templates import fill_template
from app.storage.database import create_db_engine
from app.storage.platform import GENERATED_SOURCE
from app.storage.tables import TableSet
from app.tasks.model import TaskGenerationFailed


@dataclass(frozen=True)
class OrgDatabase:
    engine: Engine
    tables: TableSet
    planted: bool  # generated from the seed (False: imported from a dump)


def _generated(engine: Engine, org: str, seed: int) -> bool:
    """Whether the database's org was generated from `seed` (not imported from a dump); a
    database generated from another seed is refused, its planted answers being another's."""
    with engine.connect() as conn:
        row = conn.execute(
            select(ORG_INFO.c.seed, ORG_INFO.c.source).where(ORG_INFO.c.org == org)
        ).first()
    if row is None:
        raise TaskGenerationFailed(f"The database holds no org {org}")
    if row.source != GENERATED_SOURCE:
        return False
    if row.seed != seed:
        raise TaskGenerationFailed(
            f"The database holds org {org} generated from seed {row.seed}, not {seed}: "
            f"pass --seed {row.seed}"
        )
    return True


@contextmanager
def org_database(
    objects_dir: Path, *, org: str, seed: int, database_url: str | None = None
) -> Iterator[OrgDatabase]:
    """The org's database: the one at `database_url` (which holds the org's tables), or, without
    one, `org` generated from `seed` into a temporary file, deleted afterwards. Whether it was
    generated or imported is read from its org info."""
    tables = TableSet(SchemaRegistry.from_directory(objects_dir))
    with tempfile.TemporaryDirectory(prefix="localforce-tasks-") as workdir:
        url = database_url
        if url is None:
            url = Settings(data_dir=Path(workdir)).effective_database_url  # the embedded default
            fill_template(url, objects_dir=objects_dir, org=org, seed=seed, imported_from=None)
        engine = create_db_engine(url, must_exist=True)
        try:
            yield OrgDatabase(engine, tables, planted=_generated(engine, org, seed))
        finally:
            engine.dispose()
