"""The Dockerfile and docker-compose.yml, replayed without Docker: the files the image copies
go into a clean directory, the image's install runs there in a fresh virtual environment, and
the image's command serves with the environment compose gives the API service (PostgreSQL and
a worker count), on a port of this machine. Its health check must then pass."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from app.config import REPO_ROOT
from tests.servers import free_port


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (keyword, argument), continuation lines joined."""
    text = (REPO_ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    steps = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            keyword, _, argument = line.strip().partition(" ")
            steps.append((keyword.upper(), argument.strip()))
    return steps


def image_env(steps: list[tuple[str, str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, argument in steps:
        if keyword == "ENV":
            for pair in shlex.split(argument):
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def exec_form(argument: str) -> list[str]:
    return list(yaml.safe_load(argument))


def copy_into(workdir: Path, argument: str) -> None:
    """COPY src... dest, relative to the build context (the repository)."""
    *sources, target = argument.split()
    into_dir = target.endswith("/") or len(sources) > 1
    for source in sources:
        origin = REPO_ROOT / source
        destination = workdir / target / origin.name if into_dir else workdir / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, destination, dirs_exist_ok=True)
        else:
            shutil.copy2(origin, destination)


def wait_until_serving(server: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 180
    while True:
        assert server.poll() is None, log.read_text()[-3000:]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/services/data", timeout=2).is_success:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.3)


@pytest.mark.postgres
def test_the_image_recipe_installs_and_serves_as_compose_runs_it(
    tmp_path: Path, postgres_database: str
) -> None:
    steps = dockerfile()
    workdir = tmp_path / "srv"
    workdir.mkdir()
    for keyword, argument in steps:
        if keyword == "COPY":
            copy_into(workdir, argument)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    path = f"{bin_dir}:{os.environ['PATH']}"
    for keyword, argument in steps:
        if keyword == "RUN":  # the image's python is the venv's
            subprocess.run(
                ["/bin/sh", "-c", argument],
                cwd=workdir,
                env={**os.environ, "PATH": path},
                check=True,
                capture_output=True,
            )

    compose = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    # The API hosts behind the balancer are one service's copies (tests/test_multi_host.py
    # runs them behind it).
    assert services["api1"] == services["api2"] == services["api3"]
    api_env = {name: str(value) for name, value in services["api1"]["environment"].items()}
    assert api_env["LOCALFORCE_WORKERS"] == "${LOCALFORCE_WORKERS:-2}"
    assert api_env["LOCALFORCE_ADMIN_KEY"] == "${LOCALFORCE_ADMIN_KEY:-}"
    env = {key: value for key, value in os.environ.items() if not key.startswith("LOCALFORCE_")}
    env.update(image_env(steps))
    env.update(api_env)
    port = free_port()
    env.update(
        PATH=path,
        LOCALFORCE_WORKERS="2",  # compose's default for the variable
        LOCALFORCE_ADMIN_KEY="",  # compose's default: the server makes one in the data volume
        LOCALFORCE_DATABASE_URL=postgres_database,  # compose's "postgres" host is this machine
        LOCALFORCE_HOST="127.0.0.1",
        LOCALFORCE_PORT=str(port),
        LOCALFORCE_DATA_DIR=str(tmp_path / "data"),
    )
    [command] = [exec_form(argument) for keyword, argument in steps if keyword == "CMD"]
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            command,
            cwd=workdir,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_serving(server, port, log)
        # The image's own health check, as Docker runs it (shell form), on this port.
        [health] = [argument for keyword, argument in steps if keyword == "HEALTHCHECK"]
        probe = health.split(" CMD ", 1)[1].replace("8000", str(port))
        checked = subprocess.run(["/bin/sh", "-c", probe], env=env, timeout=60, check=False)
        assert checked.returncode == 0
        served = httpx.get(f"http://127.0.0.1:{port}/services/data/v59.0/limits", timeout=10)
        assert served.status_code == 401  # the real app: it asks for a session
        openenv = httpx.get(f"http://127.0.0.1:{port}/openenv/health", timeout=60)
        assert openenv.json() == {"status": "healthy"}  # the image has the openenv extra
        # The admin key, as `docker compose exec api localforce admin-key` reads it.
        printed = subprocess.run(
            ["localforce", "admin-key"], env=env, capture_output=True, text=True, check=True
        )
        key = printed.stdout.strip()
        assert key == (tmp_path / "data" / "admin-key").read_text().strip()
        assert f"Admin key (control plane and /console): {key}" in log.read_text()
        asked = httpx.get(f"http://127.0.0.1:{port}/console", timeout=10)
        assert asked.status_code == 303  # to the login page
        # The console's templates, htmx and coverage report are in the image too.
        operator = {"X-Localforce-Admin-Key": key}
        for page in ("/console", "/console/coverage", "/console/static/htmx-2.0.11.min.js"):
            shown = httpx.get(f"http://127.0.0.1:{port}{page}", headers=operator, timeout=10)
            assert shown.status_code == 200, page
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
