"""Where sandbox data lives, per back end: a file per copy on SQLite, a database per copy on
PostgreSQL. A template holds a freshly seeded org; clones of it are what sandboxes run on.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Protocol

from sqlalchemy import create_engine, make_url, text


class Copies(Protocol):
    def template_url(self, key: str) -> str: ...
    def list_templates(self) -> list[str]: ...
    def create_empty(self, url: str) -> None: ...
    def exists(self, url: str) -> bool: ...
    def clone(self, source_url: str) -> str: ...
    def drop(self, url: str) -> None: ...


class SqliteCopies:
    """Copies are files under `root`; cloning is a consistent file copy (SQLite backup API)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def _path(url: str) -> Path:
        return Path(make_url(url).database or "")

    def template_url(self, key: str) -> str:
        return f"sqlite:///{self.root / f'template-{key}.db'}"

    def list_templates(self) -> list[str]:
        return [f"sqlite:///{path}" for path in sorted(self.root.glob("template-*.db"))]

    def exists(self, url: str) -> bool:
        return self._path(url).exists()

    def create_empty(self, url: str) -> None:
        self._path(url).parent.mkdir(parents=True, exist_ok=True)  # SQLite makes the file

    def clone(self, source_url: str) -> str:
        target = self.root / f"copy-{uuid.uuid4().hex[:12]}.db"
        self._copy(self._path(source_url), target)
        return f"sqlite:///{target}"

    @staticmethod
    def _copy(source: Path, target: Path) -> None:
        # The backup API copies a consistent state even if the source is in WAL mode.
        with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
            src.backup(dst)
        src.close()
        dst.close()

    def drop(self, url: str) -> None:
        path = self._path(url)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


class PostgresCopies:
    """Copies are databases on the server of `base_url`, named after it with a suffix."""

    def __init__(self, base_url: str) -> None:
        self.base = make_url(base_url)
        self.prefix = (self.base.database or "localforce")[:40]
        # Maintenance work connects to the server's "postgres" database: a database being copied
        # or replaced must have no connections, including ours.
        self.admin = create_engine(
            self.base.set(database="postgres"), isolation_level="AUTOCOMMIT", pool_size=1
        )

    def _url(self, name: str) -> str:
        return self.base.set(database=name).render_as_string(hide_password=False)

    @staticmethod
    def _name(url: str) -> str:
        return make_url(url).database or ""

    def template_url(self, key: str) -> str:
        return self._url(f"{self.prefix}_tpl_{key}"[:63])

    def list_templates(self) -> list[str]:
        with self.admin.connect() as conn:
            names = conn.execute(
                text("SELECT datname FROM pg_database WHERE starts_with(datname, :prefix)"),
                {"prefix": f"{self.prefix}_tpl_"},
            ).scalars()
            return [self._url(name) for name in sorted(names)]

    def exists(self, url: str) -> bool:
        with self.admin.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": self._name(url)}
            ).first()
        return found is not None

    def create_empty(self, url: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self._name(url)}"'))

    def _create_from(self, name: str, source_url: str) -> None:
        # Identifiers cannot be bound parameters; both names are made here, never by a client.
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{self._name(source_url)}"'))

    def clone(self, source_url: str) -> str:
        name = f"{self.prefix}_sb_{uuid.uuid4().hex[:12]}"
        self._create_from(name, source_url)
        return self._url(name)

    def drop(self, url: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self._name(url)}" WITH (FORCE)'))

    def close(self) -> None:
        self.admin.dispose()
