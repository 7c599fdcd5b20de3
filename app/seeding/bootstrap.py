"""First start: refuse a database that holds another org, run the platform migrations, then seed
the org if the database has none."""

from __future__ import annotations

from sqlalchemy import Engine, inspect, text

from app.config import Settings
from app.metadata.registry import SchemaRegistry
from app.seeding.loading import OrgStamp
from app.seeding.pipeline import ORG_INFO, ProgressCallback, SeedResult, seed_org
from app.storage.backends import backend_for, backend_for_url
from app.storage.database import data_tables_exist, migrate_platform
from app.storage.platform import GENERATED_SOURCE, IMPORTED_SOURCE_PREFIX
from app.storage.tables import TableSet


class OrgInTheWay(Exception):
    """The database holds another org than the one asked for: seeding over it would throw away
    data another server may be serving, or an import made on purpose, so starting stops."""


class ImportedOrgInTheWay(OrgInTheWay):
    def __init__(self, held: str, wanted: str) -> None:
        super().__init__(
            f"The database holds the imported org '{held}', not '{wanted}'. Serve it with "
            f"LOCALFORCE_ORG={held}, use another data directory or database for '{wanted}', or "
            f"replace it on purpose with `localforce seed` or `localforce import`."
        )


class GeneratedOrgInTheWay(OrgInTheWay):
    def __init__(self, held: OrgStamp, org: str, seed: int) -> None:
        super().__init__(
            f"The database holds the org '{held.org}' generated with seed {held.seed}, not "
            f"'{org}' with seed {seed}. Serve it with LOCALFORCE_ORG={held.org} "
            f"LOCALFORCE_SEED={held.seed}, use another data directory or database for '{org}' "
            f"with seed {seed}, or replace it on purpose with `localforce serve --reseed`."
        )


def held_org(url: str) -> OrgStamp | None:
    """What the database at `url` holds, read without writing anything (not even a file): None
    when it holds no org yet."""
    engine = backend_for_url(url).read_only_engine(url)
    if engine is None:
        return None
    try:
        if not inspect(engine).has_table(ORG_INFO.name):
            return None
        with engine.connect() as conn:
            # Every column: one from before a migration may lack `source` (it was generated).
            row = conn.execute(text(f"SELECT * FROM {ORG_INFO.name}")).mappings().first()
    finally:
        engine.dispose()
    if row is None:
        return None
    source = row.get("source", GENERATED_SOURCE)
    return OrgStamp(
        org=row["org"], seed=row["seed"], content_hash=row["content_hash"], source=source
    )


def refuse_another_org(held: OrgStamp | None, org: str, seed: int) -> None:
    """Raise when the database holds an org other than `org` generated with `seed`. An imported
    org's seed is not a generated one: only its org must match."""
    if held is None:
        return
    if held.source.startswith(IMPORTED_SOURCE_PREFIX):
        if held.org != org:
            raise ImportedOrgInTheWay(held.org, org)
    elif (held.org, held.seed) != (org, seed):
        raise GeneratedOrgInTheWay(held, org, seed)


def ensure_database(
    engine: Engine,
    registry: SchemaRegistry,
    tables: TableSet,
    settings: Settings,
    on_progress: ProgressCallback | None = None,
    *,
    reseed: bool = False,
) -> SeedResult | None:
    """Migrate, and seed the configured org when the database holds none (with `reseed`,
    whatever it holds); None if it did not seed. A database that holds another org is refused
    before anything is written (OrgInTheWay)."""
    with backend_for(engine.dialect.name).first_start(engine):
        held = None if reseed else held_org(settings.effective_database_url)
        refuse_another_org(held, settings.org, settings.seed)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        migrate_platform(engine)
        if held is not None and data_tables_exist(engine, tables):
            return None
        return seed_org(
            engine, registry, tables, org=settings.org, seed=settings.seed, on_progress=on_progress
        )
