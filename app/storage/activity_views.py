"""The rows of ActivityHistory and OpenActivity (app.metadata.activities): the org's tasks and
events, as one SELECT over both tables, each task or event in the view its state puts it in as
of the moment the query runs (AS_OF_PARAM, the org's clock): a closed task or an event that
has ended is history; an open task or an event that has not ended is open."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import ColumnElement, FromClause, Table, bindparam, literal, null, or_, select
from sqlalchemy.types import Boolean, DateTime

from app.metadata.model import SObjectDef
from app.storage.tables import TableSet, field_columns

AS_OF_PARAM = "lf_as_of"

# A view's field read from a field of another name: {source: {view field: source field}}.
RENAMED = {"Task": {"ActivityType": "Type"}, "Event": {"ActivityType": "Type"}}
# A view's field a source's rows all hold one value of; events are no tasks, and the Object
# Reference gives IsClosed and IsHighPriority for tasks only.
CONSTANT = {
    "Task": {"IsTask": True},
    "Event": {"IsTask": False, "IsClosed": False, "IsHighPriority": False},
}

Membership = Callable[[Table, ColumnElement[Any]], ColumnElement[bool]]
# Which of a source's rows each view holds, as of a moment.
MEMBERS: dict[str, dict[str, Membership]] = {
    "ActivityHistory": {
        "Task": lambda task, _as_of: task.c.IsClosed.is_(True),
        "Event": lambda event, as_of: event.c.EndDateTime < as_of,
    },
    "OpenActivity": {
        "Task": lambda task, _as_of: task.c.IsClosed.is_(False),
        "Event": lambda event, as_of: or_(
            event.c.EndDateTime.is_(None), event.c.EndDateTime >= as_of
        ),
    },
}


def activity_view_rows(tables: TableSet, view: SObjectDef) -> FromClause:
    """The view's rows, one column per field of the view, under the view's name."""
    columns = field_columns(tables.table_shape(view))
    as_of = bindparam(AS_OF_PARAM, type_=DateTime())
    selects = []
    for source, member in MEMBERS[view.name].items():
        table = tables[source]
        renamed, constant = RENAMED[source], CONSTANT[source]
        values = []
        for column in columns:
            name = renamed.get(column.name, column.name)
            if column.name in constant:
                value: ColumnElement[Any] = literal(constant[column.name], column.type)
            elif name in table.c:
                value = table.c[name]
            elif isinstance(column.type, Boolean):
                value = literal(False, column.type)  # a checkbox is never null
            else:
                value = null().cast(column.type)
            values.append(value.label(column.name))
        selects.append(select(*values).where(member(table, as_of)))
    return selects[0].union_all(*selects[1:]).subquery(view.name)
