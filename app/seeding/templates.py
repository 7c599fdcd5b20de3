"""Filling a sandbox template, in a process of its own.

Generating an org is seconds of pure-Python work. In the server's process it would hold the
interpreter lock against every request; in a child process it holds none of it, so a build for
a new seed delays only the sandboxes waiting for that template.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from app.errors import SalesforceError
from app.metadata.registry import SchemaRegistry
from app.seeding.loading import copy_org_data
from app.seeding.pipeline import seed_org
from app.storage.backends import backend_for_url
from app.storage.database import create_db_engine, migrate_platform
from app.storage.tables import TableSet


def fill_template(
    template_url: str, *, objects_dir: Path, org: str, seed: int, imported_from: str | None
) -> None:
    """Migrate an empty database and generate the org into it from `seed`, or, with
    `imported_from` (a database URL), copy that database's imported org into it."""
    registry = SchemaRegistry.from_directory(objects_dir)
    tables = TableSet(registry)
    template = create_db_engine(template_url)
    try:
        migrate_platform(template)
        if imported_from is not None:
            source = create_db_engine(imported_from)
            try:
                copy_org_data(source, template, registry, tables)
            finally:
                source.dispose()
        else:
            seed_org(template, registry, tables, org=org, seed=seed)
    finally:
        template.dispose()
    # Made ready for sandboxes to read through (a SQLite file leaves WAL mode).
    backend_for_url(template_url).settle_template(template_url)


def fill_template_in_child(
    template_url: str, *, objects_dir: Path, org: str, seed: int, imported_from: str | None
) -> None:
    """`fill_template` in a child interpreter (`python -m app.seeding.templates`): a fresh
    process inherits no thread or lock of this one and re-runs no caller's script. A failure
    is raised here with the child's last error line."""
    job = {
        "template_url": template_url,
        "objects_dir": str(objects_dir),
        "org": org,
        "seed": seed,
        "imported_from": imported_from,
    }
    done = subprocess.run(
        [sys.executable, "-m", "app.seeding.templates"],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise TemplateBuildFailed(
            f"Building the template for org {org}, seed {seed} failed: {lines[-1]}"
        )


class TemplateBuildFailed(SalesforceError):
    error_code = "SERVER_UNAVAILABLE"
    status_code = 503


def main() -> None:
    # A build is background work: requests to the server go first when cores are scarce.
    os.nice(10)
    job = json.loads(sys.stdin.read())
    fill_template(
        job["template_url"],
        objects_dir=Path(job["objects_dir"]),
        org=job["org"],
        seed=int(job["seed"]),
        imported_from=job["imported_from"],
    )


if __name__ == "__main__":
    main()
