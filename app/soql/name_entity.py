"""The polymorphic "Name" entity: the fields a query may read through a lookup that can point
at several objects (Task.What, Event.What, EmailMessage.RelatedTo), whatever it points at, and
what TYPEOF's ELSE may select."""

from __future__ import annotations

from app.metadata.model import FieldDef, FieldType

# fmt: off
NAME_FIELDS = (
    "Id", "Name", "Type", "Alias", "Email", "FirstName", "LastName", "Phone", "Title", "Username",
    "IsActive", "ProfileId", "RecordTypeId", "UserRoleId", "LastReferencedDate", "LastViewedDate",
)
# fmt: on
# What a parent record read through a polymorphic lookup says it is (`attributes.type`).
NAME_ENTITY = "Name"
BY_LOWER_NAME = {name.lower(): name for name in NAME_FIELDS}
# `What.Type`: the API name of the object the lookup points at, but for a queue (a Group owns
# records only as a queue), whose `Owner.Type` is 'Queue'.
NAME_TYPES = {"Group": "Queue"}
TYPE_FIELD = FieldDef(name="Type", type=FieldType.STRING, label="Type", length=40)


def name_field(name: str) -> str | None:
    """The Name entity's spelling of `name`, or None when the entity has no such field."""
    return BY_LOWER_NAME.get(name.lower())
