"""Values the platform computes rather than accepts: compound names, auto-numbers, formulas.

Seeding and the API both write through `apply_derived`, so a record looks the same whichever way
it was made.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from app.metadata.loader import ADDRESS_PARTS
from app.metadata.model import FieldDef, FieldType, SObjectDef

Record = dict[str, Any]
ACCOUNT_PREFIX = "001"


def _case_is_closed(record: Record) -> Any:
    return is_value(record.get("Status"), "Closed")


def _line_total(record: Record) -> Any:
    quantity, unit_price = record.get("Quantity"), record.get("UnitPrice")
    if quantity is None or unit_price is None:
        return None
    discount = record.get("Discount") or 0
    return round(quantity * unit_price * (1 - discount / 100), 2)


def _account_is_person(record: Record) -> Any:
    return record.get("LastName") is not None


def is_value(value: Any, expected: str) -> bool:
    """Whether a picklist's value is `expected`, in any letter case (as SOQL compares it: a
    value written as "completed" is Completed)."""
    return isinstance(value, str) and value.lower() == expected.lower()


def _event_start(record: Record) -> Any:
    """An event's ActivityDateTime is its start."""
    return record.get("StartDateTime")


def _event_end(record: Record) -> Any:
    """An event ends when written to, or its duration after it starts."""
    end, start, minutes = (
        record.get(k) for k in ("EndDateTime", "StartDateTime", "DurationInMinutes")
    )
    if end is None and isinstance(start, datetime) and isinstance(minutes, int):
        return start + timedelta(minutes=minutes)
    return end


def _event_duration(record: Record) -> Any:
    """An event lasts as written, or from its start to its end."""
    minutes, start, end = (
        record.get(k) for k in ("DurationInMinutes", "StartDateTime", "EndDateTime")
    )
    if minutes is None and isinstance(start, datetime) and isinstance(end, datetime):
        return int((end - start).total_seconds() // 60)
    return minutes


def _event_date(record: Record) -> Any:
    """The day an event starts (in UTC); an all-day event written with its day alone keeps it."""
    start = record.get("StartDateTime")
    return start.date() if isinstance(start, datetime) else record.get("ActivityDate")


def _event_end_date(record: Record) -> Any:
    """The day an event ends (in UTC)."""
    end = record.get("EndDateTime")
    return end.date() if isinstance(end, datetime) else None


def _task_is_closed(record: Record) -> Any:
    """A task is closed when its status is a closed one: Completed, the closed status every
    org's task statuses have."""
    return is_value(record.get("Status"), "Completed")


def _task_is_high_priority(record: Record) -> Any:
    return is_value(record.get("Priority"), "High")


# The objects whose AccountId is the account a record concerns, read from the records it is
# related to: the API's writes (app.services.platform_rules) and seeding set it.
ACTIVITIES = ("Task", "Event")


# The records whose AccountId becomes a task's or event's (the Object Reference's
# Task.AccountId): the opportunity or contract it is related to, else the contact it is about.
# Related to anything else (a case, a campaign), it takes its contact's account.
ACCOUNT_SOURCES = ("Opportunity", "Contract", "Contact")


def related_account(record: Record, account_of: Callable[[str], str | None]) -> str | None:
    """The account a task or event concerns (its AccountId), as the Object Reference gives it:
    what it is related to when that is an account, an opportunity or a contract (their
    account); otherwise the account of the contact it is about; otherwise none.
    `account_of(id)`: the AccountId of the record with that id when it is an opportunity, a
    contract or a contact (None for any other)."""
    what, who = record.get("WhatId"), record.get("WhoId")
    if isinstance(what, str) and what.startswith(ACCOUNT_PREFIX):
        return what
    found = account_of(what) if isinstance(what, str) else None
    if found is None and isinstance(who, str):
        found = account_of(who)
    return found


# Formula fields: object -> field -> its value from the full record. An org whose object lacks
# the field (a business-account org has no IsPersonAccount) computes nothing for it.
FORMULAS: dict[str, dict[str, Callable[[Record], Any]]] = {
    "Case": {"IsClosed": _case_is_closed},
    "OrderItem": {"TotalPrice": _line_total},
    "QuoteLineItem": {"TotalPrice": _line_total},
    "Account": {"IsPersonAccount": _account_is_person},
    # In this order: the end and the duration each follow from the other and the start, and
    # the end's day from the end.
    "Event": {
        "EndDateTime": _event_end,
        "DurationInMinutes": _event_duration,
        "ActivityDateTime": _event_start,
        "ActivityDate": _event_date,
        "EndDate": _event_end_date,
    },
    "Task": {
        "IsClosed": _task_is_closed,
        "IsHighPriority": _task_is_high_priority,
    },
}


def _location(sobject: SObjectDef, field: FieldDef, record: Record) -> Any:
    """The compound's value mirrors its parts: both set, or null."""
    latitude, longitude = sobject.location_parts(field)
    lat, lon = record.get(latitude.name), record.get(longitude.name)
    if lat is None or lon is None:
        return None
    return {"latitude": float(lat), "longitude": float(lon)}


# An address's JSON object has its keys in alphabetical order, as the REST API writes them.
ADDRESS_KEYS = sorted((key, part) for part, key, _, _ in ADDRESS_PARTS)


def _address(sobject: SObjectDef, field: FieldDef, record: Record) -> Any:
    """The compound's value mirrors its parts: null while every part is."""
    prefix = field.name.removesuffix("Address")
    value = {key: record.get(prefix + part) for key, part in ADDRESS_KEYS}
    if all(part is None for part in value.values()):
        return None
    return value


COMPOUNDS: dict[FieldType, Callable[[SObjectDef, FieldDef, Record], Any]] = {
    FieldType.LOCATION: _location,
    FieldType.ADDRESS: _address,
}


def compound_name(sobject: SObjectDef, record: Record) -> str | None:
    if sobject.compound_name is None:
        return None
    parts = [record.get(part) for part in sobject.compound_name.parts]
    joined = " ".join(str(part) for part in parts if part)
    return joined or None


def apply_derived(sobject: SObjectDef, record: Record) -> None:
    """Recompute the derived fields of a full record in place."""
    if sobject.compound_name is not None and (
        sobject.compound_name.always or not record.get("Name")
    ):
        record["Name"] = compound_name(sobject, record)
    for field in sobject.compound_fields:
        record[field.name] = COMPOUNDS[field.type](sobject, field, record)
    for field_name, formula in FORMULAS.get(sobject.name, {}).items():
        if sobject.field(field_name) is not None:
            record[field_name] = formula(record)


def apply_auto_numbers(sobject: SObjectDef, record: Record, number: int) -> None:
    """Fill the auto-number fields of a new record from its sequence number."""
    for field in sobject.fields:
        if field.auto_number:
            record[field.name] = field.auto_number_format.format(number)
