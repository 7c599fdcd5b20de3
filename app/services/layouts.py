"""What an org's UI metadata says of each object, built from its fields (an org here has no
page layout, tab or theme of its own): one layout with the object's fields, the system
default compact layout, no approval layouts, a tab and a theme per object."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.errors import NotFound
from app.metadata.describe import NAMED_LAYOUTS, describe_field
from app.metadata.model import COMPOUND_TYPES, ChildRelationship, FieldDef, SObjectDef
from app.metadata.registry import SchemaRegistry
from app.storage.ids import make_id

MASTER_RECORD_TYPE = "012000000000000AAA"
# The audit fields a layout shows in its own section, as Salesforce's default layouts do.
SYSTEM_INFORMATION = ("CreatedById", "LastModifiedById")
LAYOUT_ID_PREFIX = "00h"
COMPACT_FIELDS = 4


def layout_id(sobject: SObjectDef) -> str:
    return make_id(LAYOUT_ID_PREFIX, object_number(sobject))


def object_number(sobject: SObjectDef) -> int:
    """A stable number per object, from its key prefix (ids of its layout and list view)."""
    return int.from_bytes(sobject.key_prefix.encode(), "big")


def _shown(field: FieldDef) -> bool:
    """A field a layout places: not a component of a compound field, not a system field."""
    return field.compound_field_name is None and not field.system and field.name != "Id"


def _component(field: FieldDef, parts: list[FieldDef]) -> dict[str, Any]:
    """A field's place in a layout item; a compound's (an address) holds its parts'."""
    component: dict[str, Any] = {
        "details": describe_field(field),
        "displayLines": 1,
        "tabOrder": 0,
        "type": "Field",
        "value": field.name,
    }
    if parts:
        component["components"] = [_component(part, []) for part in parts]
        component["fieldType"] = field.type.value
        component["displayLines"] = len(parts)
    return component


def _item(sobject: SObjectDef, field: FieldDef, *, editing: bool) -> dict[str, Any]:
    parts = sobject.compound_parts(field) if field.type in COMPOUND_TYPES else []
    edited = parts or [field]  # a compound is edited through its parts
    return {
        "editableForNew": any(f.createable for f in edited),
        "editableForUpdate": any(f.updateable for f in edited),
        "label": field.label,
        "layoutComponents": [_component(field, parts)],
        "placeholder": False,
        "required": editing and any(not f.nillable and f.createable for f in edited),
    }


def _section(
    sobject: SObjectDef, heading: str, fields: list[FieldDef], *, editing: bool
) -> dict[str, Any]:
    rows = [fields[index : index + 2] for index in range(0, len(fields), 2)]
    return {
        "collapsed": False,
        "columns": 2,
        "heading": heading,
        "layoutRows": [
            {
                "layoutItems": [_item(sobject, f, editing=editing) for f in row],
                "numItems": len(row),
            }
            for row in rows
        ],
        "layoutSectionId": None,
        "parentLayoutId": None,
        "rows": len(rows),
        "tabOrder": "TopToBottom",
        "useCollapsibleSection": False,
        "useHeading": True,
    }


def _editable(sobject: SObjectDef, field: FieldDef) -> bool:
    if field.type in COMPOUND_TYPES:
        return any(part.createable or part.updateable for part in sobject.compound_parts(field))
    return field.createable or field.updateable


def _sections(sobject: SObjectDef, *, editing: bool) -> list[dict[str, Any]]:
    fields = [f for f in sobject.fields if _shown(f)]
    if editing:
        fields = [f for f in fields if _editable(sobject, f)]
    sections = [_section(sobject, f"{sobject.label} Information", fields, editing=editing)]
    audit = [f for name in SYSTEM_INFORMATION if (f := sobject.field(name)) is not None]
    if audit and not editing:
        sections.append(_section(sobject, "System Information", audit, editing=False))
    return sections


def _related_list(registry: SchemaRegistry, child: ChildRelationship) -> dict[str, Any] | None:
    child_object = registry.get(child.child_sobject)
    if child_object is None or not child.relationship_name:
        return None
    name_field = child_object.name_field or "Id"
    column = child_object.field(name_field)
    return {
        "accessLevelRequiredForCreate": None,
        "buttons": [],
        "columns": [
            {
                "field": f"{child_object.name}.{name_field}",
                "format": None,
                "label": column.label if column else name_field,
                "lookupId": None,
                "name": name_field,
                "sortable": True,
            }
        ],
        "custom": child_object.custom,
        "field": child.field,
        "label": child_object.label_plural,
        "limitRows": 5,
        "name": child.relationship_name,
        "sobject": child_object.name,
        "sort": [],
    }


# The standard buttons a default layout's detail page shows, each where the object allows
# what it does.
STANDARD_BUTTONS: tuple[tuple[str, str, Callable[[SObjectDef], bool]], ...] = (
    ("Edit", "Edit", lambda sobject: sobject.updateable),
    ("Delete", "Delete", lambda sobject: sobject.deletable),
    ("Clone", "Clone", lambda sobject: sobject.createable),
)


def _button(name: str, label: str) -> dict[str, Any]:
    """A standard button as describe gives it: no URL, window or colours of its own."""
    unset = ("behavior", "content", "contentSource", "encoding", "height", "menubar")
    more = ("resizeable", "scrollbars", "showsLocation", "showsStatus", "toolbar", "url")
    return {
        **dict.fromkeys(unset, None),
        "colors": [],
        "custom": False,
        "icons": [],
        "label": label,
        "name": name,
        "overridden": False,
        **dict.fromkeys(more, None),
        "width": None,
        "windowPosition": None,
    }


def layout(sobject: SObjectDef, registry: SchemaRegistry) -> dict[str, Any]:
    """The object's one page layout: its standard buttons, its fields, two to a row, and a
    related list per child relationship."""
    related = [_related_list(registry, child) for child in sobject.child_relationships]
    buttons = [_button(name, label) for name, label, shown in STANDARD_BUTTONS if shown(sobject)]
    return {
        "buttonLayoutSection": {"detailButtons": buttons},
        "detailLayoutSections": _sections(sobject, editing=False),
        "editLayoutSections": _sections(sobject, editing=True),
        "feedView": None,
        "highlightsPanelLayoutSection": None,
        "id": layout_id(sobject),
        "multirowEditLayoutSections": [],
        "offlineLinks": [],
        "quickActionList": {"quickActionListItems": []},
        "relatedContent": None,
        "relatedLists": [item for item in related if item is not None],
        "saveOptions": [],
    }


def layouts(sobject: SObjectDef, registry: SchemaRegistry, base: str) -> dict[str, Any]:
    """`/sobjects/{T}/describe/layouts`: the layouts and which record type uses which."""
    return {
        "layouts": [layout(sobject, registry)],
        "recordTypeMappings": [
            {
                "active": True,
                "available": True,
                "defaultRecordTypeMapping": True,
                "developerName": "Master",
                "layoutId": layout_id(sobject),
                "master": True,
                "name": "Master",
                "picklistsForRecordType": [],
                "recordTypeId": MASTER_RECORD_TYPE,
                "urls": {
                    "layout": f"{base}/sobjects/{sobject.name}/describe/layouts/"
                    f"{MASTER_RECORD_TYPE}"
                },
            }
        ],
        "recordTypeSelectorRequired": [False],
    }


def layout_for_record_type(
    sobject: SObjectDef, registry: SchemaRegistry, record_type_id: str
) -> dict[str, Any]:
    """The layout of one record type: the Master's is the only one (15 or 18 characters)."""
    if record_type_id[:15] != MASTER_RECORD_TYPE[:15]:
        raise NotFound()
    return layout(sobject, registry)


def named_layout(sobject: SObjectDef, registry: SchemaRegistry, name: str) -> dict[str, Any]:
    """`/describe/namedLayouts/{name}`: a named layout, which shows the object's fields as its
    page layout does; 404 for a name the object has not."""
    if name not in NAMED_LAYOUTS.get(sobject.name, ()):
        raise NotFound()
    return {
        "layouts": [layout(sobject, registry)],
        "recordTypeMappings": [],
        "recordTypeSelectorRequired": [False],
    }


def compact_layouts(sobject: SObjectDef, base: str) -> dict[str, Any]:
    """The system default compact layout: the name field and the next few fields."""
    fields = [f for f in sobject.fields if _shown(f)]
    fields.sort(key=lambda f: not f.name_field)
    items = [_item(sobject, f, editing=False) for f in fields[:COMPACT_FIELDS]]
    return {
        "compactLayouts": [
            {
                "actions": [],
                "fieldItems": items,
                "id": None,
                "imageItems": [],
                "label": "System Default",
                "name": "SYSTEM",
                "objectType": sobject.name,
            }
        ],
        "defaultCompactLayoutId": None,
        "recordTypeCompactLayoutMappings": [
            {
                "available": True,
                "compactLayoutId": None,
                "compactLayoutName": "SYSTEM",
                "recordTypeId": MASTER_RECORD_TYPE,
                "recordTypeName": "Master",
                "urls": {
                    "compactLayout": f"{base}/sobjects/{sobject.name}/describe/compactLayouts/"
                    f"{MASTER_RECORD_TYPE}"
                },
            }
        ],
    }


# Salesforce's colour of a standard object's tab; a custom object's is its default.
TAB_COLORS = {"Account": "7F8DE1", "Contact": "A094ED", "Case": "F2CF5B", "Lead": "F88962"}
CUSTOM_TAB_COLOR = "3D8D8D"


def _icon_name(sobject: SObjectDef) -> str:
    return "custom/custom1" if sobject.custom else f"standard/{sobject.name.lower()}"


def theme_item(sobject: SObjectDef, base: str) -> dict[str, Any]:
    color = CUSTOM_TAB_COLOR if sobject.custom else TAB_COLORS.get(sobject.name, "4BC076")
    icon = f"{base}/img/icon/t4v35/{_icon_name(sobject)}"
    return {
        "colors": [{"color": color, "context": "primary", "theme": "theme4"}],
        "icons": [
            {
                "contentType": "image/svg+xml",
                "height": 0,
                "theme": "theme4",
                "url": f"{icon}.svg",
                "width": 0,
            },
            {
                "contentType": "image/png",
                "height": 120,
                "theme": "theme4",
                "url": f"{icon}_120.png",
                "width": 120,
            },
        ],
        "name": sobject.name,
    }


def tab(sobject: SObjectDef, base: str) -> dict[str, Any]:
    item = theme_item(sobject, base)
    return {
        "colors": item["colors"],
        "custom": sobject.custom,
        "iconUrl": item["icons"][1]["url"],
        "icons": item["icons"],
        "label": sobject.label_plural,
        "miniIconUrl": item["icons"][1]["url"],
        "name": sobject.name if sobject.custom else f"standard-{sobject.name}",
        "sobjectName": sobject.name,
        "url": f"{base}/{sobject.key_prefix}/o",
    }
