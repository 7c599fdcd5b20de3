"""The Metadata API's reads of an org's schema: describeMetadata, listMetadata and
readMetadata over CustomObject and CustomField, computed from the registry describe serves
(their ids the Tooling API's), and ApexClass and ApexTrigger, of which a fresh org has none.

A component type localforce does not model (Layout, Flow, ...) is refused by name, never
answered with an empty list that would claim the org has none."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from app.errors import FeatureNotSupported
from app.metadata.custom_metadata import (
    Metadata,
    custom_field_metadata,
    custom_object_metadata,
    is_custom_name,
)
from app.metadata.model import FieldDef, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.services.tooling_rows import CustomIds

# What listMetadata says of a component the org came with: no creator, the epoch (as a real
# org says of its standard objects).
SHIPPED = "1970-01-01T00:00:00.000Z"
OBJECTS_DIRECTORY = "objects"


def _objects(registry: SchemaRegistry) -> Iterator[tuple[str, SObjectDef, None]]:
    for sobject in registry:
        yield sobject.name, sobject, None


def _custom_fields(registry: SchemaRegistry) -> Iterator[tuple[str, SObjectDef, FieldDef]]:
    for sobject in registry:
        for field in sobject.fields:
            if is_custom_name(field.name):
                yield f"{sobject.name}.{field.name}", sobject, field


def _none(registry: SchemaRegistry) -> Iterator[tuple[str, SObjectDef, FieldDef | None]]:
    return iter(())


Components = Callable[[SchemaRegistry], Iterator[tuple[str, SObjectDef, FieldDef | None]]]
# Each component type served: its components, and the file a retrieve would put one in.
COMPONENTS: dict[str, tuple[Components, str]] = {
    "CustomObject": (_objects, "object"),
    "CustomField": (_custom_fields, "object"),
    "ApexClass": (_none, "cls"),
    "ApexTrigger": (_none, "trigger"),
}
DIRECTORIES = {"object": OBJECTS_DIRECTORY, "cls": "classes", "trigger": "triggers"}
CHILD_TYPES = {"CustomObject": ["CustomField"]}


def _served(type_name: str) -> tuple[Components, str]:
    found = COMPONENTS.get(type_name)
    if found is None:
        raise FeatureNotSupported(f"the Metadata API's {type_name} components")
    return found


def _component_id(ids: CustomIds, sobject: SObjectDef, field: FieldDef | None) -> str:
    if field is not None:
        return ids.fields.get((sobject.name, field.name), "")
    return ids.objects.get(sobject.name, "")


def list_components(registry: SchemaRegistry, type_name: str) -> list[dict[str, Any]]:
    """listMetadata's FileProperties for one ListMetadataQuery's type."""
    components, suffix = _served(type_name)
    ids = CustomIds(registry)
    listed = []
    for full_name, sobject, field in components(registry):
        custom = is_custom_name(full_name)
        listed.append(
            {
                "createdById": "",
                "createdByName": "",
                "createdDate": SHIPPED,
                "fileName": f"{DIRECTORIES[suffix]}/{sobject.name}.{suffix}",
                "fullName": full_name,
                "id": _component_id(ids, sobject, field),
                "lastModifiedById": "",
                "lastModifiedByName": "",
                "lastModifiedDate": SHIPPED,
                "manageableState": "unmanaged" if custom else None,
                "type": type_name,
            }
        )
    return listed


def read_components(
    registry: SchemaRegistry, type_name: str, full_names: list[str]
) -> list[Metadata | None]:
    """readMetadata's records, one per name asked for (None where the org has none)."""
    components, _ = _served(type_name)
    found = {name.lower(): (sobject, field) for name, sobject, field in components(registry)}
    records: list[Metadata | None] = []
    for name in full_names:
        match = found.get(name.lower())
        if match is None:
            records.append(None)
            continue
        sobject, field = match
        records.append(
            custom_object_metadata(sobject)
            if field is None
            else custom_field_metadata(sobject, field)
        )
    return records


def describe_metadata() -> dict[str, Any]:
    """describeMetadata: the component types this org serves."""
    types = [
        {
            "childXmlNames": CHILD_TYPES.get(name, []),
            "directoryName": DIRECTORIES[suffix],
            "inFolder": False,
            "metaFile": suffix in ("cls", "trigger"),
            "suffix": suffix,
            "xmlName": name,
        }
        for name, (_, suffix) in COMPONENTS.items()
        if name != "CustomField"  # a child of CustomObject, listed there
    ]
    return {
        "metadataObjects": types,
        "organizationNamespace": "",
        "partialSaveAllowed": True,
        "testRequired": False,
    }
