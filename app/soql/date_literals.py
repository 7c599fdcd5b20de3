"""Date literals (TODAY, LAST_N_DAYS:5, THIS_FISCAL_QUARTER, ...) as half-open date ranges.

Every literal is a range of whole local days in the org's time zone, resolved against the org
clock. `=` tests membership and `<`/`>` compare against the bounds. For datetime fields the
bounds are local midnights converted to UTC. Weeks start on Sunday (en_US). LAST_N_DAYS includes
today; the other LAST_N_* literals exclude the current unit.

>>> resolve("LAST_N_DAYS", 1, today=date(2024, 6, 1), fiscal_start_month=1)
DateRange(start=datetime.date(2024, 5, 31), end=datetime.date(2024, 6, 2))
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo


class Unit(StrEnum):
    DAY = "DAY"
    WEEK = "WEEK"
    MONTH = "MONTH"
    QUARTER = "QUARTER"
    YEAR = "YEAR"
    FISCAL_QUARTER = "FISCAL_QUARTER"
    FISCAL_YEAR = "FISCAL_YEAR"


_MONTHS_PER_UNIT = {
    Unit.MONTH: 1,
    Unit.QUARTER: 3,
    Unit.YEAR: 12,
    Unit.FISCAL_QUARTER: 3,
    Unit.FISCAL_YEAR: 12,
}
# The fixed literals: which period relative to the current one (-1, 0, +1), and its unit.
_FIXED: dict[str, tuple[int, Unit]] = {
    "YESTERDAY": (-1, Unit.DAY),
    "TODAY": (0, Unit.DAY),
    "TOMORROW": (1, Unit.DAY),
}
for _unit in Unit:
    if _unit is not Unit.DAY:
        for _offset, _word in ((-1, "LAST"), (0, "THIS"), (1, "NEXT")):
            _FIXED[f"{_word}_{_unit.value}"] = (_offset, _unit)


@dataclass(frozen=True)
class DateRange:
    """Whole days from `start` (included) to `end` (excluded)."""

    start: date
    end: date

    def utc_bounds(self, zone: ZoneInfo) -> tuple[datetime, datetime]:
        """The range's local midnights as naive UTC datetimes, for datetime fields."""

        def midnight(day: date) -> datetime:
            local = datetime.combine(day, time(0), tzinfo=zone)
            return local.astimezone(UTC).replace(tzinfo=None)

        return midnight(self.start), midnight(self.end)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _period_start(today: date, unit: Unit, fiscal_start_month: int) -> date:
    if unit is Unit.DAY:
        return today
    if unit is Unit.WEEK:
        return today - timedelta(days=(today.weekday() + 1) % 7)  # back to Sunday
    first = today.replace(day=1)
    if unit is Unit.MONTH:
        return first
    origin = 1 if unit in (Unit.QUARTER, Unit.YEAR) else fiscal_start_month
    months_into = (today.month - origin) % _MONTHS_PER_UNIT[unit]
    return _add_months(first, -months_into)


# Where a range past the calendar stops (a day short of Python's ends, so a local midnight
# still converts to UTC): LAST_N_DAYS:10000000 means "since the first day there is".
EARLIEST, LATEST = date(1, 1, 2), date(9999, 12, 30)


def _shift(start: date, unit: Unit, count: int) -> date:
    try:
        if unit is Unit.DAY:
            moved = start + timedelta(days=count)
        elif unit is Unit.WEEK:
            moved = start + timedelta(days=7 * count)
        else:
            moved = _add_months(start, _MONTHS_PER_UNIT[unit] * count)
    except (OverflowError, ValueError):  # past year 1 or 9999
        return LATEST if count > 0 else EARLIEST
    return min(max(moved, EARLIEST), LATEST)


def _n_literal(name: str) -> tuple[str, Unit] | None:
    """`LAST_N_FISCAL_QUARTERS` -> ("LAST", FISCAL_QUARTER); `N_DAYS_AGO` -> ("AGO", DAY)."""
    for word in ("LAST_N_", "NEXT_N_"):
        if name.startswith(word) and name.endswith("S"):
            return word[:4], Unit(name[len(word) : -1])
    if name.startswith("N_") and name.endswith("S_AGO"):
        return "AGO", Unit(name[2:-5])
    return None


def resolve(name: str, count: int | None, *, today: date, fiscal_start_month: int) -> DateRange:
    """The range a date literal covers on `today`. `name` is upper-case, as parsed."""
    if name in ("LAST_90_DAYS", "NEXT_90_DAYS"):
        name, count = name.replace("90", "N"), 90
    if name in _FIXED:
        offset, unit = _FIXED[name]
        current = _period_start(today, unit, fiscal_start_month)
        return DateRange(_shift(current, unit, offset), _shift(current, unit, offset + 1))
    parsed = _n_literal(name)
    if parsed is None or count is None:
        raise ValueError(f"not a date literal: {name}")
    direction, unit = parsed
    current = _period_start(today, unit, fiscal_start_month)
    if direction == "LAST":
        # LAST_N_DAYS counts today in; whole weeks, months, ... leave the current one out.
        end = _shift(current, unit, 1) if unit is Unit.DAY else current
        return DateRange(_shift(current, unit, -count), end)
    if direction == "NEXT":
        return DateRange(_shift(current, unit, 1), _shift(current, unit, 1 + count))
    return DateRange(_shift(current, unit, -count), _shift(current, unit, -count + 1))


@dataclass(frozen=True)
class OrgCalendar:
    """What date literals resolve against: the org's local date, zone and fiscal year start."""

    today: date
    zone: str
    fiscal_start_month: int

    @classmethod
    def at(cls, now_utc: datetime, zone: str, fiscal_start_month: int) -> OrgCalendar:
        local = now_utc.replace(tzinfo=UTC).astimezone(ZoneInfo(zone))
        return cls(today=local.date(), zone=zone, fiscal_start_month=fiscal_start_month)

    def range(self, name: str, count: int | None) -> DateRange:
        return resolve(name, count, today=self.today, fiscal_start_month=self.fiscal_start_month)


# A calendar that belongs to no org: 1970-01-01 in UTC, the fiscal year starting in January. For
# what binds queries outside any org (tests, benchmarks, the coverage check), which name it;
# a request's queries bind against its org's calendar (OrgContext), never this.
UTC_EPOCH_CALENDAR = OrgCalendar.at(datetime(1970, 1, 1), "UTC", 1)
