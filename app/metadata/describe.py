"""Renders describeGlobal and describe JSON from sObject definitions, with every key read."""

from __future__ import annotations

from typing import Any

from app.metadata.model import COMPOUND_TYPES, ID_TYPES, FieldDef, FieldType, SObjectDef

SOAP_TYPES = {
    FieldType.ID: "tns:ID",
    FieldType.REFERENCE: "tns:ID",
    FieldType.BOOLEAN: "xsd:boolean",
    FieldType.INT: "xsd:int",
    FieldType.DOUBLE: "xsd:double",
    FieldType.CURRENCY: "xsd:double",
    FieldType.PERCENT: "xsd:double",
    FieldType.DATE: "xsd:date",
    FieldType.DATETIME: "xsd:dateTime",
    FieldType.TIME: "xsd:time",
    FieldType.JUNCTIONIDLIST: "tns:ID",
    FieldType.LOCATION: "urn:location",
    FieldType.ADDRESS: "urn:address",
    FieldType.BASE64: "xsd:base64Binary",
}
# Long text can't be filtered, grouped or sorted on in Salesforce.


# The urls each version lists (a url's last version, where a later one dropped it: the
# recorded describes list defaultValues at 48.0 and no longer at 52.0; the release between is
# not documented, so 48.0 is taken as its last [belief]).
URLS_UNTIL = {"defaultValues": 48}
# Urls an object's describe does not list: an event (its recorded describe) and a user (the
# recorded global describe) have no approval layouts or list views.
URLS_NOT_LISTED = {
    "Event": frozenset({"approvalLayouts", "listviews"}),
    "User": frozenset({"approvalLayouts", "listviews"}),
}


# Urls of resources only some objects have, under the object's root, as the recorded describes
# list them (their routes answer that they are not built: app.api.planned).
OBJECT_URLS = {
    "Event": {"eventSeriesUpdates": "{ID}/fromThisEventOnwards"},
    "Case": {
        "caseArticleSuggestions": "suggestedArticles",
        "caseRowArticleSuggestions": "{ID}/suggestedArticles",
    },
}


# The named layouts an org has beside its page layouts (jsforce's sobject tests read User's
# alternate user layout): app.services.layouts serves them.
NAMED_LAYOUTS = {"User": ("UserAlt",)}


def _urls(sobject: SObjectDef, base: str) -> dict[str, str]:
    root = f"{base}/sobjects/{sobject.name}"
    urls = {
        "compactLayouts": f"{root}/describe/compactLayouts",
        "rowTemplate": f"{root}/{{ID}}",
        "approvalLayouts": f"{root}/describe/approvalLayouts",
        "defaultValues": f"{root}/defaultValues?recordTypeId&fields",
        "listviews": f"{root}/listviews",
        "describe": f"{root}/describe",
        "quickActions": f"{root}/quickActions",
        "layouts": f"{root}/describe/layouts",
        "sobject": root,
    }
    if not sobject.key_prefix:  # an activity view: no records of its own to lay out or list
        urls = {name: urls[name] for name in ("rowTemplate", "describe", "sobject")}
    if sobject.name in NAMED_LAYOUTS:
        urls["namedLayouts"] = f"{root}/describe/namedLayouts/{{LayoutName}}"
    urls.update(
        {name: f"{root}/{tail}" for name, tail in OBJECT_URLS.get(sobject.name, {}).items()}
    )
    version = _version_of(base)
    unlisted = URLS_NOT_LISTED.get(sobject.name, frozenset())
    return {
        name: url
        for name, url in urls.items()
        if name not in unlisted and version <= URLS_UNTIL.get(name, version)
    }


# Keys of an object's describe that arrived in a later API version than the oldest served:
# an older version's describe leaves them out. Version -> the keys it brought: the SOAP API's
# DescribeSObjectResult says the associate keys are "Available in API version 50.0 and
# later"; sobjectDescribeOption is absent from the recorded describes at 48.0 and present at
# 59.0, its release not documented (49.0 is taken [belief]).
OBJECT_KEYS_SINCE: dict[int, tuple[str, ...]] = {
    49: ("sobjectDescribeOption",),
    50: ("associateEntityType", "associateParentEntity"),
}


def _version_of(base: str) -> int:
    """The major API version of a versioned root (`/services/data/v59.0` -> 59)."""
    return int(base.rsplit("/v", 1)[-1].split(".")[0])


def _for_version(described: dict[str, Any], base: str) -> dict[str, Any]:
    version = _version_of(base)
    later = {key for since, keys in OBJECT_KEYS_SINCE.items() if version < since for key in keys}
    return {key: value for key, value in described.items() if key not in later}


# What the recorded describes say of the standard objects, by object: the ones whose records
# merge (Case's recorded describe, at 48.0, says false), whose
# records clone with their related records, and whose changes feed tracking posts.
MERGEABLE = frozenset({"Account", "Contact", "Lead"})
DEEP_CLONEABLE = frozenset({"Opportunity"})
FEED_ENABLED = frozenset({"Account", "Case", "Contact", "Lead", "Opportunity"})


def _object_flags(sobject: SObjectDef) -> dict[str, Any]:
    return {
        "activateable": False,
        "associateEntityType": None,
        "associateParentEntity": None,
        "createable": sobject.createable,
        "custom": sobject.custom,
        "customSetting": False,
        "deepCloneable": sobject.name in DEEP_CLONEABLE,
        "deletable": sobject.deletable,
        "deprecatedAndHidden": False,
        "feedEnabled": sobject.name in FEED_ENABLED,
        "hasSubtypes": False,
        "isInterface": False,
        "isSubtype": False,
        "keyPrefix": sobject.key_prefix or None,  # an activity view has none
        "label": sobject.label,
        "labelPlural": sobject.label_plural,
        "layoutable": True,
        "mergeable": sobject.name in MERGEABLE,
        "mruEnabled": True,
        "name": sobject.name,
        "queryable": True,
        "replicateable": True,
        "retrieveable": True,
        "searchable": sobject.searchable,
        "triggerable": True,
        "undeletable": sobject.deletable,
        "updateable": sobject.updateable,
    }


def global_entry(sobject: SObjectDef, base: str) -> dict[str, Any]:
    """The entry for one object in describeGlobal (`GET /sobjects`)."""
    return _for_version({**_object_flags(sobject), "urls": _urls(sobject, base)}, base)


def describe_global(objects: list[SObjectDef], base: str) -> dict[str, Any]:
    return {
        "encoding": "UTF-8",
        "maxBatchSize": 200,
        "sobjects": [global_entry(sobject, base) for sobject in objects],
    }


# What describe says of a text area's kind; other fields' (a person's name, an image's URL)
# come from their property tables (app/metadata/field_properties/).
TEXT_AREA_KINDS = {False: "plaintextarea", True: "richtextarea"}
# Lookups a search cannot be narrowed by, on every object (the recorded describes).
UNPREFILTERED_LOOKUPS = frozenset({"OwnerId", "RecordTypeId", "MasterRecordId"})


def _named_layout_infos(sobject: SObjectDef, base: str) -> list[dict[str, Any]]:
    root = f"{base}/sobjects/{sobject.name}/describe/namedLayouts"
    return [
        {"name": name, "urls": {"namedLayout": f"{root}/{name}"}}
        for name in NAMED_LAYOUTS.get(sobject.name, ())
    ]


def _byte_length(field: FieldDef) -> int:
    # An id is ASCII; other text counts 3 bytes a character (UTF-8's worst case).
    if field.type in ID_TYPES:
        return field.length
    return field.length * 3 if field.length else 0


def describe_field(field: FieldDef) -> dict[str, Any]:
    text = field.is_text
    derived = {
        "aggregatable": field.aggregatable,
        "aiPredictionField": False,
        "autoNumber": field.auto_number,
        "byteLength": _byte_length(field),
        "calculated": field.calculated,
        "calculatedFormula": None,
        "cascadeDelete": field.cascade_delete,
        "caseSensitive": False,
        "compoundFieldName": field.compound_field_name,
        "controllerName": None,
        "createable": field.createable,
        "custom": field.custom,
        "defaultValue": field.default if field.type is FieldType.BOOLEAN else None,
        "defaultValueFormula": None,
        "defaultedOnCreate": field.defaulted_on_create,
        "dependentPicklist": False,
        "deprecatedAndHidden": False,
        "digits": field.digits,
        "displayLocationInDecimal": False,
        "encrypted": False,
        "externalId": field.external_id,
        "extraTypeInfo": (
            TEXT_AREA_KINDS[field.html_formatted] if field.type is FieldType.TEXTAREA else None
        ),
        "filterable": field.filterable,
        "filteredLookupInfo": None,
        "formulaTreatNullNumberAsZero": False,
        "groupable": field.groupable,
        "highScaleNumber": False,
        "htmlFormatted": field.html_formatted,
        "idLookup": field.id_lookup,
        "inlineHelpText": None,
        "label": field.label,
        "length": field.length if text or field.type in {FieldType.ID, FieldType.REFERENCE} else 0,
        "mask": None,
        "maskType": None,
        "name": field.name,
        "nameField": field.name_field,
        "namePointing": len(field.reference_to) > 1,
        "nillable": field.nillable,
        # Field-level security reaches what may be empty, and checkboxes (recorded describes).
        "permissionable": (field.nillable or field.type is FieldType.BOOLEAN) and not field.system,
        "picklistValues": [
            {
                "active": True,
                "defaultValue": entry.default,
                "label": entry.label,
                "validFor": None,
                "value": entry.value,
            }
            for entry in field.picklist
        ],
        "polymorphicForeignKey": len(field.reference_to) > 1,
        "precision": field.precision,
        "queryByDistance": field.type in COMPOUND_TYPES,  # DISTANCE() measures from it
        "referenceTargetField": None,
        "referenceTo": list(field.reference_to),
        "relationshipName": field.relationship_name,
        "relationshipOrder": None,
        "restrictedDelete": False,
        "restrictedPicklist": field.restricted_picklist,
        "scale": field.scale,
        "searchPrefilterable": (
            field.type is FieldType.REFERENCE
            and not field.system
            and field.name not in UNPREFILTERED_LOOKUPS
        ),
        "soapType": SOAP_TYPES.get(field.type, "xsd:string"),
        "sortable": field.sortable,
        "type": field.type.value,
        "unique": field.unique,
        "updateable": field.updateable,
        "writeRequiresMasterRead": False,
    }
    return {**derived, **dict(field.described)}


def _ui_urls(sobject: SObjectDef, instance_url: str) -> dict[str, str]:
    """The user interface's pages for the object's records, on the org's own host."""
    return {
        "uiDetailTemplate": f"{instance_url}/{{ID}}",
        "uiEditTemplate": f"{instance_url}/{{ID}}/e",
        "uiNewRecord": f"{instance_url}/{sobject.key_prefix}/e",
    }


def describe_sobject(sobject: SObjectDef, base: str, instance_url: str) -> dict[str, Any]:
    """The full describe (`GET /sobjects/{T}/describe`); `instance_url` is the org's
    scheme://host, which the user interface's urls are on."""
    described = {
        **_object_flags(sobject),
        "actionOverrides": [],
        "childRelationships": [
            {
                "cascadeDelete": child.cascade_delete,
                "childSObject": child.child_sobject,
                "deprecatedAndHidden": False,
                "field": child.field,
                "junctionIdListNames": [],
                "junctionReferenceTo": [],
                "relationshipName": child.relationship_name,
                "restrictedDelete": False,
            }
            for child in (*sobject.child_relationships, *sobject.activity_relationships)
        ],
        "compactLayoutable": True,
        # Interfaces and their implementations: no standard object served is either.
        "defaultImplementation": None,
        "extendedBy": None,
        "extendsInterfaces": None,
        "fields": [describe_field(field) for field in sobject.fields],
        "implementedBy": None,
        "implementsInterfaces": None,
        "listviewable": None,
        "lookupLayoutable": None,
        "namedLayoutInfos": _named_layout_infos(sobject, base),
        "networkScopeFieldName": None,
        "recordTypeInfos": [
            {
                "active": True,
                "available": True,
                "defaultRecordTypeMapping": True,
                "developerName": "Master",
                "master": True,
                "name": "Master",
                "recordTypeId": "012000000000000AAA",
                "urls": {
                    "layout": f"{base}/sobjects/{sobject.name}/describe/layouts/012000000000000AAA"
                },
            }
        ],
        "searchLayoutable": True,
        "sobjectDescribeOption": "FULL",
        "supportedScopes": [{"label": "All " + sobject.label_plural.lower(), "name": "everything"}],
        "urls": {
            **_urls(sobject, base),
            **(_ui_urls(sobject, instance_url) if sobject.key_prefix else {}),
        },
    }
    return _for_version(described, base)
