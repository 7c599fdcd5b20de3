"""The periods a task names, as CRMArena words and computes them (crmarena.md 5.1): a month, a
quarter or a season of a year, a run of whole months, or the past N weeks, months or quarters
before the task's today.

A period is a half-open window [start, end) of naive UTC datetimes, the form the org's
datetimes are stored in. A calendar period runs whole months from its first day; "the past N
units" runs from today minus N units to today's midnight. A quarter is three months; Winter runs
from December of the year named to the end of the next February.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from random import Random

SEASONS = {"Spring": 3, "Summer": 6, "Fall": 9, "Winter": 12}  # season -> its first month
PAST_COUNTS = {"weeks": (4, 12), "months": (2, 8), "quarters": (1, 4)}  # unit -> counts drawn

# What `metadata.optional` tells an agent about the words a query uses (CRMArena's "aided"
# mode adds it to the prompt).
DEFINITIONS = (
    "Quarters: Q1 is January to March, Q2 April to June, Q3 July to September, Q4 October to "
    "December. Seasons: Spring is March to May, Summer June to August, Fall September to "
    "November, Winter December of the year named to February of the next. "
    '"March 2021 through August 2021" runs from the first day of the first month named to the '
    'last day of the second. "The past N weeks/months/quarters" runs from today minus that '
    "many weeks, months or quarters (a quarter being three months) up to today. Periods "
    "include their first day and end before the day after their last."
)


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime  # exclusive
    words: str  # how a query names it: "Q1 2023", "Winter 2021", "the past 4 weeks"

    def holds(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


def add_months(day: date, months: int) -> date:
    """`day` moved by whole months, its day of month kept where the month has it."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day)


def months_from(first: date, count: int, words: str) -> Period:
    return Period(_midnight(first), _midnight(add_months(first, count)), words)


def month(year: int, number: int) -> Period:
    return months_from(date(year, number, 1), 1, f"{calendar.month_name[number]} {year}")


def quarter(year: int, number: int) -> Period:
    return months_from(date(year, 3 * number - 2, 1), 3, f"Q{number} {year}")


def season(year: int, name: str) -> Period:
    return months_from(date(year, SEASONS[name], 1), 3, f"{name} {year}")


def year(number: int) -> Period:
    return months_from(date(number, 1, 1), 12, f"the year {number}")


def months_through(first: date, count: int) -> Period:
    """`count` whole months from `first`'s month, named by the first and the last:
    "March 2021 through August 2021"."""
    last = add_months(first, count - 1)
    words = f"{first:%B} {first.year} through {last:%B} {last.year}"
    return months_from(date(first.year, first.month, 1), count, words)


def past(today: date, count: int, unit: str) -> Period:
    """The past `count` weeks, months or quarters, up to today (today included)."""
    end = today + timedelta(days=1)
    if unit == "weeks":
        start = today - timedelta(weeks=count)
    else:
        start = add_months(today, -count * (3 if unit == "quarters" else 1))
    words = f"the past {unit[:-1]}" if count == 1 else f"the past {count} {unit}"
    return Period(_midnight(start), _midnight(end), words)


def draw_calendar_period(rng: Random, first: date, last: date) -> Period:
    """A month, quarter or season lying wholly within [first, last]."""
    while True:
        kind = rng.choice(("month", "quarter", "season"))
        year_number = rng.randint(first.year, last.year)
        if kind == "month":
            period = month(year_number, rng.randint(1, 12))
        elif kind == "quarter":
            period = quarter(year_number, rng.randint(1, 4))
        else:
            period = season(year_number, rng.choice(tuple(SEASONS)))
        if _midnight(first) <= period.start and period.end <= _midnight(last):
            return period


def draw_past_period(rng: Random, today: date) -> Period:
    unit = rng.choice(tuple(PAST_COUNTS))
    return past(today, rng.randint(*PAST_COUNTS[unit]), unit)


def draw_window(rng: Random, first: date, last: date) -> tuple[date, Period]:
    """A task's today and the period it asks about, within the data's days [first, last]: a
    calendar period with a today up to 90 days after it, or the past N units before a today
    at least a year into the data."""
    if rng.random() < 0.5:
        period = draw_calendar_period(rng, first, last)
        return period.end.date() + timedelta(days=rng.randint(0, 90)), period
    today = first + timedelta(days=rng.randint(min(365, (last - first).days), (last - first).days))
    return today, draw_past_period(rng, today)


def _through(first: date, last: date) -> Period:
    return months_through(first, (last.year - first.year) * 12 + last.month - first.month + 1)


_MONTHS = {name: number for number, name in enumerate(calendar.month_name) if name}
_READERS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], date], Period]], ...] = (
    (
        re.compile(rf"\b({'|'.join(_MONTHS)}) (\d{{4}}) through ({'|'.join(_MONTHS)}) (\d{{4}})\b"),
        lambda m, _: _through(date(int(m[2]), _MONTHS[m[1]], 1), date(int(m[4]), _MONTHS[m[3]], 1)),
    ),
    (re.compile(r"\bQ([1-4]) (\d{4})\b"), lambda m, _: quarter(int(m[2]), int(m[1]))),
    (
        re.compile(rf"\b({'|'.join(SEASONS)}) (\d{{4}})\b"),
        lambda m, _: season(int(m[2]), m[1]),
    ),
    (re.compile(r"\bthe year (\d{4})\b"), lambda m, _: year(int(m[1]))),
    (
        re.compile(rf"\b({'|'.join(_MONTHS)}) (\d{{4}})\b"),
        lambda m, _: month(int(m[2]), _MONTHS[m[1]]),
    ),
    (
        re.compile(r"\bthe past (\d+) (weeks|months|quarters)\b"),
        lambda m, today: past(today, int(m[1]), m[2]),
    ),
    (
        re.compile(r"\bthe past (week|month|quarter)\b"),
        lambda m, today: past(today, 1, m[1] + "s"),
    ),
)


def read_period(text: str, today: date) -> Period:
    """The period a task's words name (the inverse of the constructors above), as an agent
    reading the query works it out."""
    for pattern, make in _READERS:
        found = pattern.search(text)
        if found is not None:
            return make(found, today)
    raise ValueError(f"no period is named in {text!r}")
