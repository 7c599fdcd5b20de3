"""Checks a create or update body against the object's fields, with Salesforce's errors.

The order matches Salesforce's: unknown fields, then fields that can't be written, then each
value's type, then value rules (length, picklist, email, ids), then references that must exist.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from app.errors import EntityIsDeleted, FieldError, SalesforceError
from app.metadata.model import ID_TYPES, FieldDef, FieldType, SObjectDef
from app.metadata.values import parse_date, parse_datetime
from app.services.context import OrgContext
from app.services.json_body import JsonBody
from app.storage.ids import normalize_id
from app.storage.records import deleted_flags

# Key prefixes of standard objects outside the org's registry that lookups may point at.
EXTERNAL_KEY_PREFIXES = {
    "Group": "00G",
    "RecordType": "012",
    "LiveChatVisitor": "571",
    "ProductCatalog": "0ZS",
    "Knowledge__ka": "kA0",
    "Lead": "00Q",
    "Profile": "00e",
}
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_TYPE_NAMES = {
    FieldType.BOOLEAN: "boolean",
    FieldType.INT: "int",
    FieldType.DOUBLE: "double",
    FieldType.CURRENCY: "double",
    FieldType.PERCENT: "double",
    FieldType.DATE: "date",
    FieldType.DATETIME: "datetime",
    FieldType.TIME: "time",
    FieldType.BASE64: "base64",
}


def unknown_field(name: str, sobject_name: str) -> SalesforceError:
    return SalesforceError(
        f"No such column '{name}' on sobject of type {sobject_name}", error_code="INVALID_FIELD"
    )


def not_writable(names: list[str]) -> FieldError:
    return FieldError(
        "INVALID_FIELD_FOR_INSERT_UPDATE",
        f"Unable to create/update fields: {', '.join(names)}. Please check the security "
        "settings of this field and verify that it is read/write for your profile or "
        "permission set.",
        names,
    )


class _Unreadable(Exception):
    """A JSON value that is not one of the field's type; `type_name` names the type in the
    error where it is not the field's own (an id list is a List)."""

    def __init__(self, type_name: str | None = None) -> None:
        super().__init__(type_name)
        self.type_name = type_name


def _as_text(value: Any) -> str:
    if isinstance(value, dict | list):
        raise _Unreadable
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _as_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    raise _Unreadable


def _as_number(value: Any) -> float:
    """A finite number, from a JSON number or a string that spells one."""
    if isinstance(value, bool | dict | list):
        raise _Unreadable
    if isinstance(value, str) and not _NUMBER.match(value.strip()):
        raise _Unreadable
    number = float(value)
    if not math.isfinite(number):
        raise _Unreadable
    return number


def _as_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value  # exact: a float would echo 10**23 as 99999999999999991611392
    number = _as_number(value)
    if number != int(number):
        raise _Unreadable
    return int(number)


def _as_id_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _Unreadable("List")
    return value


def _as_date(value: Any) -> Any:
    parsed = parse_date(value) if isinstance(value, str) else None
    if parsed is None:
        raise _Unreadable
    return parsed


def _as_datetime(value: Any) -> Any:
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        raise _Unreadable
    return parsed


_BASE64_SPACE = re.compile(r"\s+")


def _as_base64(value: Any) -> str:
    """Base64 text (line breaks allowed, as MIME writes it), kept in its canonical form."""
    if not isinstance(value, str):
        raise _Unreadable
    try:
        content = base64.b64decode(_BASE64_SPACE.sub("", value), validate=True)
    except (binascii.Error, ValueError):
        raise _Unreadable from None
    return base64.b64encode(content).decode("ascii")


# How a JSON value becomes the value of a field of each type that is neither text nor an id;
# any other type (datetime, time) takes a datetime.
_COERCIONS: dict[FieldType, Callable[[Any], Any]] = {
    FieldType.BOOLEAN: _as_boolean,
    FieldType.INT: _as_int,
    FieldType.DOUBLE: _as_number,
    FieldType.CURRENCY: _as_number,
    FieldType.PERCENT: _as_number,
    FieldType.JUNCTIONIDLIST: _as_id_list,
    FieldType.DATE: _as_date,
    FieldType.BASE64: _as_base64,
}


def _coerce(body: JsonBody, key: str, field: FieldDef) -> Any:
    """The Python value of JSON value body[key] for `field`, or JSON_PARSER_ERROR."""
    value = body.data[key]
    if value is None:
        return None
    if field.is_text or field.type in ID_TYPES:
        coercion: Callable[[Any], Any] = _as_text
    else:
        coercion = _COERCIONS.get(field.type, _as_datetime)
    try:
        return coercion(value)
    except _Unreadable as error:
        type_name = error.type_name or _TYPE_NAMES.get(field.type, "string")
        raise body.cannot_deserialize(key, type_name) from None


def _check_id(ctx: OrgContext, field: FieldDef, value: str) -> str:
    """A lookup's canonical id: well-formed and of an object the lookup may point at."""
    normalized = normalize_id(value)
    allowed = set()
    for target in field.reference_to:
        target_def = ctx.registry.get(target)
        prefix = target_def.key_prefix if target_def else EXTERNAL_KEY_PREFIXES.get(target)
        if prefix:
            allowed.add(prefix)
    if normalized is None or (allowed and normalized[:3] not in allowed):
        raise FieldError(
            "MALFORMED_ID", f"{field.label}: id value of incorrect type: {value}", [field.name]
        )
    return normalized


def _check_range(field: FieldDef, value: float) -> float:
    """Numbers must fit the field's digits, as Salesforce's NUMBER_OUTSIDE_VALID_RANGE enforces."""
    integer_digits = field.digits if field.type is FieldType.INT else field.precision - field.scale
    if integer_digits <= 0:
        integer_digits = 18
    if abs(value) >= 10**integer_digits:
        raise FieldError(
            "NUMBER_OUTSIDE_VALID_RANGE",
            f"{field.label}: value outside of valid range on numeric field: {value}",
            [field.name],
        )
    return value


def _check_value(ctx: OrgContext, field: FieldDef, value: Any) -> Any:
    if value is None:
        return None
    if field.type is FieldType.REFERENCE:
        return _check_id(ctx, field, value)
    if field.type is FieldType.JUNCTIONIDLIST:
        return [_check_id(ctx, field, item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _check_range(field, value)
    if not isinstance(value, str):
        return value
    if field.length and len(value) > field.length:
        raise FieldError(
            "STRING_TOO_LONG",
            f"{field.label}: data value too large: {value} (max length={field.length})",
            [field.name],
        )
    restricted = field.type is FieldType.PICKLIST and field.restricted_picklist
    if restricted and not field.allows_picklist_value(value):
        raise FieldError(
            "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
            f"{field.label}: bad value for restricted picklist field: {value}",
            [field.name],
        )
    if field.type is FieldType.EMAIL and not _EMAIL.match(value):
        raise FieldError(
            "INVALID_EMAIL_ADDRESS",
            f"{field.label}: invalid email address: {value}",
            [field.name],
        )
    return value


def check_references(
    conn: Connection, ctx: OrgContext, sobject: SObjectDef, values: dict[str, Any]
) -> None:
    """Every id in a lookup or id-list field of `values` that points into the org must name a
    live record: one query per object pointed at. Text that looks like an id is text."""
    by_prefix = {o.key_prefix: o for o in ctx.registry}
    wanted: list[tuple[str, SObjectDef]] = []
    for name, value in values.items():
        field = sobject.field(name)
        if field is None or field.type not in _REFERENCE_TYPES:
            continue
        for candidate in value if isinstance(value, list) else [value]:
            target = by_prefix.get(candidate[:3]) if _looks_like_id(candidate) else None
            if target is not None:
                wanted.append((candidate, target))
    found: dict[str, bool] = {}
    for target in {target.name: target for _, target in wanted}.values():
        ids = [candidate for candidate, owner in wanted if owner is target]
        found.update(deleted_flags(conn, ctx.tables[target.name], ids))
    for candidate, _ in wanted:
        _check_found(found.get(candidate))


# The fields whose values are record ids: lookups, and id lists (EmailMessage.ToIds).
_REFERENCE_TYPES = frozenset({FieldType.REFERENCE, FieldType.JUNCTIONIDLIST})


def _looks_like_id(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 18


def _check_found(deleted: bool | None) -> None:
    """None: no such record; True: the record is in the recycle bin."""
    if deleted is None:
        raise SalesforceError(
            "invalid cross reference id", error_code="INVALID_CROSS_REFERENCE_KEY", fields=[]
        )
    if deleted:
        error = EntityIsDeleted()
        error.status_code = 400
        raise error


@dataclass(frozen=True)
class ParentReference:
    """A lookup set through its parent's external id, `{"Account": {"ExtId__c": "A-1"}}`: the
    record service finds the parent and stores its id in the lookup."""

    parent: SObjectDef
    field: FieldDef  # the parent's external id (or Id) field
    value: Any


def _invalid_field(message: str) -> SalesforceError:
    return SalesforceError(message, error_code="INVALID_FIELD", fields=[])


def _not_nested(relationship: str) -> SalesforceError:
    return _invalid_field(
        f"The value provided for foreign key reference {relationship} is not a nested SObject"
    )


def _parent_reference(
    ctx: OrgContext, lookup: FieldDef, relationship: str, value: Any
) -> ParentReference:
    """The parent reference a relationship key of a body names, with Salesforce's errors."""
    if not isinstance(value, dict):
        raise _not_nested(relationship)
    attributes = value.get("attributes")
    named_type = attributes.get("type") if isinstance(attributes, dict) else None
    keys = [key for key in value if key != "attributes"]
    if len(keys) != 1:
        raise _invalid_field(
            "More than 1 field provided in an external foreign key reference in entity: "
            f"{named_type or lookup.reference_to[0]}"
        )
    parent_name = _parent_type(lookup, relationship, named_type)
    parent, field = _parent_key(ctx, parent_name, keys[0])
    if isinstance(value[keys[0]], dict | list):
        raise _not_nested(relationship)
    return ParentReference(parent, field, value[keys[0]])


def _parent_type(lookup: FieldDef, relationship: str, named_type: Any) -> str:
    """The object a parent reference points at: the one its attributes name, which the lookup
    must allow, or the lookup's only one."""
    if named_type is None and len(lookup.reference_to) > 1:
        raise _invalid_field(
            f"The foreign key reference {relationship} is polymorphic: its nested SObject must "
            "name its type in attributes"
        )
    target = named_type or lookup.reference_to[0]
    allowed = {name.lower(): name for name in lookup.reference_to}
    if not isinstance(target, str) or target.lower() not in allowed:
        raise _invalid_field(f"Invalid type {target} for foreign key reference {relationship}")
    return allowed[target.lower()]


def _parent_key(ctx: OrgContext, parent_name: str, key: str) -> tuple[SObjectDef, FieldDef]:
    """The parent object and the field a parent reference finds it by: an external id or Id."""
    parent = ctx.registry.get(parent_name)
    field = parent.field(key) if parent else None
    if parent is None or field is None:
        raise unknown_field(key, parent_name)
    if not field.id_lookup:
        raise _invalid_field(
            f"Field name provided, {field.name} does not match an External ID, Salesforce Id, "
            f"or indexed field for {parent.name}"
        )
    return parent, field


def validate_body(
    ctx: OrgContext, sobject: SObjectDef, body: JsonBody, *, creating: bool
) -> dict[str, Any]:
    """The body's writable values, keyed by canonical field name and typed for storage. A lookup
    set through its parent's external id has a ParentReference for its value."""
    fields: dict[str, FieldDef] = {}
    references: dict[str, ParentReference] = {}
    for key in body.data:
        if key == "attributes":
            continue
        field = sobject.field(key)
        lookup = None if field is not None else sobject.field_by_relationship(key)
        if lookup is not None:
            if any(sobject.field(other) is lookup for other in body.data):
                raise _invalid_field(
                    f"Cannot specify both an external ID reference {lookup.relationship_name} "
                    f"and a salesforce id, {lookup.name}"
                )
            references[lookup.name] = _parent_reference(ctx, lookup, key, body.data[key])
            field = lookup
        if field is None:
            raise unknown_field(key, sobject.name)
        fields[key] = field
    locked = [
        field.name
        for field in fields.values()
        if not (field.createable if creating else field.updateable)
    ]
    if locked:
        raise not_writable(locked)
    return {
        field.name: references.get(field.name)
        or _check_value(ctx, field, _coerce(body, key, field))
        for key, field in fields.items()
    }


def missing_required(sobject: SObjectDef, row: dict[str, Any]) -> list[str]:
    """Required fields that are empty in the full row that would be written."""
    missing = []
    for field in sobject.fields:
        if not field.required or row.get(field.name) not in (None, ""):
            continue
        compound = sobject.compound_name
        if field.name == "Name" and compound is not None and row.get(compound.parts[-1]):
            continue  # a person account's Name comes from its last name
        missing.append(field.name)
    return missing


def required_error(missing: list[str]) -> FieldError:
    return FieldError(
        "REQUIRED_FIELD_MISSING", f"Required fields are missing: [{', '.join(missing)}]", missing
    )
