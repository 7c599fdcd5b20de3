"""The Tooling API's objects (tooling_objects/*.yaml): EntityDefinition, FieldDefinition,
CustomObject, CustomField, ApexClass and ApexTrigger, as one schema registry of their own, and
the org's metadata objects both APIs serve (StaticResource, the standard object's definition).

The first ones' rows describe an org's schema; app.services.tooling_rows computes them from the
org's registry, so the Tooling API and describe never disagree. A metadata object's records
are the sandbox's own, read and written as the REST API's are."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from app.metadata.loader import STANDARD_OBJECTS_DIR, load_object, read_definitions
from app.metadata.registry import SchemaRegistry

TOOLING_OBJECTS_DIR = Path(__file__).parent / "tooling_objects"


@cache
def tooling_registry() -> SchemaRegistry:
    """The Tooling API's objects: the same for every org (their rows differ)."""
    definitions = read_definitions(TOOLING_OBJECTS_DIR)
    shared = read_definitions(STANDARD_OBJECTS_DIR)
    definitions.update(
        {name: raw for name, raw in shared.items() if raw.get("metadataComponent", False)}
    )
    return SchemaRegistry(load_object(raw) for raw in definitions.values())
