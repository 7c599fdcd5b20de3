"""The server process caps glibc's malloc arenas and fixes its mmap threshold, and hands freed
heap pages back (RSS stays flat under a long threaded load); it spaces out Python's garbage
collections, collects all of them on a timer over a heap whose startup objects are frozen, and
may open as many files as the system lets it."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import resource
import weakref

import pytest

from app.config import Settings
from app.tuning import (
    GC_OLDER_GENERATIONS,
    collect_garbage_forever,
    fix_mmap_threshold,
    limit_malloc_arenas,
    open_files_up_to_hard_limit,
    release_free_memory,
    space_out_garbage_collection,
)
from tests.conftest import open_client
from tests.databases import DatabaseFactory


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


def test_the_mmap_threshold_is_fixed_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert fix_mmap_threshold(Settings().malloc_mmap_threshold) is True
    assert Settings().malloc_mmap_threshold == 128 * 1024


def test_an_operators_mmap_threshold_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert fix_mmap_threshold(128 * 1024) is False


def test_zero_keeps_glibcs_sliding_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert fix_mmap_threshold(0) is False
    with pytest.raises(ValueError):
        Settings(malloc_mmap_threshold=64 * 1024 * 1024)  # past glibc's largest


def test_freed_heap_pages_go_back_to_the_system() -> None:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(4096) for _ in range(20_000)]  # 80 MB of heap below the last block
    for block in blocks[:-1]:
        libc.free(block)
    try:
        assert release_free_memory() is True
    finally:
        libc.free(blocks[-1])


def test_garbage_collections_are_spaced_out() -> None:
    before = gc.get_threshold()
    try:
        assert space_out_garbage_collection(Settings().gc_threshold) is True
        assert gc.get_threshold() == (50_000, *GC_OLDER_GENERATIONS)
        gc.set_threshold(700, 10, 10)
        assert space_out_garbage_collection(0) is False  # 0 keeps what was set
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


class Cycle:
    """An object in a reference cycle with itself: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def _cycle_in_the_oldest_generation() -> weakref.ref[Cycle]:
    cycle = Cycle()
    gc.collect()  # survives every generation while referenced: it now sits in the oldest
    found = weakref.ref(cycle)
    del cycle
    return found


@pytest.mark.asyncio
async def test_a_timed_collection_frees_cycles_in_the_oldest_generation() -> None:
    before = gc.get_threshold()
    gc.set_threshold(0)  # no automatic collections: only the loop's can free the cycle
    try:
        cycle = _cycle_in_the_oldest_generation()
        await asyncio.sleep(0.05)
        assert cycle() is not None  # nothing else collects it
        loop = asyncio.create_task(collect_garbage_forever(0.01))
        for _ in range(200):
            await asyncio.sleep(0.01)
            if cycle() is None:
                break
        loop.cancel()
        assert cycle() is None
    finally:
        gc.set_threshold(*before)


def test_a_running_server_freezes_its_startup_objects_until_it_stops(
    database_factory: DatabaseFactory, seeded_template: str
) -> None:
    gc.unfreeze()
    running = open_client(database_factory, seeded_template)
    client = next(running)  # started
    assert gc.get_freeze_count() > 100_000  # modules, schemas and tables: not walked again
    assert client.get("/services/data/").status_code == 200
    next(running, None)  # stopped: the collector has them back
    assert gc.get_freeze_count() == 0


def test_the_open_files_limit_rises_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:  # nothing to raise to: the limit stays as it is
        assert open_files_up_to_hard_limit() == soft
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard // 2, hard))
    try:
        assert open_files_up_to_hard_limit() == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
