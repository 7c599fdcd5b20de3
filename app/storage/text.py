"""Text compared as Salesforce compares it, ignoring letter case: through its key
(app.storage.backends.text_key), as SQL every back end spells.

A column is compared by `text_key(column)`, a value by its key computed here in Python
(`key_of`), so a value never goes through the database's function. The key sorts by code point
on every back end. MIN() and MAX() of text pick by the key too, and answer one of the values
themselves (`text_extreme`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Boolean, ColumnElement, String, Text, bindparam, cast, func
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from app.storage.backends import UnknownBackend, backend_for
from app.storage.backends.text_key import text_key as key_of
from app.storage.tables import key_column

__all__ = [
    "code_point_order",
    "group_spelling",
    "key_in",
    "key_of",
    "keys_among",
    "keys_equal",
    "text_extreme",
    "text_is_null",
    "text_key",
    "text_position",
]


class text_key(FunctionElement[str]):
    """The key of a text expression: each character upper-cased, compared by code point."""

    type = Text()
    inherit_cache = True
    name = "text_key"


class code_point_order(FunctionElement[str]):
    """A text expression as it is, compared by code point (no collation of its column's)."""

    type = Text()
    inherit_cache = True
    name = "code_point_order"


class key_in(FunctionElement[bool]):
    """`key_in(value, key, ...)`: the key of a text expression is one of these keys (computed
    by key_of). A back end may test a cheaper condition first (SQLite compares the column itself
    ignoring ASCII case), so that most rows need no key."""

    type = Boolean()
    inherit_cache = True
    name = "key_in"
    _is_implicitly_boolean = True  # a condition as it is, never `... = 1`


class text_is_null(FunctionElement[bool]):
    """A text expression is null: tested on its key where GROUP BY groups on the key
    (PostgreSQL), on the value itself where that is cheaper and as good (SQLite)."""

    type = Boolean()
    inherit_cache = True
    name = "text_is_null"
    _is_implicitly_boolean = True


class text_position(FunctionElement[int]):
    """Where `part` first starts in `text`, from 1 (0: nowhere)."""

    inherit_cache = True
    name = "text_position"


def _args(element: FunctionElement[Any], compiler: SQLCompiler, **kw: Any) -> list[str]:
    return [compiler.process(clause, **kw) for clause in element.clauses]


@compiles(text_key)
def _text_key(element: text_key, compiler: SQLCompiler, **kw: Any) -> str:
    (value,) = _args(element, compiler, **kw)
    try:
        return backend_for(compiler.dialect.name).text_key(value)
    except UnknownBackend:  # str() of a statement: SQLAlchemy's default dialect
        return f"text_key({value})"


@compiles(code_point_order)
def _code_point_order(element: code_point_order, compiler: SQLCompiler, **kw: Any) -> str:
    (value,) = _args(element, compiler, **kw)
    try:
        return backend_for(compiler.dialect.name).code_point_order(value)
    except UnknownBackend:
        return value


@compiles(key_in)
def _key_in(element: key_in, compiler: SQLCompiler, **kw: Any) -> str:
    value, *keys = _args(element, compiler, **kw)
    try:
        return backend_for(compiler.dialect.name).key_in(value, keys)
    except UnknownBackend:
        return f"key_in({value}, {', '.join(keys)})"


@compiles(text_is_null)
def _text_is_null(element: text_is_null, compiler: SQLCompiler, **kw: Any) -> str:
    (value,) = _args(element, compiler, **kw)
    try:
        return backend_for(compiler.dialect.name).text_is_null(value)
    except UnknownBackend:
        return f"{value} IS NULL"


@compiles(text_position)
def _text_position(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    text, part = _args(element, compiler, **kw)
    try:
        return backend_for(compiler.dialect.name).text_position(text, part)
    except UnknownBackend:
        return f"text_position({text}, {part})"


def keys_equal(
    column: ColumnElement[Any], value: str, *, indexed: bool = False
) -> ColumnElement[bool]:
    """`column` equals `value`, letter case ignored (`indexed`: the column is a keyed field's,
    whose key its table stores, app.storage.tables.stored_keys)."""
    return keys_among(column, [value], indexed=indexed)


def keys_among(
    column: ColumnElement[Any], values: Sequence[str], *, indexed: bool = False
) -> ColumnElement[bool]:
    """`column` equals one of `values` (at least one), letter case ignored."""
    keys = [bindparam(None, key_of(value), String) for value in values]
    stored = key_column(column) if indexed else None
    if stored is not None:  # the stored key, compared as it is: its index serves
        return stored == keys[0] if len(keys) == 1 else stored.in_(keys)
    return key_in(column, *keys)


# The extreme's encoding (see text_extreme): a mark that sorts below every other character, how
# a mark in the key is written, and the end of the key.
_MARK = "\x01"
_MARKS = (_MARK, _MARK + "\x02", _MARK * 2)


def text_extreme(
    column: ColumnElement[Any], aggregate: Callable[[ColumnElement[Any]], ColumnElement[Any]]
) -> ColumnElement[Any]:
    """MIN() or MAX() (`aggregate`) of text by its key, as one of the values whose key it is:
    the first of them by code point (MIN) or the last (MAX), the same on every back end.

    The aggregate runs over `key || MARK MARK || value`, the key with each MARK in it written
    MARK followed by \\x02: so two MARKs end the key, and a key that is the start of another
    sorts first, as the key alone would. What follows the first pair of MARKs is the value.
    """
    # The marks are written into the SQL, not bound: the aggregate, written twice below, is then
    # one expression, which the database computes once.
    mark, escape, end = (bindparam(None, text, String, literal_execute=True) for text in _MARKS)
    escaped = func.replace(text_key(column), mark, escape, type_=Text)
    encoded = escaped + end + cast(column, Text)
    extreme = aggregate(encoded)
    start = text_position(extreme, end) + 2
    return func.substr(extreme, start, type_=Text)


def group_spelling(column: ColumnElement[Any]) -> ColumnElement[Any]:
    """The value a group of text shows, its values sharing one key: the first of them by code
    point, the same on every back end (what text_extreme(column, MIN) gives, for less)."""
    return func.min(code_point_order(column), type_=Text)
