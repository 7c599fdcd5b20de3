"""The database back ends: everything that differs between them, one module per back end.

A back end is one object implementing `Backend`: how its engines connect and begin
transactions, its case-insensitive text type and its INSERT ... ON CONFLICT, how it spells the
SOQL functions, its full-text search index and queries, and where its sandboxes' data lives.
Everything else asks `backend_for(conn.dialect.name)` (or `backend_for_url(url)` before there
is a connection) and holds no back-end branch. A new back end is a module beside these two, its
tests, and a line in `_REGISTERED`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, Self

from sqlalchemy import Column, ColumnElement, Connection, Engine, Insert, Select, Table, make_url
from sqlalchemy.types import TypeEngine

from app.storage.backends.common import Copies, DateField, Overlay, WireDatetimes, copy_age
from app.storage.backends.postgresql import POSTGRESQL
from app.storage.backends.sqlite import SQLITE
from app.storage.search_spec import FieldGroup, SearchSpec

# The vocabulary of the protocol, and where sandbox data lives as the sandbox package sees it.
__all__ = ["Copies", "DateField", "Overlay", "WireDatetimes", "copy_age"]


class UpsertInsert(Protocol):
    """An INSERT that takes ON CONFLICT clauses: what upserts build on."""

    def values(self, *args: Any, **kwargs: Any) -> Self: ...
    def on_conflict_do_nothing(self, *, index_elements: Any = None) -> Insert: ...
    def on_conflict_do_update(self, *, index_elements: Any = None, set_: Any = None) -> Insert: ...


class MatchSyntax(Protocol):
    """How a back end's full-text query language spells a search expression (every word in it
    is letters and digits only)."""

    def phrase(self, words: Sequence[str]) -> str: ...
    def all_of(self, parts: Sequence[str]) -> str: ...
    def any_of(self, parts: Sequence[str]) -> str: ...
    def but_not(self, left: str, right: str) -> str: ...
    def query(self, body: str) -> str: ...  # the whole expression, as the index is queried


class Backend(Protocol):
    """One database back end. Spellings take and return SQL text of already compiled operands
    (values stay bound parameters); the rest takes connections and SQLAlchemy constructs."""

    name: str  # SQLAlchemy's dialect name, and the back-end part of a database URL's scheme
    one_writer: bool  # one writer at a time: platform writes take the write lock up front
    snapshot_isolation: str | None  # the isolation level that makes a read one snapshot

    # -- engines and transactions
    def create_engine(
        self, url: str, *, must_exist: bool = False, template: str | None = None, **pool: Any
    ) -> Engine: ...
    def read_only_engine(self, url: str) -> Engine | None: ...  # None: no database there
    def lock_writes(self, conn: Connection, key: str) -> None: ...
    # Servers starting at once on one database: one migrates and seeds it at a time.
    def first_start(self, engine: Engine) -> AbstractContextManager[None]: ...
    def prepare_database(self, conn: Connection) -> None: ...
    def restrict_to_owner(self, engine: Engine) -> None: ...
    def settle_template(self, url: str) -> None: ...
    # Expression indexes of a text key a table has (from before keys were stored): {name: field}
    def text_key_indexes(
        self, conn: Connection, table: str, schema: str | None
    ) -> dict[str, str]: ...

    # -- column types and statements
    def case_insensitive_text(self) -> TypeEngine[str]: ...
    def insert(self, table: Any) -> UpsertInsert: ...
    def wire_datetimes(self, statement: Select[Any], columns: frozenset[int]) -> WireDatetimes: ...
    def append_rows(
        self, conn: Connection, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> None: ...

    # -- SOQL functions
    def date_field(self, field: DateField, value: str) -> str: ...
    def modulo(self, dividend: str, divisor: str) -> str: ...
    def day_only(self, value: str) -> str: ...
    def case_insensitive(self, value: str) -> str: ...
    def text_key(self, value: str) -> str: ...  # see text_key.py; sorts by code point
    def text_position(self, text: str, part: str) -> str: ...
    def code_point_order(self, value: str) -> str: ...
    def text_is_null(self, value: str) -> str: ...
    def key_in(self, value: str, keys: Sequence[str]) -> str: ...
    def to_local(self, value: str, zone: str) -> str: ...
    def distance(self, lat1: str, lon1: str, lat2: str, lon2: str, radius: str) -> str: ...

    # -- the full-text search index
    def create_search_index(self, conn: Connection, spec: SearchSpec) -> None: ...
    def drop_search_index(self, conn: Connection, spec: SearchSpec) -> None: ...
    def rebuild_search_index(self, conn: Connection, spec: SearchSpec) -> None: ...
    def search_index_exists(self, conn: Connection, specs: Sequence[SearchSpec]) -> bool: ...
    def replace_search_index(
        self, conn: Connection, old: SearchSpec | None, new: SearchSpec | None
    ) -> None:
        """An object's index over other fields, on the table of the connection's own schema
        (a sandbox's copy): `old`'s dropped, `new`'s made (None: it has none)."""
        ...

    def match_syntax(
        self, spec: SearchSpec, groups: frozenset[FieldGroup] | None
    ) -> MatchSyntax: ...
    def matches(self, spec: SearchSpec, table: Table, query: str, ranked: bool) -> Select[Any]: ...
    def wildcard(self, column: ColumnElement[Any], words: Sequence[str]) -> ColumnElement[bool]: ...

    # -- copy-on-write sandboxes
    def is_local(self, conn: Connection, overlay: Overlay, name: str) -> bool: ...
    def copy_table(self, conn: Connection, overlay: Overlay, table: Table) -> None: ...
    def drop_copy(self, conn: Connection, overlay: Overlay, name: str) -> None: ...
    def copies(self, url: str, data_dir: Path) -> Copies: ...

    # -- a sandbox's own schema: a column added to the table a name resolves to there
    def column_names(self, conn: Connection, table: str) -> set[str]: ...
    def add_column(self, conn: Connection, table: str, column: Column[Any]) -> None: ...
    def create_table(self, conn: Connection, table: Table) -> None: ...
    def rename_table(self, conn: Connection, old: str, new: str) -> None: ...
    def drop_table(self, conn: Connection, name: str) -> None: ...


# The registered back ends: a new one adds itself here.
_REGISTERED: tuple[Backend, ...] = (SQLITE, POSTGRESQL)
_BACKENDS = {backend.name: backend for backend in _REGISTERED}


class UnknownBackend(LookupError):
    def __init__(self, name: str) -> None:
        known = ", ".join(sorted(_BACKENDS))
        super().__init__(f"No localforce back end for {name!r} (known: {known})")


def backend_for(dialect_name: str) -> Backend:
    """The back end of a SQLAlchemy dialect (`conn.dialect.name`)."""
    backend = _BACKENDS.get(dialect_name)
    if backend is None:
        raise UnknownBackend(dialect_name)
    return backend


def backend_for_url(url: str) -> Backend:
    """The back end a database URL names, by its scheme (`postgresql+psycopg://` and
    `postgresql://` alike)."""
    return backend_for(make_url(url).get_backend_name())


def registered_backends() -> tuple[Backend, ...]:
    return _REGISTERED
