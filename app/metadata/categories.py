"""Data category groups: the trees knowledge articles are classified in, from an org's
seed/orgs/<org>/data_categories.yaml (a group's categories nested under their parents):

    Geography__c:
      All__c:
        usa__c:
          california__c:
        europe__c:

An article is classified by records of `<Article>__DataCategorySelection` (ParentId,
DataCategoryGroupName, DataCategoryName). `WITH DATA CATEGORY Geography__c BELOW usa__c` keeps
the articles classified at usa__c or under it; AT, ABOVE and ABOVE_OR_BELOW likewise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

OPERATORS = ("AT", "ABOVE", "BELOW", "ABOVE_OR_BELOW")


@dataclass(frozen=True)
class CategoryGroup:
    name: str
    # Each category's parent (None for the root), by lower-cased name; names as defined.
    parents: dict[str, str | None]
    names: dict[str, str]

    def has(self, category: str) -> bool:
        return category.lower() in self.names

    def _ancestors(self, category: str) -> list[str]:
        found = []
        parent = self.parents[category]
        while parent is not None:
            found.append(parent)
            parent = self.parents[parent]
        return found

    def matching(self, operator: str, category: str) -> set[str]:
        """The categories an article may be classified at to match `operator category`."""
        key = category.lower()
        keys = {key}
        if operator in ("ABOVE", "ABOVE_OR_BELOW"):
            keys.update(self._ancestors(key))
        if operator in ("BELOW", "ABOVE_OR_BELOW"):
            keys.update(name for name in self.parents if key in self._ancestors(name))
        return {self.names[name] for name in keys}


@dataclass(frozen=True)
class DataCategories:
    groups: dict[str, CategoryGroup] = field(default_factory=dict)

    def group(self, name: str) -> CategoryGroup | None:
        return self.groups.get(name.lower())

    @classmethod
    def load(cls, path: Path) -> DataCategories:
        """The groups in `path`; none when the org has no such file."""
        if not path.is_file():
            return cls()
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        groups = {}
        for name, tree in raw.items():
            parents: dict[str, str | None] = {}
            names: dict[str, str] = {}
            _walk(tree or {}, None, parents, names)
            groups[name.lower()] = CategoryGroup(name=name, parents=parents, names=names)
        return cls(groups)


def _walk(
    tree: dict[str, Any], parent: str | None, parents: dict[str, str | None], names: dict[str, str]
) -> None:
    for name, children in tree.items():
        parents[name.lower()] = parent
        names[name.lower()] = name
        _walk(children or {}, name.lower(), parents, names)
