"""Where sandbox data lives, per back end: files on SQLite, schemas of the server's database on
PostgreSQL. A template holds a freshly seeded org; clones of it are what sandboxes run on, each
holding only what its episode wrote over the template it reads through.

A clone's name carries the time it was made, so that storage a crash left behind (a copy no
sandbox or pool row names) can be told from a copy another worker is making right now.
"""

from __future__ import annotations

import re
import sqlite3
import time
import uuid
from contextlib import closing
from pathlib import Path
from typing import Protocol

from sqlalchemy import Engine, make_url, text

from app.storage.backends.common import SEARCH_PATH_OPTION
from app.storage.backends.sqlite import TEMPLATE_ALIAS
from app.storage.database import create_db_engine
from app.storage.overlay import OVERLAY_OPTION, OWN_TABLES, SERIAL_COLUMNS, Overlay

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
    def storage_of(self, url: str) -> str: ...
    def engine_for(self, url: str, template: str) -> Engine: ...
    def release(self, engine: Engine) -> None: ...
    def close(self) -> None: ...


class SqliteCopies:
    """Templates are files under `templates_root` (shared: a template is fixed by its org and
    seed); clones are files under `clones_root`, this server's own. A clone is copy-on-write: a
    small file of its own tables, with its template attached read-only (`app.storage.overlay`)."""

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
        """A new sandbox file holding only the tables every sandbox writes, made from the
        template's own DDL, with the template's id sequences. The template must exist: one
        dropped meanwhile fails to attach instead of being cloned as an empty database."""
        target = self.clones_root / f"copy-{_clone_name()}.db"
        template = f"file:{self._path(source_url)}?mode=ro&immutable=1"
        own = ", ".join(f"'{name}'" for name in OWN_TABLES)
        with closing(sqlite3.connect(f"file:{target}", uri=True, isolation_level=None)) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"ATTACH DATABASE ? AS {TEMPLATE_ALIAS}", (template,))
            db.execute("BEGIN")
            ddl = db.execute(
                f"SELECT sql FROM {TEMPLATE_ALIAS}.sqlite_master WHERE tbl_name IN ({own}) "
                "AND sql IS NOT NULL ORDER BY rowid"
            ).fetchall()
            for (sql,) in ddl:
                db.execute(sql)
            db.execute(
                f"INSERT INTO main.lf_id_sequence SELECT * FROM {TEMPLATE_ALIAS}.lf_id_sequence"
            )
            db.execute("COMMIT")
        return f"sqlite:///{target}"

    def drop(self, url: str) -> None:
        path = self._path(url)
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    def storage_of(self, url: str) -> str:
        """What a copy's URL names on disk: its file."""
        return str(self._path(url))

    def engine_for(self, url: str, template: str) -> Engine:
        if not template:  # the server's own database, seeded in full
            return create_db_engine(url, must_exist=True)
        engine = create_db_engine(url, must_exist=True, template=template)
        return engine.execution_options(
            **{OVERLAY_OPTION: Overlay(local="main", template=TEMPLATE_ALIAS)}
        )

    def release(self, engine: Engine) -> None:
        engine.dispose()  # each sandbox has an engine of its own

    def close(self) -> None:
        """Nothing: every engine is a sandbox's, released with it."""


_UNSAFE = re.compile(r"[^a-z0-9_]")
# The connection option that sets a PostgreSQL session's search path.
_PATH_OPTION = "-csearch_path="


class PostgresCopies:
    """Templates and clones are schemas of the server's database, named after it with a suffix
    (a URL names one in its `options`); a clone's search path puts its own schema before its
    template's (`app.storage.overlay`).
    Every clone runs on one shared engine: its connections serve whichever sandbox a request
    is for, so they are bounded by the requests in flight, not by the number of sandboxes."""

    def __init__(self, base_url: str, *, pool_size: int = 8, max_overflow: int = 12) -> None:
        self.base = make_url(base_url)
        name = _UNSAFE.sub("_", (self.base.database or "localforce").lower())
        self.prefix = name[:30]
        self.engine = create_db_engine(
            self.base.render_as_string(hide_password=False),
            pool_size=pool_size,
            max_overflow=max_overflow,
            # A server-side prepared statement keeps the tables its names resolved to when
            # prepared, even after a table of the same name is copied into an earlier schema
            # on the path: prepare none here.
            connect_args={"prepare_threshold": None},
        )

    def _url(self, schema: str) -> str:
        path = _PATH_OPTION + schema
        return self.base.update_query_dict({"options": path}).render_as_string(hide_password=False)

    @staticmethod
    def _schemas(url: str) -> list[str]:
        options = make_url(url).query.get("options", "")
        if not isinstance(options, str) or not options.startswith(_PATH_OPTION):
            return []  # the server's own database
        return options.removeprefix(_PATH_OPTION).split(",")

    def _schemas_named(self, prefix: str) -> list[str]:
        with self.engine.connect() as conn:
            names = conn.execute(
                text("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, :prefix)"),
                {"prefix": prefix},
            ).scalars()
            return sorted(names)

    def template_url(self, key: str) -> str:
        return self._url(_UNSAFE.sub("_", f"{self.prefix}_tpl_{key}".lower())[:63])

    def list_templates(self) -> list[str]:
        return [self._url(name) for name in self._schemas_named(f"{self.prefix}_tpl_")]

    def list_clones(self) -> list[str]:
        """Clones by the schema name alone: `drop` and `exists` need nothing more."""
        return [self._url(name) for name in self._schemas_named(f"{self.prefix}_sb_")]

    def exists(self, url: str) -> bool:
        with self.engine.connect() as conn:
            found = conn.execute(
                text("SELECT 1 FROM pg_namespace WHERE nspname = :name"),
                {"name": self._schemas(url)[0]},
            ).first()
        return found is not None

    def create_empty(self, url: str) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{self._schemas(url)[0]}"')

    def clone(self, source_url: str) -> str:
        template = self._schemas(source_url)[0]
        name = f"{self.prefix}_sb_{_clone_name().replace('-', '_')}"
        # Identifiers cannot be bound parameters; every name here is made here, never by a client.
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')
            for table in OWN_TABLES:
                conn.exec_driver_sql(
                    f'CREATE TABLE "{name}".{table} (LIKE "{template}".{table} INCLUDING ALL)'
                )
            for table, column in SERIAL_COLUMNS.items():
                # LIKE copies a serial's default, which names the template's sequence.
                sequence = f'"{name}".{table}_{column}_seq'
                conn.exec_driver_sql(
                    f'CREATE SEQUENCE {sequence} OWNED BY "{name}".{table}.{column}'
                )
                conn.exec_driver_sql(
                    f'ALTER TABLE "{name}".{table} ALTER COLUMN {column} '
                    f"SET DEFAULT nextval('{sequence}')"
                )
            conn.exec_driver_sql(
                f'INSERT INTO "{name}".lf_id_sequence SELECT * FROM "{template}".lf_id_sequence'
            )
        return self._url(name)

    def drop(self, url: str) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{self._schemas(url)[0]}" CASCADE')

    def storage_of(self, url: str) -> str:
        """What a copy's URL names in the database: its own schema (the first on its path)."""
        return (self._schemas(url) or [url])[0]

    def engine_for(self, url: str, template: str) -> Engine:
        if not template:  # the server's own database
            return self.engine
        own, shared = self.storage_of(url), self.storage_of(template)
        return self.engine.execution_options(
            **{
                SEARCH_PATH_OPTION: f'"{own}", "{shared}"',
                OVERLAY_OPTION: Overlay(local=own, template=shared),
            }
        )

    def release(self, engine: Engine) -> None:
        """Nothing: the engine is the shared one, seen through a sandbox's options."""

    def close(self) -> None:
        self.engine.dispose()
