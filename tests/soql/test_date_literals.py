"""Date literal ranges, table-driven (tests/soql/fixtures/date_literals.txt)."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from app.soql.date_literals import DateRange, OrgCalendar, resolve

CASES = [
    [part.strip() for part in line.split("|")]
    for line in (Path(__file__).parent / "fixtures" / "date_literals.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]


@pytest.mark.parametrize(("today", "fiscal", "literal", "start", "end"), CASES)
def test_date_literal_ranges(today: str, fiscal: str, literal: str, start: str, end: str) -> None:
    name, _, count = literal.partition(":")
    got = resolve(
        name,
        int(count) if count else None,
        today=date.fromisoformat(today),
        fiscal_start_month=int(fiscal),
    )
    assert got == DateRange(date.fromisoformat(start), date.fromisoformat(end))


def test_the_org_day_is_local() -> None:
    # 03:00 UTC on June 1st is still May 31st in Los Angeles.
    calendar = OrgCalendar.at(datetime(2024, 6, 1, 3, 0), "America/Los_Angeles", 1)
    assert calendar.today == date(2024, 5, 31)
    today = calendar.range("TODAY", None)
    assert today.utc_bounds(ZoneInfo("America/Los_Angeles")) == (
        datetime(2024, 5, 31, 7, 0),
        datetime(2024, 6, 1, 7, 0),
    )


def test_unknown_literals_are_refused() -> None:
    with pytest.raises(ValueError, match="not a date literal"):
        resolve("LAST_N_DAYS", None, today=date(2024, 1, 1), fiscal_start_month=1)
