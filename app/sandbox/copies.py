"""Where sandbox data lives, per back end: a file per copy on SQLite, a database per copy on
PostgreSQL. A template holds a freshly seeded org; clones of it are what sandboxes run on.

A clone's name carries the time it was made, so that storage a crash left behind (a copy no
sandbox or pool row names) can be told from a copy another worker is making right now.
"""

from __future__ import annotations

import re
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Protocol

from sqlalchemy import create_engine, make_url, text

_MADE_AT = re.compile(r"(?:copy-|_sb_)(\d{10})[-_]")


def copy_age(url: str, now: float | None = None) -> float | None:
    """Seconds since the copy at `url` was made, read from its name (None: not a clone)."""
    found = _MADE_AT.search(url)
    if found is None:
        return None
    return (time.time() if now is None else now) - int(found.group(1))


def _clone_name() -> str:
    return f"{int(time.time()):010d}-{uuid.uuid4().hex[:12]}"


class Copies(Protocol):
    def template_url(self, key: str) -> str: ...
    def list_templates(self) -> list[str]: ...
    def list_clones(self) -> list[str]: ...
    def create_empty(self, url: str) -> None: ...
    def exists(self, url: str) -> bool: ...
    def clone(self, source_url: str) -> str: ...
    def drop(self, url: str) -> None: ...


class SqliteCopies:
    """Templates are files under `templates_root` (shared: a template is fixed by its org and
    seed); clones are files under `clones_root`, this server's own. Cloning is a consistent copy
    (SQLite's backup API)."""

    def __init__(self, templates_root: Path, clones_root: Path) -> None:
        self.templates_root = templates_root
        self.clones_root = clones_root
        self.clones_root.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def _path(url: str) -> Path:
        return Path(make_url(url).database or "")

    def template_url(self, key: str) -> str:
        return f"sqlite:///{self.templates_root / f'template-{key}.db'}"

    def list_templates(self) -> list[str]:
        paths = sorted(self.templates_root.glob("template-*.db"))
        return [f"sqlite:///{path}" for path in paths]

    def list_clones(self) -> list[str]:
        return [f"sqlite:///{path}" for path in sorted(self.clones_root.glob("copy-*.db"))]

    def exists(self, url: str) -> bool:
        return self._path(url).exists()

    def create_empty(self, url: str) -> None:
        self._path(url).parent.mkdir(parents=True, exist_ok=True)  # SQLite makes the file

    def clone(self, source_url: str) -> str:
        target = self.clones_root / f"copy-{_clone_name()}.db"
        # The backup API copies a consistent state even if the source is in WAL mode. The
        # source opens read-only and must exist: a template dropped meanwhile fails loudly
        # instead of being cloned as an empty database.
        source = f"file:{self._path(source_url)}?mode=ro"
        with sqlite3.connect(source, uri=True) as src, sqlite3.connect(target) as dst:
            src.backup(dst)
        src.close()
        dst.close()
        return f"sqlite:///{target}"

    def drop(self, url: str) -> None:
        path = self._path(url)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


class PostgresCopies:
    """Copies are databases on the server of `base_url`, named after it with a suffix."""

    def __init__(self, base_url: str) -> None:
        self.base = make_url(base_url)
        self.prefix = (self.base.database or "localforce")[:30]
        # Maintenance work connects to the server's "postgres" database: a database being copied
        # must have no connections, including ours.
        self.admin = create_engine(
            self.base.set(database="postgres"), isolation_level="AUTOCOMMIT", pool_size=1
        )

    def _url(self, name: str) -> str:
        return self.base.set(database=name).render_as_string(hide_password=False)

    @staticmethod
    def _name(url: str) -> str:
        return make_url(url).database or ""

    def _databases(self, prefix: str) -> list[str]:
        with self.admin.connect() as conn:
            names = conn.execute(
                text("SELECT datname FROM pg_database WHERE starts_with(datname, :prefix)"),
                {"prefix": prefix},
            ).scalars()
            return [self._url(name) for name in sorted(names)]

    def template_url(self, key: str) -> str:
        return self._url(f"{self.prefix}_tpl_{key}"[:63])

    def list_templates(self) -> list[str]:
        return self._databases(f"{self.prefix}_tpl_")

    def list_clones(self) -> list[str]:
        return self._databases(f"{self.prefix}_sb_")

    def exists(self, url: str) -> bool:
        with self.admin.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": self._name(url)}
            ).first()
        return found is not None

    def create_empty(self, url: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{self._name(url)}"'))

    def clone(self, source_url: str) -> str:
        name = f"{self.prefix}_sb_{_clone_name().replace('-', '_')}"
        # Identifiers cannot be bound parameters; both names are made here, never by a client.
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{self._name(source_url)}"'))
        return self._url(name)

    def drop(self, url: str) -> None:
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{self._name(url)}" WITH (FORCE)'))

    def close(self) -> None:
        self.admin.dispose()
