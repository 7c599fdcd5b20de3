"""The org's quick actions: the standard global LogACall, which logs a completed call as a Task
on the record it is run from (a contact or lead as the task's Who, another record as its What).
Listed, described, its default values given, and run, as jsforce's quick-action calls use it."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection

from app.errors import NotFound, SalesforceError
from app.services import records
from app.services.context import OrgContext
from app.services.json_body import JsonBody
from app.storage.ids import normalize_id

LOG_A_CALL = "LogACall"
# What a logged call is before the caller's values: a completed call.
CALL_VALUES = {"Subject": "Call", "Status": "Completed", "TaskSubtype": "Call"}
# A context record of these objects is the task's Who; any other is its What.
WHO_OBJECTS = frozenset({"Contact", "Lead"})
LAYOUT_FIELDS = ("Subject", "Description", "WhoId", "WhatId")


def _known(name: str) -> None:
    if name != LOG_A_CALL:
        raise NotFound()


def _urls(base: str) -> dict[str, str]:
    root = f"{base}/quickActions/{LOG_A_CALL}"
    return {
        "defaultValues": f"{root}/defaultValues",
        "quickAction": root,
        "describe": f"{root}/describe",
        "defaultValuesTemplate": f"{root}/defaultValues/{{ID}}",
    }


def listed(base: str) -> list[dict[str, Any]]:
    """`/quickActions`: the global actions."""
    return [
        {
            "actionEnumOrId": LOG_A_CALL,
            "label": "Log a Call",
            "name": LOG_A_CALL,
            "type": LOG_A_CALL,
            "urls": _urls(base),
        }
    ]


def _layout() -> dict[str, Any]:
    rows = [
        {
            "layoutItems": [
                {
                    "editableForNew": True,
                    "editableForUpdate": True,
                    "label": name,
                    "layoutComponents": [{"type": "Field", "value": name}],
                    "placeholder": False,
                    "required": False,
                }
            ],
            "numItems": 1,
        }
        for name in LAYOUT_FIELDS
    ]
    return {
        "collapsed": False,
        "columns": 1,
        "heading": None,
        "layoutRows": rows,
        "layoutSectionId": None,
        "parentLayoutId": None,
        "rows": len(rows),
        "tabOrder": "TopToBottom",
        "useCollapsibleSection": False,
        "useHeading": False,
    }


def describe(name: str, base: str) -> dict[str, Any]:
    """`/quickActions/{name}/describe`."""
    _known(name)
    return {
        **listed(base)[0],
        "accessLevelRequired": None,
        "contextSobjectType": None,
        "defaultValues": [],
        "height": None,
        "iconName": None,
        "iconUrl": None,
        "icons": [],
        "layout": _layout(),
        "miniIconUrl": None,
        "targetParentField": None,
        "targetRecordTypeId": None,
        "targetSobjectType": "Task",
        "visualforcePageName": None,
        "visualforcePageUrl": None,
        "width": None,
    }


def _context_values(ctx: OrgContext, context_id: str | None) -> dict[str, str | None]:
    """The task's Who and What from the record the action runs on (none: both null)."""
    values: dict[str, str | None] = {"WhoId": None, "WhatId": None}
    if context_id is None:
        return values
    record_id = normalize_id(context_id)
    owner = ctx.registry.by_key_prefix(record_id[:3]) if record_id else None
    if record_id is None or owner is None:
        raise SalesforceError(f"invalid context id: {context_id}", error_code="MALFORMED_ID")
    values["WhoId" if owner.name in WHO_OBJECTS else "WhatId"] = record_id
    return values


def default_values(ctx: OrgContext, name: str, context_id: str | None) -> dict[str, Any]:
    """`/quickActions/{name}/defaultValues[/{contextId}]`: the task it would log."""
    _known(name)
    return {
        "attributes": {"type": "Task"},
        **CALL_VALUES,
        "Description": None,
        **_context_values(ctx, context_id),
    }


def execute(conn: Connection, ctx: OrgContext, name: str, body: dict[str, Any]) -> dict[str, Any]:
    """`POST /quickActions/{name}` with `{"contextId", "record"}`: the task logged."""
    _known(name)
    context_id = body.get("contextId")
    record = body.get("record") or {}
    if not isinstance(record, dict) or not (context_id is None or isinstance(context_id, str)):
        raise SalesforceError(
            "record must be an object and contextId a record id", error_code="JSON_PARSER_ERROR"
        )
    values = {
        **CALL_VALUES,
        **_context_values(ctx, context_id),
        **{k: v for k, v in record.items() if k != "attributes"},
    }
    task = ctx.registry.get("Task")
    assert task is not None  # every org has Task (app/metadata/standard_objects)
    task_id = records.create_record(conn, ctx, task, JsonBody(json.dumps(values), values))
    return {
        "contextId": context_id,
        "created": True,
        "errors": [],
        "feedItemIds": [],
        "id": task_id,
        "ids": [task_id],
        "success": True,
        "successMessage": "Call logged",
    }
