"""WITH DATA CATEGORY, for SOQL and SOSL: which articles a filter keeps, and its SQL.

Each filter (`Geography__c BELOW usa__c`) binds to the set of categories an article may be
classified at; filters are joined by AND. An org that defines no data category groups has no
classified article, so every filter keeps nothing (its group names cannot be checked either).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, false, select
from sqlalchemy.sql.expression import FromClause

from app.metadata.model import SObjectDef
from app.metadata.registry import SchemaRegistry
from app.soql.ast import DataCategoryFilter
from app.soql.errors import malformed
from app.storage.tables import TableSet


@dataclass(frozen=True)
class BoundCategoryFilter:
    group: str
    categories: tuple[str, ...]  # sorted: the bound query is a cache key


@dataclass(frozen=True)
class BoundCategories:
    """The filters of one query, and the object that records the articles' classifications
    (None: no article of this org is classified)."""

    filters: tuple[BoundCategoryFilter, ...]
    selections: str | None


def is_article(sobject: SObjectDef) -> bool:
    return sobject.name.endswith("__kav")


def bind_categories(
    registry: SchemaRegistry,
    sobject: SObjectDef,
    filters: tuple[DataCategoryFilter, ...],
    text: str,
) -> BoundCategories | None:
    """The filters for articles of `sobject`; None when there are none. `text` is the query,
    for positioned errors."""
    if not filters:
        return None
    if not is_article(sobject):
        raise malformed(
            f"WITH DATA CATEGORY only filters knowledge articles, not {sobject.name}",
            query=text,
            pos=filters[0].pos,
        )
    categories = registry.data_categories
    selection_object = registry.get(sobject.name.removesuffix("__kav") + "__DataCategorySelection")
    if not categories.groups or selection_object is None:
        return BoundCategories(filters=(), selections=None)
    bound = []
    for item in filters:
        group = categories.group(item.group)
        if group is None:
            raise malformed(
                f"Data category group {item.group} does not exist", query=text, pos=item.pos
            )
        matching: set[str] = set()
        for category in item.categories:
            if not group.has(category):
                raise malformed(
                    f"Data category {category} does not exist in the group {group.name}",
                    query=text,
                    pos=item.pos,
                )
            matching |= group.matching(item.operator, category)
        bound.append(BoundCategoryFilter(group.name, tuple(sorted(matching))))
    return BoundCategories(filters=tuple(bound), selections=selection_object.name)


def category_condition(
    categories: BoundCategories, root: FromClause, tables: TableSet
) -> ColumnElement[bool]:
    """The articles of `root` classified, in every filter's group, at one of its categories."""
    if categories.selections is None:
        return false()
    selections = tables[categories.selections]
    conditions: list[ColumnElement[Any]] = []
    for item in categories.filters:
        classified = select(selections.c.ParentId).where(
            selections.c.IsDeleted.is_(False),
            selections.c.DataCategoryGroupName == item.group,
            selections.c.DataCategoryName.in_(item.categories),
        )
        conditions.append(root.c.Id.in_(classified))
    return and_(*conditions)
