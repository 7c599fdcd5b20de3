"""What the full-text search index holds for one object: its searched fields, each in a SOSL
search group. Every back end indexes these fields (app.storage.backends); which fields they are
is decided in app.storage.search_index."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FieldGroup(StrEnum):
    """A SOSL search group a field belongs to, from the heaviest in ranking (A) to the lightest."""

    NAME = "A"
    EMAIL = "B"
    PHONE = "C"
    OTHER = "D"


@dataclass(frozen=True)
class SearchField:
    name: str
    group: FieldGroup


@dataclass(frozen=True)
class SearchSpec:
    """The indexed fields of one object, in index column order."""

    sobject: str
    table: str
    fields: tuple[SearchField, ...]

    def names(self, groups: frozenset[FieldGroup] | None = None) -> tuple[str, ...]:
        """The indexed fields in `groups` (all of them for None), in index order."""
        return tuple(f.name for f in self.fields if groups is None or f.group in groups)
