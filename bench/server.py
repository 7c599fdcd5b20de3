"""A seeded org served by uvicorn in a background thread, for benchmarks."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from app.api.state import AppState
from app.config import Settings
from app.main import build_state, create_app
from app.seeding.bootstrap import ensure_database


@dataclass(frozen=True)
class RunningOrg:
    base_url: str
    state: AppState


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_org(data_dir: Path, seed: int = 42) -> Iterator[RunningOrg]:
    settings = Settings(data_dir=data_dir, seed=seed)
    seeding = build_state(settings)
    ensure_database(seeding.engine, seeding.registry, seeding.tables, settings)
    seeding.engine.dispose()
    port = _free_port()
    app = create_app(settings)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    try:
        yield RunningOrg(base_url=f"http://127.0.0.1:{port}", state=app.state.localforce)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
