"""The Tooling API's rows for one org, computed from the schema registry describe serves: an
EntityDefinition per object, a FieldDefinition per field, a CustomObject per custom object and
a CustomField per custom field. A fresh org has no Apex classes or triggers.

What a row says follows the field's definition through the same properties describe reads
(filterable, sortable, groupable, nillable...), so the two never disagree."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from app.metadata.custom_metadata import CUSTOM_SUFFIX, is_custom_name
from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.storage.ids import NULL_ID, make_id
from app.storage.tables import TableSet

CUSTOM_OBJECT_PREFIX = "01I"
CUSTOM_FIELD_PREFIX = "00N"


def _numbers(field: FieldDef, kind: str) -> str:
    return f"{kind}({field.precision}, {field.scale})"


def _lookup(field: FieldDef, registry: SchemaRegistry) -> str:
    labels = [
        target.label if (target := registry.get(name)) is not None else name
        for name in field.reference_to
    ]
    kind = "Master-Detail" if field.cascade_delete else "Lookup"
    return f"{kind}({','.join(labels)})"


def _text_area(field: FieldDef) -> str:
    if field.html_formatted:
        return f"Rich Text Area({field.length})"
    if field.is_long_text:
        return f"Long Text Area({field.length})"
    return f"Text Area({field.length})"


# A field's DataType, as Setup names its type (Text(80), Checkbox, Lookup(User), ...).
_DATA_TYPES: dict[FieldType, Callable[[FieldDef, SchemaRegistry], str]] = {
    FieldType.ID: lambda field, registry: "Lookup()",
    FieldType.STRING: lambda field, registry: f"Text({field.length})",
    FieldType.TEXTAREA: lambda field, registry: _text_area(field),
    FieldType.PICKLIST: lambda field, registry: "Picklist",
    FieldType.MULTIPICKLIST: lambda field, registry: "Picklist (Multi-Select)",
    FieldType.COMBOBOX: lambda field, registry: "Picklist",
    FieldType.EMAIL: lambda field, registry: "Email",
    FieldType.PHONE: lambda field, registry: "Phone",
    FieldType.URL: lambda field, registry: f"URL({field.length})",
    FieldType.BOOLEAN: lambda field, registry: "Checkbox",
    FieldType.INT: lambda field, registry: f"Number({field.digits}, 0)",
    FieldType.DOUBLE: lambda field, registry: _numbers(field, "Number"),
    FieldType.CURRENCY: lambda field, registry: _numbers(field, "Currency"),
    FieldType.PERCENT: lambda field, registry: _numbers(field, "Percent"),
    FieldType.DATE: lambda field, registry: "Date",
    FieldType.DATETIME: lambda field, registry: "Date/Time",
    FieldType.TIME: lambda field, registry: "Time",
    FieldType.REFERENCE: _lookup,
    FieldType.JUNCTIONIDLIST: lambda field, registry: "Junction ID List",
    FieldType.LOCATION: lambda field, registry: "Geolocation",
    FieldType.ADDRESS: lambda field, registry: "Address",
    FieldType.BASE64: lambda field, registry: "Blob",
}
# A formula's DataType names what it returns: Formula (Text), Formula (Number)...
_FORMULA_KINDS = {
    FieldType.BOOLEAN: "Checkbox",
    FieldType.CURRENCY: "Currency",
    FieldType.DATE: "Date",
    FieldType.DATETIME: "Date/Time",
    FieldType.DOUBLE: "Number",
    FieldType.INT: "Number",
    FieldType.PERCENT: "Percent",
}
# A field's ValueTypeId: the type its values have in Apex, in lower case.
_VALUE_TYPES = {
    FieldType.ID: "id",
    FieldType.REFERENCE: "id",
    FieldType.BOOLEAN: "boolean",
    FieldType.INT: "integer",
    FieldType.DOUBLE: "double",
    FieldType.CURRENCY: "double",
    FieldType.PERCENT: "double",
    FieldType.DATE: "date",
    FieldType.DATETIME: "datetime",
    FieldType.TIME: "time",
    FieldType.LOCATION: "location",
    FieldType.ADDRESS: "address",
    FieldType.JUNCTIONIDLIST: "list",
    FieldType.BASE64: "base64",
}


def data_type(field: FieldDef, registry: SchemaRegistry) -> str:
    if field.calculated and field.custom:  # a standard derived field shows its own type
        return f"Formula ({_FORMULA_KINDS.get(field.type, 'Text')})"
    if field.auto_number:
        return "Auto Number"
    if field.name_field and field.type is FieldType.STRING and not field.custom:
        return "Name"
    return _DATA_TYPES[field.type](field, registry)


# Ids derived from names take this many base62 digits (the rest of an id's 9): two names
# meet with a chance of about one in 62**8 each.
NAMED_ID_SPACE = 62**8


def _named_id(prefix: str, name: str) -> str:
    digest = hashlib.sha256(name.lower().encode()).digest()
    return make_id(prefix, int.from_bytes(digest[:8], "big") % NAMED_ID_SPACE)


def _developer_name(name: str) -> str:
    return name.removesuffix(CUSTOM_SUFFIX)


class CustomIds:
    """The ids of the org's custom objects and fields: the Tooling API's rows and the Metadata
    API's components give the same. Each is derived from the component's name, so it stays
    the same whatever other fields a sandbox adds or removes."""

    def __init__(self, registry: SchemaRegistry) -> None:
        objects = [o.name for o in registry if is_custom_name(o.name)]
        fields = [(o.name, f.name) for o in registry for f in o.fields if is_custom_name(f.name)]
        self.objects = {name: _named_id(CUSTOM_OBJECT_PREFIX, name) for name in objects}
        self.fields = {key: _named_id(CUSTOM_FIELD_PREFIX, ".".join(key)) for key in fields}

    def entity(self, sobject: SObjectDef) -> str:
        """An object's durable id: its API name, or a custom object's 15-character id."""
        custom = self.objects.get(sobject.name)
        return sobject.name if custom is None else custom[:15]

    def field(self, sobject: SObjectDef, field: FieldDef) -> str:
        custom = self.fields.get((sobject.name, field.name))
        return f"{self.entity(sobject)}.{field.name if custom is None else custom[:15]}"


def _entity_row(sobject: SObjectDef, ids: CustomIds) -> dict[str, Any]:
    custom = is_custom_name(sobject.name)
    return {
        "Id": NULL_ID,
        "DurableId": ids.entity(sobject),
        "QualifiedApiName": sobject.name,
        "DeveloperName": _developer_name(sobject.name),
        "MasterLabel": sobject.label,
        "Label": sobject.label,
        "PluralLabel": sobject.label_plural,
        "KeyPrefix": sobject.key_prefix or None,
        "IsCustomizable": True,
        "IsCustomSetting": False,
        "IsQueryable": True,
        "IsSearchable": sobject.searchable,
        "IsLayoutable": True,
        "IsTriggerable": True,
        "IsApexTriggerable": True,
        "IsEverCreatable": sobject.createable,
        "IsEverUpdatable": sobject.updateable,
        "IsEverDeletable": sobject.deletable,
        "IsRetrieveable": True,
        "IsIdEnabled": True,
        "IsDeprecatedAndHidden": False,
        "IsFeedEnabled": False,
        "DeploymentStatus": "Deployed" if custom else None,
        "InternalSharingModel": "ReadWrite",
        "ExternalSharingModel": "Private",
    }


def _field_row(
    sobject: SObjectDef, field: FieldDef, ids: CustomIds, registry: SchemaRegistry
) -> dict[str, Any]:
    indexed = field.type in (FieldType.ID, FieldType.REFERENCE) or field.external_id
    return {
        "Id": NULL_ID,
        "DurableId": ids.field(sobject, field),
        "QualifiedApiName": field.name,
        "DeveloperName": _developer_name(field.name),
        "MasterLabel": field.label,
        "Label": field.label,
        "EntityDefinitionId": ids.entity(sobject),
        "DataType": data_type(field, registry),
        "ValueTypeId": _VALUE_TYPES.get(field.type, "string"),
        "Length": field.length if field.is_text or field.type is FieldType.ID else 0,
        "Precision": field.precision,
        "Scale": field.scale,
        "Digits": field.digits,
        "RelationshipName": field.relationship_name,
        "IsNillable": field.nillable,
        "IsCalculated": field.calculated or field.auto_number,
        "IsIndexed": indexed or field.unique or field.name_field,
        "IsNameField": field.name_field,
        "IsCompound": field.type in (FieldType.ADDRESS, FieldType.LOCATION),
        "IsHtmlFormatted": field.html_formatted,
        "IsApiFilterable": field.filterable,
        "IsApiSortable": field.sortable,
        "IsApiGroupable": field.groupable,
        "IsListFilterable": field.filterable,
        "IsListSortable": field.sortable,
        "IsListVisible": True,
        "IsCompactLayoutable": not field.system,
        "IsWorkflowFilterable": field.filterable,
        "IsFieldHistoryTracked": False,
        "IsHighScaleNumber": False,
        "IsAiPredictionField": False,
    }


def _custom_object_row(sobject: SObjectDef, ids: CustomIds) -> dict[str, Any]:
    return {
        "Id": ids.objects[sobject.name],
        "DeveloperName": _developer_name(sobject.name),
        "ManageableState": "unmanaged",
        "SharingModel": "ReadWrite",
    }


def _custom_field_row(sobject: SObjectDef, field: FieldDef, ids: CustomIds) -> dict[str, Any]:
    return {
        "Id": ids.fields[(sobject.name, field.name)],
        "DeveloperName": _developer_name(field.name),
        "TableEnumOrId": ids.entity(sobject),
        "ManageableState": "unmanaged",
    }


def _complete(rows: list[dict[str, Any]], tables: TableSet, name: str) -> list[dict[str, Any]]:
    """Every row with every column of its table (unset: null), as one insert needs."""
    columns = [column.name for column in tables[name].columns]
    return [
        {"IsDeleted": False, **{column: None for column in columns if column != "IsDeleted"}, **row}
        for row in rows
    ]


def tooling_rows(registry: SchemaRegistry, tables: TableSet) -> dict[str, list[dict[str, Any]]]:
    """The rows of the Tooling API's objects (`tables`) that describe the org `registry`."""
    ids = CustomIds(registry)
    objects = list(registry)
    rows: dict[str, list[dict[str, Any]]] = {
        "EntityDefinition": [_entity_row(o, ids) for o in objects],
        "FieldDefinition": [_field_row(o, f, ids, registry) for o in objects for f in o.fields],
        "CustomObject": [_custom_object_row(o, ids) for o in objects if is_custom_name(o.name)],
        "CustomField": [
            _custom_field_row(o, f, ids)
            for o in objects
            for f in o.fields
            if is_custom_name(f.name)
        ],
    }
    return {name: _complete(found, tables, name) for name, found in rows.items()}
