"""The request threads (app.api.threads): work's result or error comes back, no more than the
set number run at once, and a caller cancelled while its work runs waits for the work to end."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from app.api.threads import RequestThreads


@pytest.mark.asyncio
async def test_the_result_and_the_error_come_back() -> None:
    threads = RequestThreads(2)

    def fail() -> None:
        raise ValueError("no")

    assert await threads.run(lambda a, b: a + b, 2, b=3) == 5
    with pytest.raises(ValueError, match="no"):
        await threads.run(fail)


@pytest.mark.asyncio
async def test_no_more_than_the_count_run_at_once() -> None:
    threads = RequestThreads(3)
    lock = threading.Lock()
    running, most = 0, 0

    def work() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    await asyncio.gather(*(threads.run(work) for _ in range(12)))
    assert most == 3
    threads.resize(1)
    most = 0
    await asyncio.gather(*(threads.run(work) for _ in range(4)))
    assert most == 1


@pytest.mark.asyncio
async def test_a_cancelled_caller_waits_for_its_work_to_end() -> None:
    threads = RequestThreads(1)
    started, release = threading.Event(), threading.Event()
    ended: list[str] = []

    def work() -> None:
        started.set()
        release.wait(5)
        ended.append("work")

    task = asyncio.create_task(threads.run(work))
    while not started.is_set():
        await asyncio.sleep(0.001)
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done()  # still waiting for the work it started
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended == ["work"]


@pytest.mark.asyncio
async def test_work_cancelled_before_it_starts_never_runs() -> None:
    threads = RequestThreads(1)
    release = threading.Event()
    ran: list[str] = []
    busy = asyncio.create_task(threads.run(release.wait, 5))
    queued = asyncio.create_task(threads.run(ran.append, "queued"))
    await asyncio.sleep(0.02)
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    release.set()
    await busy
    await asyncio.sleep(0.02)
    assert ran == []
