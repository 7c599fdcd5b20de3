"""Real servers for tests and benchmarks: an app served by uvicorn on a free local port, in a
background thread, for clients that must talk over a socket."""

from __future__ import annotations

import json
import os
import random
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from app.main import create_app
from app.serving import uvicorn_options
from tests.conftest import make_settings
from tests.databases import DatabaseFactory

# Ports are drawn below the kernel's ephemeral range (32768 and up), from a band of each
# pytest-xdist worker's own. bind(0) could hand one worker a port another worker's server had
# just been given and not bound yet; that test's client then talked to the other test's server
# (a 404 for a sandbox it had made). Within a band, a process never hands out a port twice.
PORT_BANDS = 6
PORT_BAND_SIZE = 2000
FIRST_PORT = 20000
_handed_out: set[int] = set()
_ports = random.Random()


def _band() -> range:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    index = int(worker.removeprefix("gw")) if worker.removeprefix("gw").isdigit() else 0
    low = FIRST_PORT + (index % PORT_BANDS) * PORT_BAND_SIZE
    return range(low, low + PORT_BAND_SIZE)


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on, of this worker's band."""
    band = _band()
    while True:
        port = _ports.choice(band)
        if port in _handed_out:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        if len(_handed_out) >= len(band) // 2:  # a long run: forget the oldest half
            _handed_out.clear()
        return port


@contextmanager
def serve_in_thread(app: FastAPI, **config: Any) -> Iterator[int]:
    """Serve `app` on 127.0.0.1 until the block ends, as `localforce serve` does (its HTTP
    protocol and keep-alive); yields the port. `config` goes to uvicorn (e.g. ssl_certfile and
    ssl_keyfile)."""
    port = free_port()
    options = {**uvicorn_options(), **config}
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False, **options
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def private_org_app(
    database_factory: DatabaseFactory, seeded_template: str, **overrides: object
) -> FastAPI:
    """The app on its own copy of the seeded org."""
    url = database_factory.new_url(template=seeded_template)
    return create_app(make_settings(url, database_factory.workdir, **overrides))


def task_file_app(
    database_factory: DatabaseFactory,
    seeded_template: str,
    tasks: list[dict[str, Any]],
    directory: Path,
    **overrides: object,
) -> FastAPI:
    """The app on its own copy of the seeded org, with `tasks` as its task file (written in
    `directory`)."""
    task_file = directory / "tasks.json"
    task_file.write_text(json.dumps(tasks), encoding="utf-8")
    return private_org_app(database_factory, seeded_template, task_file=task_file, **overrides)
