"""Grading a schema change: an episode's diff (its `schema`, what the sandbox changed through
the Metadata API) against a task's expected components, each as the Metadata API writes it
(`{"type": "CustomField" | "CustomObject", "id": its fullName, "fields": its metadata}`).

Both sides go through the same reading of metadata the server stores a change by
(app.metadata.schema_changes), so a component matches when the sandbox holds what the expected
metadata would have made: every property it gives, and none it leaves out (a field made
unique, or required, that the task did not ask for is a different field)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.metadata.schema_changes import (
    SchemaChanges,
    field_spec,
    object_definition,
    split_full_name,
)

SCHEMA_COMPONENTS = frozenset({"CustomField", "CustomObject"})
# What the server chooses for a new object, not the agent: its key prefix.
CHOSEN_BY_THE_ORG = ("keyPrefix",)


def is_schema_change(change: Mapping[str, Any]) -> bool:
    return change.get("type") in SCHEMA_COMPONENTS


def _field_specs(expected: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    specs = {}
    for change in expected:
        if change["type"] == "CustomField":
            sobject, name = split_full_name(change["id"])
            specs[(sobject, name)] = field_spec(change["fields"], name)
    return specs


def _object_definition(metadata: Mapping[str, Any], name: str) -> dict[str, Any]:
    definition = object_definition({**metadata, "fullName": name}, "")
    return {key: value for key, value in definition.items() if key not in CHOSEN_BY_THE_ORG}


def schema_matches(schema: Mapping[str, Any] | None, expected: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the sandbox's schema changes are the expected ones, and nothing else: no
    field removed, no other field or object added or changed."""
    actual = SchemaChanges.from_json(schema)
    if any(actual.removed.values()):
        return False
    fields = {(sobject, name): actual.fields[sobject][name] for sobject, name in actual.added()}
    if fields != _field_specs(expected):
        return False
    objects = {
        change["id"]: _object_definition(change["fields"], change["id"])
        for change in expected
        if change["type"] == "CustomObject"
    }
    made = {
        name: {key: value for key, value in definition.items() if key not in CHOSEN_BY_THE_ORG}
        for name, definition in actual.objects.items()
    }
    return made == objects
