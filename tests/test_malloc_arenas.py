"""The server process caps glibc's malloc arenas (RSS stays flat under a long threaded load)."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.serving import limit_malloc_arenas


def test_the_cap_applies_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas(Settings().malloc_arenas) is True


def test_an_operators_malloc_arena_max_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas(2) is False


def test_zero_keeps_glibcs_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas(0) is False
    assert Settings(malloc_arenas=0).malloc_arenas == 0
