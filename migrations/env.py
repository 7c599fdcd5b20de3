"""Alembic environment: platform tables only; sObject data tables are derived from metadata."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from app.config import get_settings
from app.storage.platform import PLATFORM_METADATA

target_metadata = PLATFORM_METADATA


def include_name(name: str | None, type_: str, parent_names: object) -> bool:
    # Autogenerate must never see the sObject tables (prefix sobj_).
    return not (type_ == "table" and name is not None and name.startswith("sobj_"))


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        context.configure(
            connection=connection, target_metadata=target_metadata, include_name=include_name
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(get_settings().effective_database_url)
    with engine.connect() as connection:
        context.configure(
            connection=connection, target_metadata=target_metadata, include_name=include_name
        )
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
