"""What a report says of a run's episodes: per group (a task type, a skill, the whole run) the
mean reward with a bootstrap confidence interval, pass^k where tasks were repeated (tau2-bench's:
the chance that k tries of a task all succeed), the cost (turns, tool calls, tokens, time), and
where an LLM judge graded too, how often it disagreed with the rules."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np

RESAMPLES = 2000  # bootstrap resamples of a group's rewards
CONFIDENCE = 0.95
SEED = 0  # the resampling's: the same run gives the same interval


@dataclass(frozen=True)
class GroupStats:
    """One group of a run's episodes."""

    name: str
    episodes: int
    failed: int
    mean_reward: float
    low: float  # the confidence interval of the mean
    high: float
    pass_k: dict[int, float]  # k -> pass^k, for k up to the fewest tries of a task
    turns: float | None  # means per episode, over the episodes that record them
    tool_calls: float | None
    tokens_in: float | None
    tokens_out: float | None
    seconds: float | None
    judged: int  # episodes an LLM judge graded too
    disagreement: float | None  # the share of them where judge and rules differ


def mean_interval(rewards: Sequence[float]) -> tuple[float, float]:
    """The bootstrap percentile interval of the mean."""
    values = np.asarray(rewards, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    draws = np.random.default_rng(SEED).choice(values, size=(RESAMPLES, len(values)))
    means = draws.mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def pass_hat_k(records: Sequence[dict[str, Any]]) -> dict[int, float]:
    """pass^k for k = 1 .. the fewest tries of any task: over tasks, C(successes, k) / C(tries,
    k), a success being a reward of 1."""
    tries: dict[object, list[bool]] = defaultdict(list)
    for record in records:
        tries[record["idx"]].append(float(record["reward"] or 0) == 1.0)
    if not tries:
        return {}
    fewest = min(len(outcomes) for outcomes in tries.values())
    return {
        k: sum(comb(sum(outcomes), k) / comb(len(outcomes), k) for outcomes in tries.values())
        / len(tries)
        for k in range(1, fewest + 1)
    }


def _mean_of(records: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [float(record[key]) for record in records if record.get(key) is not None]
    return sum(values) / len(values) if values else None


def group_stats(name: str, records: Sequence[dict[str, Any]]) -> GroupStats:
    rewards = [float(record["reward"] or 0) for record in records]
    judged = [record for record in records if record.get("judge_reward") is not None]
    differ = sum(float(r["judge_reward"]) != float(r["reward"] or 0) for r in judged)
    low, high = mean_interval(rewards)
    return GroupStats(
        name=name,
        episodes=len(records),
        failed=sum(record["status"] == "failed" for record in records),
        mean_reward=sum(rewards) / len(rewards),
        low=low,
        high=high,
        pass_k=pass_hat_k(records),
        turns=_mean_of(records, "turns"),
        tool_calls=_mean_of(records, "tool_calls"),
        tokens_in=_mean_of(records, "tokens_in"),
        tokens_out=_mean_of(records, "tokens_out"),
        seconds=_mean_of(records, "seconds"),
        judged=len(judged),
        disagreement=differ / len(judged) if judged else None,
    )


def grouped(
    records: Sequence[dict[str, Any]], key: Callable[[dict[str, Any]], str]
) -> list[GroupStats]:
    """The stats of each group `key` puts records in, in the order groups first appear."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[key(record)].append(record)
    return [group_stats(name, rows) for name, rows in groups.items()]
