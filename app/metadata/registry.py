"""The schema registry: an org's sObjects, found case-insensitively, with child relationships."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from app.metadata.activities import activity_relationships, activity_views
from app.metadata.categories import DataCategories
from app.metadata.loader import load_org
from app.metadata.model import ChildRelationship, SObjectDef


class SchemaRegistry:
    """All sObjects of one org. Child relationships are derived from the lookups pointing in."""

    def __init__(
        self, objects: Iterable[SObjectDef], data_categories: DataCategories | None = None
    ) -> None:
        self.data_categories = data_categories or DataCategories()
        objects = list(objects)
        children: dict[str, list[ChildRelationship]] = {o.name: [] for o in objects}
        for child in objects:
            for field in child.fields:
                if not field.child_relationship_name:
                    continue
                for target in field.reference_to:
                    if target in children:
                        children[target].append(
                            ChildRelationship(
                                child_sobject=child.name,
                                field=field.name,
                                relationship_name=field.child_relationship_name,
                                cascade_delete=field.cascade_delete,
                            )
                        )
        task = next((o for o in objects if o.name == "Task"), None)
        self._objects = {
            o.name.lower(): replace(
                o,
                child_relationships=tuple(children[o.name]),
                activity_relationships=activity_relationships(o, task),
            )
            for o in objects
        }
        self._by_prefix = {o.key_prefix: o for o in self._objects.values()}

    @classmethod
    def from_directory(cls, objects_dir: Path) -> SchemaRegistry:
        """The org whose objects are in `objects_dir`; its data categories sit beside it."""
        categories = DataCategories.load(objects_dir.parent / "data_categories.yaml")
        return cls(load_org(objects_dir), categories)

    def get(self, name: str) -> SObjectDef | None:
        return self._objects.get(name.lower())

    def activity_view(self, name: str) -> SObjectDef | None:
        """ActivityHistory or OpenActivity (any letter case): a child of the org's objects'
        activity relationships, never an object of the registry."""
        return next((v for v in activity_views().values() if v.name.lower() == name.lower()), None)

    def by_key_prefix(self, key_prefix: str) -> SObjectDef | None:
        return self._by_prefix.get(key_prefix)

    def __iter__(self) -> Iterator[SObjectDef]:
        return iter(sorted(self._objects.values(), key=lambda o: o.name))

    def __len__(self) -> int:
        return len(self._objects)
