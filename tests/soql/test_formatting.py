"""toLabel() and FORMAT() values: en_US, one currency, datetimes in the org's time zone."""

from __future__ import annotations

from datetime import date, datetime, time
from typing import Any

import pytest

from app.metadata.model import FieldDef, FieldType, PicklistValue
from app.soql.formatting import format_value, to_label


def _field(kind: FieldType, scale: int = 0, **extra: Any) -> FieldDef:
    return FieldDef(name="F", type=kind, label="F", scale=scale, **extra)


PICKLIST = (PicklistValue("a1", "Alpha"), PicklistValue("b2", "Beta"))


@pytest.mark.parametrize(
    ("field", "value", "zone", "expected"),
    [
        (_field(FieldType.CURRENCY, 2), 44000, "UTC", "$44,000.00"),
        (_field(FieldType.CURRENCY, 2), -1234.5, "UTC", "-$1,234.50"),
        (_field(FieldType.CURRENCY, 0), 0.4, "UTC", "$0.40"),
        (_field(FieldType.PERCENT, 2), 12.5, "UTC", "12.50%"),
        (_field(FieldType.DOUBLE, 3), 1234567.25, "UTC", "1,234,567.250"),
        (_field(FieldType.INT), 98765, "UTC", "98,765"),
        (_field(FieldType.DATE), date(2015, 12, 28), "UTC", "12/28/2015"),
        (
            _field(FieldType.DATETIME),
            datetime(2025, 4, 10, 22, 31, 37),
            "UTC",
            "4/10/2025, 10:31 PM",
        ),
        (
            _field(FieldType.DATETIME),
            datetime(2025, 4, 10, 22, 31, 37),
            "America/Los_Angeles",
            "4/10/2025, 3:31 PM",
        ),
        (
            _field(FieldType.DATETIME),
            datetime(2024, 1, 1, 7, 5),
            "America/Los_Angeles",
            "12/31/2023, 11:05 PM",
        ),
        (_field(FieldType.DATETIME), datetime(2024, 1, 1, 0, 5), "UTC", "1/1/2024, 12:05 AM"),
        (_field(FieldType.DATETIME), datetime(2024, 1, 1, 12, 0), "UTC", "1/1/2024, 12:00 PM"),
        (_field(FieldType.TIME), time(9, 7), "UTC", "9:07 AM"),
        (_field(FieldType.STRING), "as is", "UTC", "as is"),
        (_field(FieldType.CURRENCY, 2), None, "UTC", None),
    ],
)
def test_format_writes_values_in_the_user_locale(
    field: FieldDef, value: Any, zone: str, expected: Any
) -> None:
    assert format_value(field, value, zone) == expected


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (_field(FieldType.PICKLIST, picklist=PICKLIST), "a1", "Alpha"),
        (_field(FieldType.PICKLIST, picklist=PICKLIST), "zz", "zz"),
        (_field(FieldType.MULTIPICKLIST, picklist=PICKLIST), "a1;b2", "Alpha;Beta"),
        (_field(FieldType.PICKLIST, picklist=PICKLIST), None, None),
        (_field(FieldType.STRING), "text", "text"),
    ],
)
def test_to_label_gives_picklist_labels(field: FieldDef, value: Any, expected: Any) -> None:
    assert to_label(field, value) == expected
