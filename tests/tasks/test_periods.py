"""The periods tasks name (crmarena.md 5.1): half-open windows of naive UTC datetimes."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from random import Random

import pytest

from app.tasks.periods import (
    Period,
    add_months,
    draw_window,
    month,
    past,
    quarter,
    season,
    year,
)

PERIODS = [
    (month(2023, 2), "2023-02-01", "2023-03-01", "February 2023"),
    (month(2023, 12), "2023-12-01", "2024-01-01", "December 2023"),
    (quarter(2022, 1), "2022-01-01", "2022-04-01", "Q1 2022"),
    (quarter(2022, 4), "2022-10-01", "2023-01-01", "Q4 2022"),
    (season(2020, "Winter"), "2020-12-01", "2021-03-01", "Winter 2020"),
    (season(2021, "Spring"), "2021-03-01", "2021-06-01", "Spring 2021"),
    (season(2021, "Summer"), "2021-06-01", "2021-09-01", "Summer 2021"),
    (season(2021, "Fall"), "2021-09-01", "2021-12-01", "Fall 2021"),
    (year(2023), "2023-01-01", "2024-01-01", "the year 2023"),
    (past(date(2023, 5, 25), 4, "weeks"), "2023-04-27", "2023-05-26", "the past 4 weeks"),
    (past(date(2023, 5, 31), 3, "months"), "2023-02-28", "2023-06-01", "the past 3 months"),
    (past(date(2024, 8, 31), 2, "quarters"), "2024-02-29", "2024-09-01", "the past 2 quarters"),
    (past(date(2024, 8, 31), 1, "quarters"), "2024-05-31", "2024-09-01", "the past quarter"),
    (past(date(2024, 3, 1), 1, "weeks"), "2024-02-23", "2024-03-02", "the past week"),
]


@pytest.mark.parametrize(("period", "start", "end", "words"), PERIODS)
def test_a_period_runs_from_its_first_day_to_the_day_after_its_last(
    period: Period, start: str, end: str, words: str
) -> None:
    assert period.start == datetime.fromisoformat(start)
    assert period.end == datetime.fromisoformat(end)
    assert period.words == words


def test_a_period_holds_its_first_moment_and_not_its_end() -> None:
    period = quarter(2022, 1)
    assert period.holds(datetime(2022, 1, 1))
    assert period.holds(datetime(2022, 3, 31, 23, 59, 59))
    assert not period.holds(datetime(2022, 4, 1))
    assert not period.holds(datetime(2021, 12, 31, 23, 59, 59))


@pytest.mark.parametrize(
    ("day", "months", "moved"),
    [
        (date(2023, 3, 31), -1, date(2023, 2, 28)),
        (date(2024, 3, 31), -1, date(2024, 2, 29)),
        (date(2023, 1, 15), -13, date(2021, 12, 15)),
        (date(2023, 11, 30), 3, date(2024, 2, 29)),
    ],
)
def test_months_are_added_keeping_the_day_where_the_month_has_it(
    day: date, months: int, moved: date
) -> None:
    assert add_months(day, months) == moved


def test_a_drawn_window_lies_in_the_data_and_is_over_by_its_today() -> None:
    rng = Random(7)
    first, last = date(2020, 1, 2), date(2024, 5, 26)
    for _ in range(500):
        today, period = draw_window(rng, first, last)
        assert period.end.date() <= today + timedelta(days=1)
        if period.words.startswith("the past"):
            assert period.end.date() == today + timedelta(days=1)
            assert first + timedelta(days=365) <= today <= last
        else:
            assert first <= period.start.date() and period.end.date() <= last
            assert today <= period.end.date() + timedelta(days=90)
