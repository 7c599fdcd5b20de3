"""sObject definitions as frozen data: what describe reports and storage derives tables from."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class FieldType(StrEnum):
    ID = "id"
    STRING = "string"
    TEXTAREA = "textarea"
    PICKLIST = "picklist"
    MULTIPICKLIST = "multipicklist"
    COMBOBOX = "combobox"
    EMAIL = "email"
    PHONE = "phone"
    URL = "url"
    BOOLEAN = "boolean"
    INT = "int"
    DOUBLE = "double"
    CURRENCY = "currency"
    PERCENT = "percent"
    DATE = "date"
    DATETIME = "datetime"
    TIME = "time"
    REFERENCE = "reference"
    JUNCTIONIDLIST = "junctionidlist"
    # A geolocation: a compound of two doubles, `<Name>__Latitude__s` and `<Name>__Longitude__s`.
    LOCATION = "location"
    # A standard address: a compound of street, city, state, postal code, country, latitude,
    # longitude and geocode accuracy (`BillingStreet`, ... for `BillingAddress`).
    ADDRESS = "address"
    # Binary content (a static resource's Body): stored as its base64 text, read on its own
    # URL (`.../sobjects/{T}/{id}/{Field}`), which records and query rows give as its value.
    BASE64 = "base64"


TEXT_TYPES = frozenset(
    {
        FieldType.STRING,
        FieldType.TEXTAREA,
        FieldType.PICKLIST,
        FieldType.MULTIPICKLIST,
        FieldType.COMBOBOX,
        FieldType.EMAIL,
        FieldType.PHONE,
        FieldType.URL,
    }
)
NUMBER_TYPES = frozenset({FieldType.INT, FieldType.DOUBLE, FieldType.CURRENCY, FieldType.PERCENT})
ID_TYPES = frozenset({FieldType.ID, FieldType.REFERENCE})
# Read-only fields whose value is an object built from their component fields.
COMPOUND_TYPES = frozenset({FieldType.LOCATION, FieldType.ADDRESS})


@dataclass(frozen=True)
class PicklistValue:
    value: str
    label: str
    default: bool = False


# A text area longer than this is a long text area (describe's textarea of length > 255).
LONG_TEXT_LENGTH = 255
# Types a create never has to send though describe calls them not nillable: a checkbox is
# false, and a junction id list (an e-mail's ToIds) empty, when left out.
NEVER_REQUIRED_TYPES = frozenset({FieldType.BOOLEAN, FieldType.JUNCTIONIDLIST})
# What describe says no query may ORDER BY or GROUP BY, whatever its length.
UNSORTABLE_TYPES = frozenset({FieldType.MULTIPICKLIST, FieldType.BASE64, *COMPOUND_TYPES})
# What no aggregate function takes, COUNT() of the field included (Salesforce's table of field
# types in aggregate functions: boolean and time are "No" in every column).
UNAGGREGATABLE_TYPES = frozenset(
    {FieldType.BOOLEAN, FieldType.TIME, FieldType.ADDRESS, FieldType.BASE64}
)
# A datetime is grouped through a date function (CALENDAR_MONTH(CreatedDate)), never itself:
# every datetime of the recorded describes is groupable false.
UNGROUPABLE_TYPES = frozenset(
    {
        FieldType.DATETIME,
        FieldType.DOUBLE,
        FieldType.CURRENCY,
        FieldType.PERCENT,
        FieldType.MULTIPICKLIST,
        FieldType.BASE64,
        *COMPOUND_TYPES,
    }
)


@dataclass(frozen=True)
class FieldDef:
    name: str
    type: FieldType
    label: str
    length: int = 0
    precision: int = 0
    scale: int = 0
    digits: int = 0
    nillable: bool = True
    createable: bool = True
    updateable: bool = True
    default: Any = None
    picklist: tuple[PicklistValue, ...] = ()
    restricted_picklist: bool = False
    reference_to: tuple[str, ...] = ()
    relationship_name: str | None = None
    child_relationship_name: str | None = None
    cascade_delete: bool = False
    external_id: bool = False
    unique: bool = False
    custom: bool = False
    calculated: bool = False
    auto_number: bool = False
    # How an auto-number renders its sequence number, e.g. "{0:08d}".
    auto_number_format: str = "{0:08d}"
    name_field: bool = False
    html_formatted: bool = False
    # A system field the platform maintains (Id, audit fields, IsDeleted).
    system: bool = False
    # A component of a compound field (a location's latitude, an address's city, a person's
    # first name): the compound's name.
    compound_field_name: str | None = None
    # How real orgs describe a standard field where its type's rule says otherwise (the
    # tables of app/metadata/field_properties/, each row with its source).
    declared_id_lookup: bool = False
    declared_defaulted: bool | None = None
    declared_filterable: bool | None = None
    declared_groupable: bool | None = None
    declared_sortable: bool | None = None
    declared_aggregatable: bool | None = None
    # Describe keys with no behaviour behind them (extraTypeInfo, permissionable, ...), as
    # (key, value) pairs laid over what describe derives.
    described: tuple[tuple[str, Any], ...] = ()

    @property
    def is_text(self) -> bool:
        return self.type in TEXT_TYPES

    @property
    def is_long_text(self) -> bool:
        """A long or rich text area: read, never filtered, sorted or grouped by a query."""
        return self.type is FieldType.TEXTAREA and self.length > LONG_TEXT_LENGTH

    @property
    def filterable(self) -> bool:
        if self.declared_filterable is not None:
            return self.declared_filterable
        return not self.is_long_text and self.type is not FieldType.BASE64

    @property
    def sortable(self) -> bool:
        if self.declared_sortable is not None:
            return self.declared_sortable
        return not self.is_long_text and self.type not in UNSORTABLE_TYPES

    @property
    def groupable(self) -> bool:
        if self.declared_groupable is not None:
            return self.declared_groupable
        return not self.is_long_text and self.type not in UNGROUPABLE_TYPES

    @property
    def id_lookup(self) -> bool:
        """Whether a record can be found by this field's value: an upsert's key."""
        return self.type is FieldType.ID or self.external_id or self.declared_id_lookup

    @property
    def defaulted_on_create(self) -> bool:
        """Whether describe says the platform gives it a value on create when none is sent
        (a default the platform applies but describe does not admit, as Salesforce's own, is
        declared false)."""
        if self.declared_defaulted is not None:
            return self.declared_defaulted
        return self.default is not None or self.system or self.auto_number

    @property
    def aggregatable(self) -> bool:
        if self.declared_aggregatable is not None:
            return self.declared_aggregatable
        return not self.is_long_text and self.type not in UNAGGREGATABLE_TYPES

    def allows_picklist_value(self, value: str) -> bool:
        return any(entry.value == value for entry in self.picklist)

    @property
    def required(self) -> bool:
        """What REQUIRED_FIELD_MISSING enforces on create: not nillable, settable, and not
        defaulted on create."""
        return (
            not self.nillable
            and self.createable
            and not self.defaulted_on_create
            and self.type not in NEVER_REQUIRED_TYPES
        )


@dataclass(frozen=True)
class ChildRelationship:
    child_sobject: str
    field: str
    relationship_name: str | None
    cascade_delete: bool


@dataclass(frozen=True)
class CompoundName:
    """Name built from parts: always (Contact, User) or only when Name is not given (Account)."""

    parts: tuple[str, ...]
    always: bool


@dataclass(frozen=True)
class SObjectDef:
    name: str
    label: str
    label_plural: str
    key_prefix: str
    custom: bool
    name_field: str | None
    fields: tuple[FieldDef, ...]
    compound_name: CompoundName | None = None
    searchable: bool = True
    createable: bool = True
    updateable: bool = True
    deletable: bool = True
    child_relationships: tuple[ChildRelationship, ...] = ()
    # ActivityHistories and OpenActivities (app.metadata.activities): read through SOQL and
    # described, but no child object of the registry's.
    activity_relationships: tuple[ChildRelationship, ...] = ()
    # The field that names a record in its URL, that lookups to it hold and that orders its
    # rows last: Id, or a Tooling entity's DurableId (every EntityDefinition's Id is the same).
    key_field: str = "Id"
    # An object whose records are the org's metadata, not its data (StaticResource): seeding
    # writes none of them, and the org's content hash leaves them out; the Tooling API reads
    # and writes them too, as the sandbox's records.
    metadata_component: bool = False
    _by_lower_name: dict[str, FieldDef] = field(default_factory=dict, compare=False, repr=False)
    _compounds: list[FieldDef] = field(default_factory=list, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_lower_name.update({f.name.lower(): f for f in self.fields})
        self._compounds.extend(f for f in self.fields if f.type in COMPOUND_TYPES)

    @property
    def compound_fields(self) -> list[FieldDef]:
        """The locations and addresses: each one's value is derived from its parts."""
        return self._compounds

    def compound_parts(self, compound: FieldDef) -> list[FieldDef]:
        return [f for f in self.fields if f.compound_field_name == compound.name]

    def field(self, name: str) -> FieldDef | None:
        """The field named `name`, whatever its letter case."""
        return self._by_lower_name.get(name.lower())

    def location_parts(self, compound: FieldDef) -> tuple[FieldDef, FieldDef]:
        """A location's or an address's latitude and longitude components
        (`Loc__Latitude__s`, `BillingLatitude`)."""
        parts = self.compound_parts(compound)
        latitude = next(f for f in parts if f.name.removesuffix("__s").endswith("Latitude"))
        longitude = next(f for f in parts if f.name.removesuffix("__s").endswith("Longitude"))
        return latitude, longitude

    def field_by_relationship(self, relationship_name: str) -> FieldDef | None:
        wanted = relationship_name.lower()
        for candidate in self.fields:
            if candidate.relationship_name and candidate.relationship_name.lower() == wanted:
                return candidate
        return None
