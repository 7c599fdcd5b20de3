"""Test databases: one seeded template per backend, and cheap isolated copies of it.

SQLite copies are file copies; PostgreSQL copies are `CREATE DATABASE ... TEMPLATE`. Every
PostgreSQL database a run creates has a unique name and is dropped at the end of the run.
"""

from __future__ import annotations

import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL

DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
# Databases dropped at once at the end of a run (each drop holds a connection).
DROPPERS = 8


def postgres_admin_url() -> URL:
    return make_url(os.environ.get("LOCALFORCE_TEST_DATABASE_URL", DEFAULT_POSTGRES_URL))


def postgres_available() -> bool:
    try:
        engine = create_engine(postgres_admin_url())
        with engine.connect():
            pass
        engine.dispose()
        return True
    except Exception:
        return False


def require_postgres() -> None:
    """Skip PostgreSQL tests when no server is reachable, except in CI, where they must run."""
    if postgres_available():
        return
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("PostgreSQL is not reachable and CI=true: PostgreSQL tests must run in CI")
    pytest.skip("PostgreSQL is not reachable (set LOCALFORCE_TEST_DATABASE_URL)")


@dataclass
class DatabaseFactory:
    """Creates uniquely named databases of one backend and drops them all at the end."""

    backend: str
    workdir: Path
    created: list[str] = field(default_factory=list)

    def new_url(self, template: str | None = None) -> str:
        name = f"lf_test_{uuid.uuid4().hex[:12]}"
        if self.backend == "sqlite":
            path = self.workdir / f"{name}.db"
            if template is not None:
                shutil.copyfile(make_url(template).database or "", path)
            return f"sqlite:///{path}"
        admin = postgres_admin_url()
        engine = create_engine(admin, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            source = f' TEMPLATE "{make_url(template).database}"' if template else ""
            conn.execute(text(f'CREATE DATABASE "{name}"{source}'))
        engine.dispose()
        self.created.append(name)
        return admin.set(database=name).render_as_string(hide_password=False)

    def drop_all(self) -> None:
        if self.backend != "postgres" or not self.created:
            return
        engine = create_engine(
            postgres_admin_url(), isolation_level="AUTOCOMMIT", pool_size=DROPPERS, max_overflow=0
        )
        with engine.connect() as conn:
            existing = conn.execute(text("SELECT datname FROM pg_database")).scalars().all()
        # Sandboxes and their templates are named after the database they came from.
        doomed = [name for name in existing if any(name.startswith(c) for c in self.created)]

        def drop(name: str) -> None:
            with engine.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

        # Each DROP DATABASE waits for a checkpoint; drops under way together share one.
        with ThreadPoolExecutor(max_workers=DROPPERS) as pool:
            list(pool.map(drop, doomed))
        engine.dispose()
        self.created.clear()
