"""Test databases: one seeded template per backend, and cheap isolated copies of it.

SQLite copies are file copies; PostgreSQL copies are `CREATE DATABASE ... TEMPLATE`. Every
PostgreSQL database a run creates has a unique name and is dropped at the end of the run.

A database can also be given the sandbox template its server would build on its first sandbox
(`add_sandbox_template`), so that the servers of its copies find it ready instead of each
building it again (a few seconds of seeding).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.engine import URL

from app.sandbox.templates import TemplateSpec
from app.seeding.templates import fill_template
from app.storage.backends import backend_for_url
from app.storage.backends.common import Copies

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
    # The keys of the sandbox templates each database (by URL) holds, or its copies get.
    sandbox_templates: dict[str, list[str]] = field(default_factory=dict)

    def new_url(self, template: str | None = None) -> str:
        name = f"lf_test_{uuid.uuid4().hex[:12]}"
        if self.backend == "sqlite":
            path = self.workdir / f"{name}.db"
            if template is not None:
                shutil.copyfile(make_url(template).database or "", path)
            url = f"sqlite:///{path}"
        else:
            admin = postgres_admin_url()
            engine = create_engine(admin, isolation_level="AUTOCOMMIT")
            with engine.connect() as conn:
                source = f' TEMPLATE "{make_url(template).database}"' if template else ""
                conn.execute(text(f'CREATE DATABASE "{name}"{source}'))
                # A commit returns before its WAL is on disk, as a SQLite commit in WAL mode
                # with synchronous=NORMAL does: nothing a client sees changes (only a crash of
                # the PostgreSQL server could lose the latest commits), and a run does not
                # wait for thousands of fsyncs. (A copy does not inherit the setting.)
                conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
            engine.dispose()
            self.created.append(name)
            url = admin.set(database=name).render_as_string(hide_password=False)
        if template is not None and template in self.sandbox_templates:
            self._take_sandbox_templates(template, url)
        return url

    def _copies(self, url: str, data_dir: Path | None = None) -> Copies:
        return backend_for_url(url).copies(url, data_dir or self.workdir)

    def add_sandbox_template(self, url: str, *, org: str, seed: int, objects_dir: Path) -> None:
        """Build the template that the server of the database at `url` builds on its first
        sandbox of `org` and `seed`, as that build does (`fill_template`, which the server runs
        in a child process). On PostgreSQL it is a schema of the database, named after it, that
        copies of it take along (renamed after the copy); on SQLite a file of the data directory
        (the workdir, shared by every server of it), which `copy_sandbox_templates` copies into
        another one."""
        key = TemplateSpec(org=org, seed=seed).key
        copies = self._copies(url)
        template = copies.template_url(key)
        copies.create_empty(template)
        try:
            fill_template(
                copies.database_url(template),
                objects_dir=objects_dir,
                org=org,
                seed=seed,
                imported_from=None,
            )
        finally:
            copies.close()
        self.sandbox_templates.setdefault(url, []).append(key)

    def _take_sandbox_templates(self, source: str, copy: str) -> None:
        """A PostgreSQL copy holds its source's template schemas under the source's name: give
        them the copy's, where its server looks for them. (SQLite templates are not in the copy.)"""
        keys = self.sandbox_templates[source]
        self.sandbox_templates[copy] = list(keys)
        if self.backend == "sqlite":
            return
        old, new = self._copies(source), self._copies(copy)
        engine = create_engine(copy)
        with engine.begin() as conn:
            for key in keys:
                was = old.storage_of(old.template_url(key))
                now = new.storage_of(new.template_url(key))
                conn.execute(text(f'ALTER SCHEMA "{was}" RENAME TO "{now}"'))
        engine.dispose()
        old.close()
        new.close()

    def copy_sandbox_templates(self, template: str, server_url: str, data_dir: Path) -> None:
        """For a SQLite server of `server_url` (a copy of `template`) whose data directory is
        `data_dir`: the sandbox templates of `template`, copied where that server looks."""
        if self.backend != "sqlite":
            return
        source, target = self._copies(template), self._copies(server_url, data_dir)
        for key in self.sandbox_templates.get(template, []):
            copy = _path(target.database_url(target.template_url(key)))
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_path(source.database_url(source.template_url(key))), copy)

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


def _path(sqlite_url: str) -> Path:
    return Path(make_url(sqlite_url).database or "")


@pytest.fixture
def postgres_database(tmp_path: Path) -> Iterator[str]:
    """An empty PostgreSQL database of its own, dropped at the end (skips without PostgreSQL)."""
    require_postgres()
    factory = DatabaseFactory(backend="postgres", workdir=tmp_path)
    yield factory.new_url()
    factory.drop_all()
