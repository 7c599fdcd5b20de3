"""The old alias form of FROM: `FROM Contact c, c.Account a WHERE a.Name = 'x'` names the
relationship path `c.Account` `a`, so `a.Name` means `c.Account.Name`. The parser reads the
aliases; this module writes each path that starts with one out in full, so that the binder
only ever sees ordinary paths."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

from app.soql.ast import FieldPath, Query

T = TypeVar("T")


def expand_paths(query: Query, aliases: dict[str, tuple[str, ...]]) -> Query:
    """`query` with every path that starts with a relationship alias (a key, lower-cased)
    written out as the path the alias names. Subqueries keep their own names."""
    if not aliases:
        return query
    changes = {
        item.name: _expand(getattr(query, item.name), aliases)
        for item in fields(query)
        if item.name not in ("sobject", "sobject_pos", "alias", "scope")
    }
    return replace(query, **changes)


def full_path(parts: tuple[str, ...], aliases: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    named = aliases.get(parts[0].lower()) if len(parts) > 1 else None
    return parts if named is None else (*named, *parts[1:])


def _expand(node: T, aliases: dict[str, tuple[str, ...]]) -> T:
    result: Any
    if isinstance(node, FieldPath):
        result = FieldPath(full_path(node.parts, aliases), node.pos)
    elif isinstance(node, Query):
        result = node  # a subquery or semi-join names its own object
    elif isinstance(node, tuple):
        result = tuple(_expand(item, aliases) for item in node)
    elif is_dataclass(node) and not isinstance(node, type):
        result = replace(
            node,
            **{f.name: _expand(getattr(node, f.name), aliases) for f in fields(node) if f.init},
        )
    else:
        result = node
    return result  # type: ignore[no-any-return]
