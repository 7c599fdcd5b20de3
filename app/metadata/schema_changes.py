"""A sandbox's changes to its org's schema, made through the Metadata API: custom fields added
to (or changed on, or removed from) its objects. Kept as data (JSON in the sandbox's row) and
laid over the org's definitions to give the sandbox's own registry.

A CustomField's metadata becomes a field spec in the definitions' own YAML vocabulary
(app.metadata.loader), after Salesforce's checks: the name, the type, and what each type must
specify. A refusal is a `MetadataError`: the statusCode, message and fields of a SaveResult's
error."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.metadata.custom_metadata import CUSTOM_SUFFIX, RELATIONSHIP_SUFFIX

# A custom field's name before __c: a letter, then letters, digits and single underscores, not
# ending in one (Salesforce's rule for API names), at most 40 characters.
DEVELOPER_NAME = re.compile(r"^[A-Za-z](?:[A-Za-z0-9]|_(?!_))*(?<!_)$")
MAX_NAME_LENGTH = 40
MAX_LABEL_LENGTH = 40
MAX_TEXT_LENGTH = 255
MAX_LONG_TEXT_LENGTH = 131072
MIN_LONG_TEXT_LENGTH = 256
MAX_PRECISION = 18
INTEGRITY = "FIELD_INTEGRITY_EXCEPTION"
CROSS_REFERENCE = "INVALID_CROSS_REFERENCE_KEY"
DUPLICATE = "DUPLICATE_DEVELOPER_NAME"


@dataclass(frozen=True)
class MetadataError(Exception):
    """One component's refusal, as a SaveResult's `errors` says it."""

    status_code: str
    message: str
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.status_code}: {self.message}"


def _must_specify(element: str, kind: str) -> MetadataError:
    # The form Salesforce gives a missing element ("Must specify a nameField of type Text or
    # AutoNumber" for an object) [belief: the wording for each field element].
    return MetadataError(
        INTEGRITY, f"Must specify '{element}' for a CustomField of type {kind}", (element,)
    )


def _integer(metadata: Mapping[str, Any], element: str, kind: str) -> int:
    raw = metadata.get(element)
    if raw is None or str(raw).strip() == "":
        raise _must_specify(element, kind)
    try:
        return int(str(raw).strip())
    except ValueError:
        raise MetadataError(
            INTEGRITY, f"'{raw}' is not a valid value for {element}", (element,)
        ) from None


def _flag(metadata: Mapping[str, Any], element: str) -> bool:
    return str(metadata.get(element, "false")).strip().lower() == "true"


def as_list(value: Any) -> list[Any]:
    """An element that may repeat: none, one or a list of them."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _text(metadata: Mapping[str, Any], kind: str) -> dict[str, Any]:
    length = _integer(metadata, "length", kind)
    if not 1 <= length <= MAX_TEXT_LENGTH:
        raise MetadataError(
            INTEGRITY, f"Length must be between 1 and {MAX_TEXT_LENGTH}", ("length",)
        )
    return {"type": "string", "length": length}


def _long_text(metadata: Mapping[str, Any], kind: str) -> dict[str, Any]:
    length = _integer(metadata, "length", kind)
    _integer(metadata, "visibleLines", kind)
    if not MIN_LONG_TEXT_LENGTH <= length <= MAX_LONG_TEXT_LENGTH:
        raise MetadataError(
            INTEGRITY,
            f"Length must be between {MIN_LONG_TEXT_LENGTH} and {MAX_LONG_TEXT_LENGTH}",
            ("length",),
        )
    return {"type": "textarea", "length": length, "htmlFormatted": kind == "Html"}


def _number(api_type: str) -> Callable[[Mapping[str, Any], str], dict[str, Any]]:
    def spec(metadata: Mapping[str, Any], kind: str) -> dict[str, Any]:
        precision = _integer(metadata, "precision", kind)
        scale = _integer(metadata, "scale", kind)
        if not 1 <= precision <= MAX_PRECISION or not 0 <= scale <= precision:
            raise MetadataError(
                INTEGRITY,
                f"Precision must be between 1 and {MAX_PRECISION}, and scale at most precision",
                ("precision", "scale"),
            )
        return {"type": api_type, "precision": precision, "scale": scale}

    return spec


def _picklist(api_type: str) -> Callable[[Mapping[str, Any], str], dict[str, Any]]:
    def spec(metadata: Mapping[str, Any], kind: str) -> dict[str, Any]:
        value_set = metadata.get("valueSet") or {}
        definition = (
            value_set.get("valueSetDefinition") or {} if isinstance(value_set, Mapping) else {}
        )
        entries = as_list(definition.get("value") if isinstance(definition, Mapping) else None)
        values = [e for e in entries if isinstance(e, Mapping) and e.get("fullName")]
        if not values:
            raise _must_specify("valueSet", kind)
        picklist = [
            {"value": str(e["fullName"]), "label": str(e.get("label") or e["fullName"])}
            for e in values
        ]
        default = next((str(e["fullName"]) for e in values if _flag(e, "default")), None)
        restricted = isinstance(value_set, Mapping) and _flag(value_set, "restricted")
        return {
            "type": api_type,
            "picklist": picklist,
            "default": default,
            "restricted": restricted,
        }

    return spec


def _checkbox(metadata: Mapping[str, Any], kind: str) -> dict[str, Any]:
    default = metadata.get("defaultValue")
    if default is None or str(default).strip().lower() not in ("true", "false"):
        raise _must_specify("defaultValue", kind)
    return {"type": "boolean", "default": str(default).strip().lower() == "true"}


def _lookup(metadata: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A lookup: its target (checked against the schema by the caller) and the name of the
    related list the target shows it in (its child relationship, `Name__r`)."""
    target = str(metadata.get("referenceTo") or "").strip()
    if not target:
        raise _must_specify("referenceTo", kind)
    children = str(metadata.get("relationshipName") or "").strip()
    if not children:
        raise _must_specify("relationshipName", kind)
    if not DEVELOPER_NAME.match(children):
        raise MetadataError(
            INTEGRITY, f"'{children}' is not a valid relationshipName", ("relationshipName",)
        )
    return {
        "type": "reference",
        "length": 18,
        "referenceTo": [target],
        "childRelationshipName": children + RELATIONSHIP_SUFFIX,
    }


def _plain(api_type: str) -> Callable[[Mapping[str, Any], str], dict[str, Any]]:
    return lambda metadata, kind: {"type": api_type}


# Each Metadata field type this org stores, and the spec it gives.
FIELD_TYPES: dict[str, Callable[[Mapping[str, Any], str], dict[str, Any]]] = {
    "Text": _text,
    "TextArea": lambda metadata, kind: {"type": "textarea", "length": MAX_TEXT_LENGTH},
    "LongTextArea": _long_text,
    "Html": _long_text,
    "Email": _plain("email"),
    "Phone": _plain("phone"),
    "Url": _plain("url"),
    "Checkbox": _checkbox,
    "Number": _number("double"),
    "Currency": _number("currency"),
    "Percent": _number("percent"),
    "Date": _plain("date"),
    "DateTime": _plain("datetime"),
    "Time": _plain("time"),
    "Picklist": _picklist("picklist"),
    "MultiselectPicklist": _picklist("multipicklist"),
    "Lookup": _lookup,
}
# What each type may also say: required, unique, an external id.
UNIQUE_TYPES = frozenset({"Text", "Number", "Email"})
EXTERNAL_ID_TYPES = frozenset({"Text", "Number", "Email"})
NEVER_REQUIRED = frozenset({"Checkbox"})


def split_full_name(full_name: str) -> tuple[str, str]:
    """`Object.Field__c` as (object, field)."""
    sobject, dot, name = full_name.strip().partition(".")
    if not dot or not sobject or not name:
        raise MetadataError(
            INTEGRITY, "The fullName of a CustomField must be Object.Field__c", ("fullName",)
        )
    return sobject, name


def check_field_name(name: str) -> None:
    check_name(name, "field")


def check_name(name: str, kind: str) -> None:
    """A custom field's or object's API name: a developer name, then __c."""
    base = name.removesuffix(CUSTOM_SUFFIX)
    if not name.endswith(CUSTOM_SUFFIX) or not DEVELOPER_NAME.match(base):
        raise MetadataError(
            INTEGRITY,
            "The name can only contain underscores and alphanumeric characters. It must begin "
            "with a letter, not include spaces, not end with an underscore, and not contain two "
            f"consecutive underscores. A custom {kind}'s name ends with __c.",
            ("fullName",),
        )
    if len(base) > MAX_NAME_LENGTH:
        raise MetadataError(
            INTEGRITY, f"The name can be at most {MAX_NAME_LENGTH} characters", ("fullName",)
        )


def _label(metadata: Mapping[str, Any], kind: str) -> str:
    label = str(metadata.get("label") or "").strip()
    if not label:
        raise _must_specify("label", kind)
    if len(label) > MAX_LABEL_LENGTH:
        raise MetadataError(
            INTEGRITY, f"The label can be at most {MAX_LABEL_LENGTH} characters", ("label",)
        )
    return label


def field_spec(metadata: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The spec (app.metadata.loader's vocabulary) of the CustomField `name`'s metadata,
    checked as Salesforce checks it (a lookup's target is the caller's to check)."""
    kind = str(metadata.get("type") or "").strip()
    if not kind:
        raise _must_specify("type", "(none)")
    build = FIELD_TYPES.get(kind)
    if build is None:
        raise MetadataError(
            INTEGRITY, f"localforce does not store fields of type {kind} yet", ("type",)
        )
    spec = {**build(metadata, kind), "label": _label(metadata, kind), "custom": True}
    if kind == "Lookup":
        spec["relationshipName"] = name.removesuffix(CUSTOM_SUFFIX) + RELATIONSHIP_SUFFIX
    if _flag(metadata, "required") and kind not in NEVER_REQUIRED:
        spec["nillable"] = False
    if _flag(metadata, "unique") and kind in UNIQUE_TYPES:
        spec["unique"] = True
    if _flag(metadata, "externalId") and kind in EXTERNAL_ID_TYPES:
        spec["externalId"] = True
    return {key: value for key, value in spec.items() if value is not None}


@dataclass
class SchemaChanges:
    """What a sandbox changed in its org's schema, as the net effect, kept as JSON: custom
    objects it created (`objects`: each one's raw definition, without its custom fields), and
    custom fields by object (`fields[object][field]`: a spec; `removed[object]`: the fields
    taken away)."""

    fields: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    removed: dict[str, list[str]] = field(default_factory=dict)
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> SchemaChanges:
        data = data or {}
        return cls(
            fields={o: dict(f) for o, f in (data.get("fields") or {}).items()},
            removed={o: list(f) for o, f in (data.get("removed") or {}).items()},
            objects=dict(data.get("objects") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "fields": {o: dict(sorted(f.items())) for o, f in sorted(self.fields.items()) if f},
            "removed": {o: sorted(f) for o, f in sorted(self.removed.items()) if f},
        }
        if self.objects:
            found["objects"] = dict(sorted(self.objects.items()))
        return found

    def __bool__(self) -> bool:
        return bool(any(self.fields.values()) or any(self.removed.values()) or self.objects)

    def touched(self) -> list[str]:
        """The objects these changes create or change the fields of."""
        names = {o for o, f in self.fields.items() if f} | {o for o, f in self.removed.items() if f}
        return sorted(names | set(self.objects))

    def added(self) -> list[tuple[str, str]]:
        """Each (object, field) added or changed."""
        return [(o, name) for o, fields in sorted(self.fields.items()) for name in sorted(fields)]

    def _replace(self, **changed: Any) -> SchemaChanges:
        values = {
            "fields": self.fields,
            "removed": self.removed,
            "objects": self.objects,
            **changed,
        }
        return SchemaChanges(**values)

    def with_field(self, sobject: str, name: str, spec: dict[str, Any]) -> SchemaChanges:
        fields = {**self.fields, sobject: {**self.fields.get(sobject, {}), name: spec}}
        removed = {**self.removed, sobject: [f for f in self.removed.get(sobject, []) if f != name]}
        return self._replace(fields=fields, removed=removed)

    def without_field(self, sobject: str, name: str, *, seeded: bool) -> SchemaChanges:
        """The field taken away: a field this sandbox added is forgotten; one the org came
        with is noted as removed."""
        added = {k: v for k, v in self.fields.get(sobject, {}).items() if k != name}
        removed = list(self.removed.get(sobject, []))
        if seeded and name not in removed:
            removed.append(name)
        return self._replace(
            fields={**self.fields, sobject: added}, removed={**self.removed, sobject: removed}
        )

    def with_object(self, raw: dict[str, Any]) -> SchemaChanges:
        """A custom object created (or its definition changed) by this sandbox."""
        return self._replace(objects={**self.objects, raw["name"]: raw})

    def without_object(self, name: str) -> SchemaChanges:
        """A custom object this sandbox created, forgotten with its fields."""
        return self._replace(
            objects={k: v for k, v in self.objects.items() if k != name},
            fields={k: v for k, v in self.fields.items() if k != name},
            removed={k: v for k, v in self.removed.items() if k != name},
        )

    def renamed_object(self, old: str, new: str) -> SchemaChanges:
        """A custom object this sandbox created, under a new name, with its fields."""
        objects = {k: v for k, v in self.objects.items() if k != old}
        objects[new] = {**self.objects[old], "name": new}
        fields = {k: v for k, v in self.fields.items() if k != old}
        if old in self.fields:
            fields[new] = self.fields[old]
        removed = {k: v for k, v in self.removed.items() if k != old}
        return self._replace(objects=objects, fields=fields, removed=removed)

    def apply(self, definitions: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The org's raw definitions (by object name) with these changes laid over them."""
        changed = {**definitions, **self.objects}
        for sobject in set(self.fields) | set(self.removed):
            raw = changed.get(sobject)
            if raw is None:
                continue
            fields = {
                name: spec
                for name, spec in raw["fields"].items()
                if name not in self.removed.get(sobject, [])
            }
            fields.update(self.fields.get(sobject, {}))
            changed[sobject] = {**raw, "fields": fields}
        return changed


# A custom object's name field: its spec by the nameField's type.
NAME_FIELD_LENGTH = 80
AUTO_NUMBER_LENGTH = 30
DEFAULT_DISPLAY_FORMAT = "{0}"
# What every custom object has beside its name: its owner, a user or a queue.
OWNER_FIELD = {
    "type": "reference",
    "length": 18,
    "nillable": False,
    "referenceTo": ["Group", "User"],
    "relationshipName": "Owner",
    "label": "Owner ID",
}
# A display format's number, {0000}, as the loader's format string, {0:04d}.
_DISPLAY_NUMBER = re.compile(r"\{(0+)\}")
BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _name_field(metadata: Mapping[str, Any]) -> dict[str, Any]:
    name_field = metadata.get("nameField")
    kind = str(name_field.get("type") or "") if isinstance(name_field, Mapping) else ""
    if not isinstance(name_field, Mapping) or kind not in ("Text", "AutoNumber"):
        raise MetadataError(
            INTEGRITY, "Must specify a nameField of type Text or AutoNumber", ("nameField",)
        )
    label = str(name_field.get("label") or "").strip()
    if not label:
        raise MetadataError(INTEGRITY, "Must specify a label for the nameField", ("nameField",))
    if kind == "Text":
        return {"type": "string", "length": NAME_FIELD_LENGTH, "nillable": False, "label": label}
    # Without one, the record's number alone [belief: the default jsforce's tests rely on].
    display = str(name_field.get("displayFormat") or "").strip() or DEFAULT_DISPLAY_FORMAT
    rest = _DISPLAY_NUMBER.sub("", display)
    if not _DISPLAY_NUMBER.search(display) or "{" in rest or "}" in rest:
        raise MetadataError(
            INTEGRITY,
            "Must specify a 'displayFormat' with one number, {0}, {00}, ..., for an AutoNumber "
            "nameField (localforce does not render date parts yet)",
            ("nameField",),
        )
    pattern = _DISPLAY_NUMBER.sub(lambda m: f"{{0:0{len(m[1])}d}}", display)
    return {
        "type": "string",
        "length": AUTO_NUMBER_LENGTH,
        "autoNumber": True,
        "autoNumberFormat": pattern,
        "label": label,
    }


def key_prefix_for(name: str, taken: set[str]) -> str:
    """A custom object's key prefix: `a` and two base62 digits derived from its name, the
    next free one where that is taken."""
    start = int.from_bytes(hashlib.sha256(name.lower().encode()).digest()[:4], "big")
    for step in range(62 * 62):
        number = (start + step) % (62 * 62)
        prefix = "a" + BASE62[number // 62] + BASE62[number % 62]
        if prefix not in taken:
            return prefix
    raise MetadataError("LIMIT_EXCEEDED", "No key prefix is free for another custom object")


def object_definition(metadata: Mapping[str, Any], key_prefix: str) -> dict[str, Any]:
    """The raw definition (the loader's vocabulary) of a CustomObject's metadata, checked as
    Salesforce checks it; its custom fields are the caller's (each a CustomField)."""
    name = str(metadata.get("fullName") or "").strip()
    check_name(name, "object")
    label = str(metadata.get("label") or "").strip()
    plural = str(metadata.get("pluralLabel") or "").strip()
    for element, value in (("label", label), ("pluralLabel", plural)):
        if not value:
            raise MetadataError(
                INTEGRITY, f"Must specify '{element}' for a CustomObject", (element,)
            )
    return {
        "name": name,
        "label": label,
        "labelPlural": plural,
        "keyPrefix": key_prefix,
        "custom": True,
        "nameField": "Name",
        # SOSL finds its records where the metadata allows search (Setup's "Allow Search").
        "searchable": _flag(metadata, "enableSearch"),
        "fields": {"Name": _name_field(metadata), "OwnerId": dict(OWNER_FIELD)},
    }
