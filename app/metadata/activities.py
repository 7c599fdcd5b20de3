"""ActivityHistory and OpenActivity: read-only views of an org's tasks and events, which
Salesforce queries only through a parent's child relationships ActivityHistories and
OpenActivities. Their definitions are in `activity_views/`; their rows are the tasks' and
events' own (app.storage.activity_views). They are not objects of the registry (nothing
stores, writes or lists them): a parent's describe and the SOQL binder reach them through
`SObjectDef.activity_relationships`."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from app.metadata.loader import load_object, read_definitions
from app.metadata.model import ChildRelationship, SObjectDef

ACTIVITY_VIEWS_DIR = Path(__file__).parent / "activity_views"
# Each view's relationship name on its parents.
RELATIONSHIP_NAMES = {"ActivityHistory": "ActivityHistories", "OpenActivity": "OpenActivities"}
# The field that links a parent's activities, where it is not WhatId: an account's are those
# whose account it is (related to it or to its contacts), a person's those about them.
LINKS = {"Account": "AccountId", "Contact": "WhoId", "Lead": "WhoId"}


@cache
def activity_views() -> dict[str, SObjectDef]:
    """ActivityHistory and OpenActivity, by name."""
    return {name: load_object(raw) for name, raw in read_definitions(ACTIVITY_VIEWS_DIR).items()}


def activity_relationships(
    parent: SObjectDef, task: SObjectDef | None
) -> tuple[ChildRelationship, ...]:
    """The parent's ActivityHistories and OpenActivities: an account's, a contact's or a lead's,
    and those of each object the org's tasks may be related to (Task.WhatId)."""
    what = task.field("WhatId") if task is not None else None
    related = what is not None and parent.name in what.reference_to
    link = LINKS.get(parent.name, "WhatId" if related else None)
    if task is None or link is None:
        return ()
    # Deleting a parent deletes its tasks and events, as the recorded describes say.
    return tuple(
        ChildRelationship(view, link, relationship, cascade_delete=True)
        for view, relationship in RELATIONSHIP_NAMES.items()
    )
