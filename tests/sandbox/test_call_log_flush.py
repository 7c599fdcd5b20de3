"""A log read never misses calls that the background flusher has taken but not yet committed:
it waits for a flush under way (before, it read the log before the flusher's commit and saw
nothing)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.sandbox.calllog import add_calls
from tests.conftest import API
from tests.sandbox.test_sandboxes import CONTROL, as_token, create, state_of


def test_a_log_read_waits_for_a_flush_under_way(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = create(client)
    writing, release = threading.Event(), threading.Event()

    def slow_add_calls(*args: Any) -> None:
        writing.set()
        release.wait(10)
        add_calls(*args)

    # Patched before the call is made: whichever flusher takes it (the background one may come
    # first) is the one held.
    monkeypatch.setattr("app.sandbox.calllog.add_calls", slow_add_calls)
    as_token(client, sandbox["access_token"]).get(
        f"{API}/query", params={"q": "SELECT Id FROM Case LIMIT 1"}
    )
    flusher = threading.Thread(target=state_of(client).calls.flush)
    flusher.start()
    assert writing.wait(10)
    answers: list[Any] = []
    reader = threading.Thread(
        target=lambda: answers.append(client.get(f"{CONTROL}/{sandbox['id']}/log").json())
    )
    reader.start()
    reader.join(0.5)  # the read is held while the flush commits
    release.set()
    flusher.join(10)
    reader.join(10)
    [log] = answers
    assert [(c["method"], c["path"], c["status"]) for c in log["calls"]] == [
        ("GET", f"{API}/query", 200)
    ]
