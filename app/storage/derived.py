"""Values the platform computes rather than accepts: compound names, auto-numbers, formulas.

Seeding and the API both write through `apply_derived`, so a record looks the same whichever way
it was made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.metadata.model import SObjectDef

Record = dict[str, Any]


def _case_is_closed(record: Record) -> None:
    record["IsClosed"] = record.get("Status") == "Closed"


def _order_item_total(record: Record) -> None:
    quantity, unit_price = record.get("Quantity"), record.get("UnitPrice")
    record["TotalPrice"] = (
        None if quantity is None or unit_price is None else round(quantity * unit_price, 2)
    )


def _account_is_person(record: Record) -> None:
    record["IsPersonAccount"] = record.get("LastName") is not None


# Formula fields, by object. Each reads the full record and sets its field.
FORMULAS: dict[str, Callable[[Record], None]] = {
    "Case": _case_is_closed,
    "OrderItem": _order_item_total,
    "Account": _account_is_person,
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
    formula = FORMULAS.get(sobject.name)
    if formula is not None:
        formula(record)


def apply_auto_numbers(sobject: SObjectDef, record: Record, number: int) -> None:
    """Fill the auto-number fields of a new record from its sequence number."""
    for field in sobject.fields:
        if field.auto_number:
            record[field.name] = field.auto_number_format.format(number)
