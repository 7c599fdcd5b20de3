"""Objects and fields as the Metadata API writes them: a CustomObject's and a CustomField's
elements (fullName, label, type, length...), computed from their definitions.

A value is a str, bool, int, a nested mapping, or a list (an element repeated); None leaves the
element out. Keys follow the Metadata WSDL's order: fullName, then the rest alphabetically."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from app.metadata.loader import label_from_name
from app.metadata.model import FieldDef, FieldType, SObjectDef

Metadata = dict[str, Any]
CUSTOM_SUFFIX = "__c"
RELATIONSHIP_SUFFIX = "__r"


def is_custom_name(name: str) -> bool:
    return name.endswith(CUSTOM_SUFFIX)


_FORMAT_NUMBER = re.compile(r"\{0:0?(\d+)d\}")


def display_format(pattern: str) -> str:
    """An auto-number's format as Setup writes it: `{0:08d}` is `{00000000}`."""
    return _FORMAT_NUMBER.sub(lambda match: "{" + "0" * int(match[1]) + "}", pattern)


def _ordered(values: Metadata) -> Metadata:
    """fullName first, then alphabetically, without the elements left out (None)."""
    kept = {key: value for key, value in values.items() if value is not None}
    full_name = {"fullName": kept.pop("fullName")} if "fullName" in kept else {}
    return {**full_name, **dict(sorted(kept.items()))}


def _value_set(field: FieldDef) -> Metadata:
    values = [
        _ordered({"fullName": entry.value, "default": entry.default, "label": entry.label})
        for entry in field.picklist
    ]
    return _ordered(
        {
            "restricted": field.restricted_picklist or None,
            "valueSetDefinition": {"sorted": False, "value": values},
        }
    )


def _text_area_kind(field: FieldDef) -> str:
    if field.html_formatted:
        return "Html"
    return "LongTextArea" if field.is_long_text else "TextArea"


# Each field type's Metadata type name, and the elements that type carries.
_TYPE_NAMES: dict[FieldType, Callable[[FieldDef], str]] = {
    FieldType.STRING: lambda field: "Text",
    FieldType.TEXTAREA: _text_area_kind,
    FieldType.PICKLIST: lambda field: "Picklist",
    FieldType.MULTIPICKLIST: lambda field: "MultiselectPicklist",
    FieldType.COMBOBOX: lambda field: "Picklist",
    FieldType.EMAIL: lambda field: "Email",
    FieldType.PHONE: lambda field: "Phone",
    FieldType.URL: lambda field: "Url",
    FieldType.BOOLEAN: lambda field: "Checkbox",
    FieldType.INT: lambda field: "Number",
    FieldType.DOUBLE: lambda field: "Number",
    FieldType.CURRENCY: lambda field: "Currency",
    FieldType.PERCENT: lambda field: "Percent",
    FieldType.DATE: lambda field: "Date",
    FieldType.DATETIME: lambda field: "DateTime",
    FieldType.TIME: lambda field: "Time",
    FieldType.REFERENCE: lambda field: "MasterDetail" if field.cascade_delete else "Lookup",
    FieldType.LOCATION: lambda field: "Location",
}
NUMBERS = frozenset({FieldType.INT, FieldType.DOUBLE, FieldType.CURRENCY, FieldType.PERCENT})
LENGTHS = frozenset({FieldType.STRING, FieldType.TEXTAREA})
VISIBLE_LINES = {"LongTextArea": 3, "Html": 25, "MultiselectPicklist": 4}


def metadata_type(field: FieldDef) -> str:
    if field.auto_number:
        return "AutoNumber"
    return _TYPE_NAMES[field.type](field)


def _typed_elements(field: FieldDef, kind: str) -> Metadata:
    """What a field's type adds: length, precision and scale, a picklist's values, a
    lookup's target, a checkbox's default."""
    elements: Metadata = {}
    if field.type in LENGTHS and kind != "TextArea":
        elements["length"] = field.length
    if field.type in NUMBERS:
        elements["precision"] = field.digits if field.type is FieldType.INT else field.precision
        elements["scale"] = field.scale
    if field.picklist:
        elements["valueSet"] = _value_set(field)
    if field.type is FieldType.REFERENCE and field.reference_to:
        # The Metadata API names the parent's side: its related list (describe's child
        # relationship, without __r) and that list's label.
        children = (field.child_relationship_name or "").removesuffix(RELATIONSHIP_SUFFIX)
        elements["referenceTo"] = field.reference_to[0]
        elements["relationshipName"] = children or None
        elements["relationshipLabel"] = label_from_name(children) if children else None
        if kind == "Lookup":
            elements["deleteConstraint"] = "SetNull"
    if field.type is FieldType.BOOLEAN:
        elements["defaultValue"] = "true" if field.default else "false"
    if field.auto_number:
        elements["displayFormat"] = display_format(field.auto_number_format)
    elements["visibleLines"] = VISIBLE_LINES.get(kind)
    return elements


def custom_field_metadata(
    sobject: SObjectDef, field: FieldDef, *, in_object: bool = False
) -> Metadata:
    """A CustomField: `fullName` is `Object.Field__c`, or `Field__c` among its object's
    `fields`."""
    kind = metadata_type(field)
    required = not field.nillable and field.type is not FieldType.BOOLEAN
    return _ordered(
        {
            "fullName": field.name if in_object else f"{sobject.name}.{field.name}",
            "externalId": field.external_id if field.type is not FieldType.BOOLEAN else None,
            "label": field.label,
            "required": required if kind not in ("MasterDetail", "AutoNumber") else None,
            "type": kind,
            "unique": field.unique if field.type in LENGTHS | NUMBERS else None,
            **_typed_elements(field, kind),
        }
    )


def _name_field(sobject: SObjectDef) -> Metadata:
    field = sobject.field(sobject.name_field or "Name")
    if field is None:
        return {"label": sobject.label + " Name", "type": "Text"}
    kind = "AutoNumber" if field.auto_number else "Text"
    return _ordered(
        {
            "displayFormat": display_format(field.auto_number_format)
            if field.auto_number
            else None,
            "label": field.label,
            "type": kind,
        }
    )


def custom_object_metadata(sobject: SObjectDef) -> Metadata:
    """A CustomObject: its labels, name field, sharing and deployment, and its custom
    fields."""
    fields = [
        custom_field_metadata(sobject, f, in_object=True)
        for f in sobject.fields
        if is_custom_name(f.name)
    ]
    custom = is_custom_name(sobject.name)
    return _ordered(
        {
            "fullName": sobject.name,
            "deploymentStatus": "Deployed" if custom else None,
            "enableSearch": sobject.searchable if custom else None,
            "fields": fields or None,
            "label": sobject.label if custom else None,
            "nameField": _name_field(sobject) if custom else None,
            "pluralLabel": sobject.label_plural if custom else None,
            "sharingModel": "ReadWrite",
        }
    )
