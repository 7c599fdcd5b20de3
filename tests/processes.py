"""Servers in processes of their own (`localforce serve`), for tests of workers, restarts and
kills: what a deployment runs, not an app inside the test process."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import make_url

from tests.conftest import TEST_ADMIN_KEY, TEST_SEED
from tests.databases import DatabaseFactory
from tests.servers import free_port

LOCALFORCE = str(Path(sys.executable).with_name("localforce"))


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    base: str
    log: Path

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=60)


@dataclass
class Deployment:
    """What the servers of one deployment share: a data directory and a database."""

    data_dir: Path
    database_url: str  # "" for SQLite in the data directory

    def env(self, port: int, **extra: str) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("LOCALFORCE_")}
        env.update(
            LOCALFORCE_DATA_DIR=str(self.data_dir),
            LOCALFORCE_DATABASE_URL=self.database_url,
            LOCALFORCE_PORT=str(port),
            LOCALFORCE_SEED=str(TEST_SEED),
            LOCALFORCE_SANDBOX_POOL_SIZE="1",
            LOCALFORCE_ADMIN_KEY=TEST_ADMIN_KEY,
        )
        env.update(extra)
        return env

    def start(self, *args: str, **extra: str) -> ServerProcess:
        port = free_port()
        log = self.data_dir / f"server-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [LOCALFORCE, "serve", *args],
                env=self.env(port, **extra),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: workers die with it
            )
        server = ServerProcess(process, f"http://127.0.0.1:{port}", log)
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{server.base}/services/data", timeout=2).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                server.stop(signal.SIGKILL)
                raise RuntimeError(f"the server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.2)


def deployment(factory: DatabaseFactory, template: str, workdir: Path) -> Deployment:
    """A deployment over a fresh copy of `template`, a seeded org (so no server has to seed),
    with the sandbox templates it holds (see `DatabaseFactory.add_sandbox_template`)."""
    data_dir = workdir / "data"
    data_dir.mkdir(parents=True)
    if factory.backend == "sqlite":
        database = data_dir / "localforce.db"
        shutil.copyfile(make_url(template).database or "", database)
        factory.copy_sandbox_templates(template, f"sqlite:///{database}", data_dir)
        return Deployment(data_dir, "")
    return Deployment(data_dir, factory.new_url(template=template))


@contextmanager
def running(deploy: Deployment, *args: str, **extra: str) -> Iterator[ServerProcess]:
    server = deploy.start(*args, **extra)
    try:
        yield server
    finally:
        server.stop()
