"""Reads an org's object definitions (seed/orgs/<org>/objects/*.yaml) into frozen SObjectDefs.

The YAML holds only what differs between objects; the loader adds the system fields every
object has (Id, IsDeleted and the audit fields) and fills in describe defaults. Every org also
has the standard objects of `standard_objects/` (Organization, Group, Profile, the sales
objects, ...) and their standard fields: an org's own definition of one adds to it and wins
where both define a field.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from app.metadata.model import (
    CompoundName,
    FieldDef,
    FieldType,
    PicklistValue,
    SObjectDef,
)

DEFAULT_LENGTHS = {
    FieldType.STRING: 255,
    FieldType.PICKLIST: 255,
    FieldType.MULTIPICKLIST: 4099,
    FieldType.COMBOBOX: 255,
    FieldType.EMAIL: 80,
    FieldType.PHONE: 40,
    FieldType.URL: 255,
    FieldType.TEXTAREA: 32000,
    FieldType.ID: 18,
    FieldType.REFERENCE: 18,
}


# A standard picklist's length (a custom one's is DEFAULT_LENGTHS'), as the recorded describes
# give it for the picklists an org left as shipped (every one of Event's, Contact.Salutation);
# one whose values an admin edited reads 255 there.
STANDARD_PICKLIST_LENGTH = 40
# Fields every object's describe marks defaulted on create: the owner is the creating user
# (app.services.records) when none is sent.
DEFAULTED_EVERYWHERE = frozenset({"OwnerId"})


def _system_fields_before() -> list[FieldDef]:
    return [
        FieldDef(
            name="Id",
            type=FieldType.ID,
            label="Record ID",
            length=18,
            nillable=False,
            createable=False,
            updateable=False,
            system=True,
        )
    ]


def _audit_reference(name: str, label: str, relationship: str) -> FieldDef:
    return FieldDef(
        name=name,
        type=FieldType.REFERENCE,
        label=label,
        length=18,
        nillable=False,
        createable=False,
        updateable=False,
        reference_to=("User",),
        relationship_name=relationship,
        system=True,
    )


def _audit_datetime(name: str, label: str) -> FieldDef:
    return FieldDef(
        name=name,
        type=FieldType.DATETIME,
        label=label,
        nillable=False,
        createable=False,
        updateable=False,
        system=True,
    )


def _system_fields_after() -> list[FieldDef]:
    return [
        FieldDef(
            name="IsDeleted",
            type=FieldType.BOOLEAN,
            label="Deleted",
            nillable=False,
            createable=False,
            updateable=False,
            default=False,
            system=True,
        ),
        _audit_datetime("CreatedDate", "Created Date"),
        _audit_reference("CreatedById", "Created By ID", "CreatedBy"),
        _audit_datetime("LastModifiedDate", "Last Modified Date"),
        _audit_reference("LastModifiedById", "Last Modified By ID", "LastModifiedBy"),
        _audit_datetime("SystemModstamp", "System Modstamp"),
    ]


def label_from_name(name: str) -> str:
    """A describe-style label from an API name: `ShippingCity` -> `Shipping City`."""
    base = re.sub(r"__c$", "", name).replace("_", " ")
    if base.endswith("Id") and len(base) > 2:
        base = base[:-2] + " ID"
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", base).strip()


def _picklist(raw: list[Any] | None, default: Any) -> tuple[PicklistValue, ...]:
    values = []
    for entry in raw or []:
        if isinstance(entry, dict):
            value, label = str(entry["value"]), str(entry.get("label", entry["value"]))
        else:
            value = label = str(entry)
        values.append(PicklistValue(value=value, label=label, default=value == default))
    return tuple(values)


def _length(name: str, field_type: FieldType, spec: dict[str, Any]) -> int:
    if "length" in spec:
        return int(spec["length"])
    if field_type is FieldType.PICKLIST and not spec.get("custom", name.endswith("__c")):
        return STANDARD_PICKLIST_LENGTH
    return DEFAULT_LENGTHS.get(field_type, 0)


def _field(name: str, spec: dict[str, Any]) -> FieldDef:
    field_type = FieldType(spec["type"])
    calculated = bool(spec.get("calculated", False))
    auto_number = bool(spec.get("autoNumber", False))
    derived = calculated or auto_number
    precision = int(spec.get("precision", 0))
    return FieldDef(
        name=name,
        type=field_type,
        label=spec.get("label") or label_from_name(name),
        length=_length(name, field_type, spec),
        precision=precision,
        scale=int(spec.get("scale", 0)),
        digits=int(spec.get("digits", 0)),
        # A checkbox is true or false, never null (every recorded describe's is not nillable).
        nillable=bool(spec.get("nillable", field_type is not FieldType.BOOLEAN)),
        createable=bool(spec.get("createable", True)) and not derived,
        updateable=bool(spec.get("updateable", True)) and not derived,
        default=spec.get("default"),
        picklist=_picklist(spec.get("picklist"), spec.get("default")),
        restricted_picklist=bool(spec.get("restricted", False)),
        reference_to=tuple(spec.get("referenceTo", ())),
        relationship_name=spec.get("relationshipName"),
        child_relationship_name=spec.get("childRelationshipName"),
        cascade_delete=bool(spec.get("cascadeDelete", False)),
        external_id=bool(spec.get("externalId", False)),
        unique=bool(spec.get("unique", False)),
        custom=bool(spec.get("custom", name.endswith("__c"))),
        calculated=calculated,
        auto_number=auto_number,
        auto_number_format=spec.get("autoNumberFormat", "{0:08d}"),
        html_formatted=bool(spec.get("htmlFormatted", False)),
        declared_id_lookup=bool(spec.get("idLookup", False)),
        declared_defaulted=spec.get(
            "defaultedOnCreate", True if name in DEFAULTED_EVERYWHERE else None
        ),
        declared_filterable=spec.get("filterable"),
        declared_groupable=spec.get("groupable"),
        declared_sortable=spec.get("sortable"),
        declared_aggregatable=spec.get("aggregatable"),
        compound_field_name=spec.get("compoundFieldName"),
        described=tuple(sorted(spec.get("describe", {}).items())),
    )


def _location(name: str, spec: dict[str, Any]) -> list[FieldDef]:
    """A geolocation field as Salesforce describes it: the compound (read-only; it reads as
    {latitude, longitude}), then its latitude and longitude, which are what is written."""
    compound = _field(name, {**spec, "createable": False, "updateable": False})
    base = name.removesuffix("__c")
    parts = []
    for part in ("Latitude", "Longitude"):
        component = _field(
            f"{base}__{part}__s",
            {
                "type": "double",
                "precision": 18,
                "scale": int(spec.get("scale", 15)),
                "label": f"{compound.label} ({part})",
                "custom": compound.custom,
            },
        )
        parts.append(FieldDef(**{**component.__dict__, "compound_field_name": name}))
    return [compound, *parts]


def _declared_fields(raw_fields: dict[str, Any]) -> list[FieldDef]:
    fields: list[FieldDef] = []
    for field_name, spec in raw_fields.items():
        if spec["type"] == FieldType.LOCATION.value:
            fields.extend(_location(field_name, spec))
        else:
            fields.append(_field(field_name, spec))
    return fields


# A standard address's parts: (the part's name after the address's prefix, its key in the
# compound's JSON object, its spec, its label after the prefix), in the order real orgs
# describe them.
ADDRESS_PARTS: tuple[tuple[str, str, dict[str, Any], str], ...] = (
    ("Street", "street", {"type": "textarea", "length": 255}, "Street"),
    ("City", "city", {"type": "string", "length": 40}, "City"),
    ("State", "state", {"type": "string", "length": 80}, "State/Province"),
    ("PostalCode", "postalCode", {"type": "string", "length": 20}, "Zip/Postal Code"),
    ("Country", "country", {"type": "string", "length": 80}, "Country"),
    ("Latitude", "latitude", {"type": "double", "precision": 18, "scale": 15}, "Latitude"),
    ("Longitude", "longitude", {"type": "double", "precision": 18, "scale": 15}, "Longitude"),
    (
        "GeocodeAccuracy",
        "geocodeAccuracy",
        {
            "type": "picklist",
            "restricted": True,
            "picklist": [
                "Address",
                "NearAddress",
                "Block",
                "Street",
                "ExtendedZip",
                "Zip",
                "Neighborhood",
                "City",
                "County",
                "State",
                "Unknown",
            ],
        },
        "Geocode Accuracy",
    ),
)


def address_part_names(address: str) -> list[str]:
    """`BillingAddress`'s parts: BillingStreet, ... (Lead's `Address`: Street, ...)."""
    prefix = address.removesuffix("Address")
    return [prefix + part for part, _, _, _ in ADDRESS_PARTS]


def with_address_parts(raw_fields: dict[str, Any]) -> dict[str, Any]:
    """Fields with each address (`BillingAddress: {type: address}`) preceded by its parts, as
    real orgs describe them: a part the definition also declares (an org's own ShippingCity)
    keeps its spec over the standard one and moves to its address."""
    addresses = [name for name, spec in raw_fields.items() if spec["type"] == "address"]
    claimed = {part for name in addresses for part in address_part_names(name)}
    fields: dict[str, Any] = {}
    for name, spec in raw_fields.items():
        if name in claimed:
            continue
        if spec["type"] == "address":
            prefix = name.removesuffix("Address")
            for part, _, part_spec, label in ADDRESS_PARTS:
                standard = {**part_spec, "label": f"{prefix} {label}".strip()}
                own = raw_fields.get(prefix + part, {})
                fields[prefix + part] = {**standard, **own, "compoundFieldName": name}
            spec = {**spec, "createable": False, "updateable": False}
        fields[name] = spec
    return fields


def load_object(raw: dict[str, Any], properties: dict[str, Any] | None = None) -> SObjectDef:
    """An object from its definition and its fields' property table (field_properties/)."""
    raw = with_properties({**raw, "fields": with_address_parts(raw["fields"])}, properties)
    name = raw["name"]
    declared = _declared_fields(raw["fields"])
    name_field = raw.get("nameField")
    declared = [
        FieldDef(**{**f.__dict__, "name_field": True}) if f.name == name_field else f
        for f in declared
    ]
    compound = raw.get("compoundName")
    return SObjectDef(
        name=name,
        label=raw.get("label", name),
        label_plural=raw.get("labelPlural", raw.get("label", name) + "s"),
        key_prefix=str(raw["keyPrefix"]),
        custom=bool(raw.get("custom", name.endswith("__c"))),
        name_field=name_field,
        fields=tuple(_system_fields_before() + declared + _system_fields_after()),
        # Salesforce's SOSL index leaves some objects out (price book entries, order products).
        searchable=bool(raw.get("searchable", True)),
        createable=bool(raw.get("createable", True)),
        updateable=bool(raw.get("updateable", True)),
        deletable=bool(raw.get("deletable", True)),
        key_field=str(raw.get("keyField", "Id")),
        metadata_component=bool(raw.get("metadataComponent", False)),
        compound_name=(
            CompoundName(parts=tuple(compound["parts"]), always=bool(compound["always"]))
            if compound
            else None
        ),
    )


STANDARD_OBJECTS_DIR = Path(__file__).parent / "standard_objects"
FIELD_PROPERTIES_DIR = Path(__file__).parent / "field_properties"


def read_definitions(directory: Path) -> dict[str, dict[str, Any]]:
    definitions = (
        yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted(directory.glob("*.yaml"))
    )
    return {raw["name"]: raw for raw in definitions}


def with_standard(own: dict[str, Any], standard: dict[str, Any] | None) -> dict[str, Any]:
    """An org's definition of an object over the standard one: the org's keys and fields win,
    and the standard fields it does not define follow its own."""
    if standard is None:
        return own
    extra = {k: v for k, v in standard["fields"].items() if k not in own["fields"]}
    return {**standard, **own, "fields": {**own["fields"], **extra}}


def read_field_properties() -> dict[str, dict[str, Any]]:
    """The property tables of field_properties/, by object: each row's properties by field,
    its `source` named in the table's `sources`."""
    tables = (
        yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted(FIELD_PROPERTIES_DIR.glob("*.yaml"))
    )
    return {table["object"]: table for table in tables}


def with_properties(raw: dict[str, Any], table: dict[str, Any] | None) -> dict[str, Any]:
    """A definition with its standard fields' properties as real orgs describe them, over
    whatever the definition says (an org's definition names a field's type, not how Salesforce
    describes it)."""
    if table is None:
        return raw
    fields = dict(raw["fields"])
    for name, row in table["fields"].items():
        if name in fields:
            properties = {key: value for key, value in row.items() if key != "source"}
            fields[name] = {**fields[name], **properties}
    return {**raw, "fields": fields}


def org_definitions(objects_dir: Path) -> dict[str, dict[str, Any]]:
    """The raw definitions of the standard objects and of every object in `objects_dir`
    (the org's own over the standard ones), by name."""
    standard = read_definitions(STANDARD_OBJECTS_DIR)
    own = read_definitions(objects_dir)
    merged = {name: with_standard(raw, standard.get(name)) for name, raw in own.items()}
    merged.update({name: raw for name, raw in standard.items() if name not in own})
    return merged


def load_definitions(definitions: dict[str, dict[str, Any]]) -> list[SObjectDef]:
    """Raw definitions (by name) as objects, with their fields' property tables."""
    properties = read_field_properties()
    return [load_object(definitions[name], properties.get(name)) for name in sorted(definitions)]


def load_org(objects_dir: Path) -> list[SObjectDef]:
    """The standard objects and every object definition in `objects_dir`, by name."""
    return load_definitions(org_definitions(objects_dir))
