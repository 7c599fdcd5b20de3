"""Sampling helpers shared by the generator steps. Every function takes its Random explicitly."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from datetime import date, datetime, time, timedelta
from itertools import accumulate
from random import Random

# Relative chance that a customer contacts support in each UTC hour: US daytime, so mostly
# 14:00-05:00 UTC, quiet during the American night.
CONTACT_HOUR_WEIGHTS = (
    6, 5, 4, 3, 2, 1, 0.5, 0.3, 0.3, 0.3, 0.5, 1, 2, 3, 5, 7, 8, 8, 8, 8, 8, 8, 7, 7,
)  # fmt: skip


def weighted_sample(rng: Random, weights: Sequence[float], k: int) -> list[int]:
    """k distinct indexes drawn with probability proportional to weight (Efraimidis-Spirakis)."""
    if k > len(weights):
        raise ValueError(f"cannot draw {k} of {len(weights)}")
    keyed = [(rng.random() ** (1.0 / w) if w > 0 else -1.0, i) for i, w in enumerate(weights)]
    return [i for _, i in heapq.nlargest(k, keyed)]


def spread(
    rng: Random,
    total: int,
    minimums: Sequence[int],
    weights: Sequence[float],
    caps: Sequence[int] | int,
) -> list[int]:
    """Counts that sum exactly to `total`: each starts at its minimum, the rest goes by weight
    to slots still under their cap."""
    counts = list(minimums)
    limits = [caps] * len(counts) if isinstance(caps, int) else list(caps)
    remaining = total - sum(counts)
    if remaining < 0 or sum(limits) < total:
        raise ValueError(f"cannot spread {total} over {len(counts)} slots")
    cumulative = list(accumulate(weights))
    slots = range(len(counts))
    while remaining:
        for slot in rng.choices(slots, cum_weights=cumulative, k=remaining):
            if counts[slot] < limits[slot]:
                counts[slot] += 1
                remaining -= 1
    return counts


class DaySampler:
    """Draws days from [first, last] with a weight per day (for seasonality)."""

    def __init__(self, first: date, last: date, weight: Callable[[date], float]) -> None:
        self.days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
        self._cumulative = list(accumulate(weight(day) for day in self.days))

    def sample(self, rng: Random, k: int) -> list[date]:
        return rng.choices(self.days, cum_weights=self._cumulative, k=k)


def moment(rng: Random, day: date) -> datetime:
    """A second on `day` at which a customer plausibly gets in touch."""
    hour = rng.choices(range(24), weights=CONTACT_HOUR_WEIGHTS)[0]
    return datetime.combine(day, time(hour, rng.randrange(60), rng.randrange(60)))


def between(rng: Random, start: datetime, end: datetime) -> datetime:
    """A whole second in [start, end]."""
    return start + timedelta(seconds=rng.randint(0, max(0, int((end - start).total_seconds()))))


def spaced_times(rng: Random, start: datetime, end: datetime, count: int) -> list[datetime]:
    """`count` increasing whole-second times from `start` to `end` with irregular gaps."""
    if count == 1:
        return [start]
    gaps = [rng.uniform(0.4, 1.6) for _ in range(count - 1)]
    span = max(0.0, (end - start).total_seconds())
    scale = span / sum(gaps)
    times, elapsed = [start], 0.0
    for gap in gaps:
        elapsed += gap * scale
        times.append(start + timedelta(seconds=int(elapsed)))
    return times
