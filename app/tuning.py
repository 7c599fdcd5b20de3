"""How the server process uses memory and files: glibc malloc settings that keep RSS flat, the
pace of Python's garbage collector, and the open files limit. `tune_process` applies them once,
as the app is made; `freeze_startup_objects` once the app has started; the two `..._forever`
loops run beside the requests."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import os
import resource

from app.config import Settings

# The C library this process runs on, and mallopt's parameters (glibc's malloc.h).
_LIBC = ctypes.CDLL(None)
_M_ARENA_MAX = -8
_M_MMAP_THRESHOLD = -3


def limit_malloc_arenas(count: int) -> bool:
    """Cap glibc's malloc arenas at `count` for this process; returns whether it applied.

    glibc gives threads that allocate at the same time arenas of their own, up to 8 per core.
    With a thread pool serving requests (and SQLite allocating in each), memory freed in one
    arena is not reused by another and rarely returns to the system, so RSS creeps up under a
    long load: the soak grew 12% over 60,000 requests with the default, 4% with two arenas.
    An operator's MALLOC_ARENA_MAX wins; 0 keeps glibc's default; other C libraries are left
    alone.
    """
    return _mallopt(_M_ARENA_MAX, count, "MALLOC_ARENA_MAX")


def fix_mmap_threshold(size: int) -> bool:
    """Serve allocations of `size` bytes and more from mmap, for this process; returns whether
    it applied.

    glibc raises its mmap threshold each time a large mmapped block is freed (up to 32 MB), so
    after a few big request bodies or result pages every later one comes from the heap, where
    freed space between live blocks never returns to the system: RSS grew 11.1% over 40,000
    fuzzed requests with that default, 8.4% with the threshold fixed at 128 kB (which also stops
    glibc moving its trim threshold). An operator's MALLOC_MMAP_THRESHOLD_ wins; 0 keeps glibc's
    sliding default.
    """
    return _mallopt(_M_MMAP_THRESHOLD, size, "MALLOC_MMAP_THRESHOLD_")


def release_free_memory() -> bool:
    """Hand the free pages inside malloc's heaps back to the system (glibc's malloc_trim): a
    heap only shrinks from its top, so without this the space freed between long-lived blocks
    stays in RSS. Returns whether glibc released any."""
    trim = getattr(_LIBC, "malloc_trim", None)
    return trim is not None and bool(trim(0))


async def release_free_memory_forever(seconds: float) -> None:
    """Release free memory every `seconds` (off the event loop: a trim walks every heap)."""
    while True:
        await asyncio.sleep(seconds)
        await asyncio.to_thread(release_free_memory)


# How many collections of each generation come before one of the next (Python's: 10 and 10).
GC_OLDER_GENERATIONS = (20, 20)


def space_out_garbage_collection(threshold: int) -> bool:
    """Collect Python's youngest generation of garbage once every `threshold` allocations
    (Python's default is 700), and older generations more rarely; returns whether it applied.

    A query result is tens of thousands of tuples and dicts alive for a request. At Python's
    pace the collector ran hundreds of times while one was built and shaped, each time walking
    the rows built so far and, every hundredth time, the whole heap: the 22,000-row scan spent
    more than half its time in the collector (about 280 ms in all, 115 ms at this pace). Garbage
    without reference cycles is freed at once whatever the pace; cycles wait a little longer.
    """
    if threshold <= 0:
        return False
    gc.set_threshold(threshold, *GC_OLDER_GENERATIONS)
    return True


def freeze_startup_objects() -> int:
    """Move every object alive now into the collector's permanent generation; returns how many.

    Called once the server has started: its modules, schemas, tables and templates live as long
    as the process, and a full collection that no longer walks them takes a fraction of the
    time (see `collect_garbage_forever`). `unfreeze_objects` undoes it as the app stops.
    """
    gc.freeze()
    return gc.get_freeze_count()


def unfreeze_objects() -> None:
    """Hand the frozen objects back to the collector: a process that goes on to start another
    app (the tests do) frees what this one left in cycles."""
    gc.unfreeze()


async def collect_garbage_forever(seconds: float) -> None:
    """Collect every generation of Python's garbage every `seconds`.

    A query's SQL is built from SQLAlchemy aliases whose columns and their table point at each
    other: each query leaves hundreds of objects in reference cycles, which only the collector
    frees. At the pace `space_out_garbage_collection` sets, a few of them outlive the young
    collections while their request still runs and reach the oldest generation, which Python
    collects only once it has grown by a quarter: over 60,000 fuzzed requests it never did, and
    RSS grew 20%. A timed collection keeps that generation to what a few seconds of requests
    leave. It runs on the event loop: a collection holds the interpreter lock whichever thread
    runs it.
    """
    while True:
        await asyncio.sleep(seconds)
        gc.collect()


def open_files_up_to_hard_limit() -> int:
    """Raise this process's limit on open files to the hard limit; returns the limit now.

    Each sandbox whose connections stay pooled holds a few descriptors (on SQLite its file, its
    WAL and shared-memory files, and its template), so a worker serving a few hundred sandboxes
    at once needs more than the 1,024 many systems start a process with.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


def _mallopt(parameter: int, value: int, environment_name: str) -> bool:
    if value <= 0 or environment_name in os.environ:
        return False
    mallopt = getattr(_LIBC, "mallopt", None)
    return mallopt is not None and bool(mallopt(parameter, value))


def tune_process(settings: Settings) -> None:
    """Apply the settings' malloc and garbage collection pace, and raise the open files limit
    (before the request threads start)."""
    limit_malloc_arenas(settings.malloc_arenas)
    fix_mmap_threshold(settings.malloc_mmap_threshold)
    space_out_garbage_collection(settings.gc_threshold)
    open_files_up_to_hard_limit()
