"""Where compiled SOQL and SOSL statements are kept for reuse, bounded by what they hold.

A repeated query costs only its execution, but a compiled statement is not small: SQLAlchemy
proxies every column of every table it aliases, so a SOQL query holds 30-50 kB and a SOSL
search one such statement per object it returns (a search of every object, about 580 kB).
Bounded by count alone, a thousand varied searches held half a gigabyte; here each cache
holds at most a budget of statements, the least recently used going first."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from cachetools import LRUCache, cached

F = TypeVar("F", bound=Callable[..., Any])

# Statements each cache keeps: at ~40 kB apiece, about 20 MB at most.
STATEMENT_BUDGET = 512


def keep_compiled(statements_in: Callable[[Any], int]) -> Callable[[F], F]:
    """Memoize a compile function (thread-safe), weighing each result by its statements."""
    cache: LRUCache[Any, Any] = LRUCache(
        maxsize=STATEMENT_BUDGET, getsizeof=lambda compiled: max(1, statements_in(compiled))
    )
    return cast(Callable[[F], F], cached(cache, lock=threading.Lock()))
