"""First start: run the platform migrations, then seed the org if the database has none."""

from __future__ import annotations

from sqlalchemy import Engine, select

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.seeding.pipeline import ORG_INFO, ProgressCallback, SeedResult, seed_org
from app.storage.database import data_tables_exist, migrate_platform
from app.storage.platform import IMPORTED_SOURCE_PREFIX
from app.storage.tables import TableSet


class ImportedOrgInTheWay(Exception):
    """The database holds an imported org other than the one asked for. Seeding over it would
    throw away an import the user made on purpose, so starting stops instead."""

    def __init__(self, held: str, wanted: str) -> None:
        super().__init__(
            f"The database holds the imported org '{held}', not '{wanted}'. Serve it with "
            f"LOCALFORCE_ORG={held}, use another data directory or database for '{wanted}', or "
            f"replace it on purpose with `localforce seed` or `localforce import`."
        )


def is_seeded(engine: Engine, tables: TableSet, org: str) -> bool:
    """Whether the database holds `org` already (the platform tables must exist)."""
    with engine.connect() as conn:
        held = conn.execute(select(ORG_INFO.c.org, ORG_INFO.c.source)).first()
    if held is None:
        return False
    if held.org != org:
        if held.source.startswith(IMPORTED_SOURCE_PREFIX):
            raise ImportedOrgInTheWay(held.org, org)
        return False
    return data_tables_exist(engine, tables)


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
