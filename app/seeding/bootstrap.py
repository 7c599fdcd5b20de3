"""First start: run the platform migrations, then seed the org if the database has none."""

from __future__ import annotations

from sqlalchemy import Engine, select

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import ORG_INFO, ProgressCallback, SeedResult, seed_org
from app.storage.database import data_tables_exist, migrate_platform
from app.storage.tables import TableSet


def is_seeded(engine: Engine, tables: TableSet, org: str) -> bool:
    if not data_tables_exist(engine, tables):
        return False
    with engine.connect() as conn:
        return conn.execute(select(ORG_INFO.c.org).where(ORG_INFO.c.org == org)).first() is not None


def ensure_database(
    engine: Engine,
    registry: SchemaRegistry,
    tables: TableSet,
    settings: Settings,
    on_progress: ProgressCallback | None = None,
) -> SeedResult | None:
    """Migrate, and seed the configured org when the database holds none; None if it did."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    migrate_platform(engine)
    if is_seeded(engine, tables, settings.org):
        return None
    return seed_org(
        engine, registry, tables, org=settings.org, seed=settings.seed, on_progress=on_progress
    )
