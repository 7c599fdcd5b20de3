"""Formula fields are computed only where the org's object has them."""

from __future__ import annotations

from typing import Any

from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.storage.derived import apply_derived


def _sobject(name: str, *fields: FieldDef) -> SObjectDef:
    return SObjectDef(
        name=name,
        label=name,
        label_plural=name,
        key_prefix="a0Z",
        custom=False,
        name_field=None,
        fields=fields,
    )


def _field(name: str, kind: FieldType) -> FieldDef:
    return FieldDef(name=name, type=kind, label=name)


def test_a_business_account_gets_no_person_account_flag() -> None:
    business = _sobject("Account", _field("Name", FieldType.STRING))
    record: dict[str, Any] = {"Name": "Acme"}
    apply_derived(business, record)
    assert record == {"Name": "Acme"}


def test_a_person_account_org_computes_the_flag() -> None:
    person = _sobject(
        "Account",
        _field("LastName", FieldType.STRING),
        _field("IsPersonAccount", FieldType.BOOLEAN),
    )
    record: dict[str, Any] = {"LastName": "Lee"}
    apply_derived(person, record)
    assert record["IsPersonAccount"] is True


def test_a_quote_line_total_takes_the_discount() -> None:
    line = _sobject(
        "QuoteLineItem",
        _field("Quantity", FieldType.DOUBLE),
        _field("UnitPrice", FieldType.CURRENCY),
        _field("Discount", FieldType.PERCENT),
        _field("TotalPrice", FieldType.CURRENCY),
    )
    record: dict[str, Any] = {"Quantity": 3.0, "UnitPrice": 10.0, "Discount": 15.0}
    apply_derived(line, record)
    assert record["TotalPrice"] == 25.5
    record = {"Quantity": 3.0, "UnitPrice": None, "Discount": None}
    apply_derived(line, record)
    assert record["TotalPrice"] is None
