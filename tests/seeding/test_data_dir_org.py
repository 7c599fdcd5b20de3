"""A data directory belongs to one org: a server asked for another org or seed than its database
holds refuses to start, before it writes anything, unless `localforce serve --reseed` replaces
the data on purpose. The same org and seed, or an empty database, start as before."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, make_url, select, update
from typer.testing import CliRunner

from app import cli as cli_module
from app.cli import cli
from app.config import Settings
from app.main import create_app
from app.seeding.bootstrap import GeneratedOrgInTheWay, ensure_database
from app.seeding.loading import ORG_INFO
from app.state import build_state
from tests.conftest import make_settings
from tests.databases import DatabaseFactory

OTHER_ORG = (
    "The database holds the org 'original' generated with seed 42, not 'b2b' with seed 42. "
    "Serve it with LOCALFORCE_ORG=original LOCALFORCE_SEED=42, use another data directory or "
    "database for 'b2b' with seed 42, or replace it on purpose with `localforce serve --reseed`."
)
OTHER_SEED = (
    "The database holds the org 'original' generated with seed 7, not 'original' with seed 42. "
    "Serve it with LOCALFORCE_ORG=original LOCALFORCE_SEED=7, use another data directory or "
    "database for 'original' with seed 42, or replace it on purpose with "
    "`localforce serve --reseed`."
)


def org_info(url: str) -> tuple[Any, ...]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            columns = ORG_INFO.c.org, ORG_INFO.c.seed, ORG_INFO.c.source, ORG_INFO.c.content_hash
            return tuple(conn.execute(select(*columns)).one())
    finally:
        engine.dispose()


def claim(url: str, **values: object) -> None:
    """Make the database's org info say it holds something else (no seeding needed)."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(update(ORG_INFO).values(**values))
    finally:
        engine.dispose()


def start(app: FastAPI) -> None:
    """Run the app's start-up (and shutdown), as a server would."""
    try:
        with TestClient(app):
            pass
    finally:
        app.state.localforce.engine.dispose()
        app.state.localforce.platform.dispose()


def serve(args: list[str], monkeypatch: pytest.MonkeyPatch, url: str = "") -> Any:
    """`localforce serve ARGS`, up to where it would start listening."""
    monkeypatch.setenv("LOCALFORCE_DATABASE_URL", url)
    for name in ("LOCALFORCE_ORG", "LOCALFORCE_SEED", "LOCALFORCE_RESEED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cli_module.console, "width", 400)  # the message on one line
    served: list[FastAPI] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.append(app))
    result = CliRunner().invoke(cli, ["serve", *args])
    for app in served:
        app.state.localforce.engine.dispose()
        app.state.localforce.platform.dispose()
    return result


def test_a_server_asked_for_another_org_refuses_to_start(
    database_factory: DatabaseFactory, seeded_template: str
) -> None:
    url = database_factory.new_url(template=seeded_template)
    before = org_info(url)
    settings = make_settings(url, database_factory.workdir, org="b2b", sandbox_pool_size=0)
    with pytest.raises(GeneratedOrgInTheWay) as refused:
        start(create_app(settings))
    assert str(refused.value) == OTHER_ORG
    assert org_info(url) == before


def test_a_server_asked_for_another_seed_refuses_to_start(
    database_factory: DatabaseFactory, seeded_template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = database_factory.new_url(template=seeded_template)
    claim(url, seed=7)
    before = org_info(url)
    result = serve(["--data-dir", str(database_factory.workdir)], monkeypatch, url)
    assert result.exit_code == 1, result.output
    assert result.output.strip() == OTHER_SEED  # after the progress bar's blank line
    assert org_info(url) == before


def test_serve_reseed_replaces_another_org_with_the_one_asked_for(
    database_factory: DatabaseFactory, seeded_template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = database_factory.new_url(template=seeded_template)
    *_, seeded_hash = org_info(url)
    claim(url, org="b2b", seed=7, content_hash="0" * 64)
    result = serve(["--data-dir", str(database_factory.workdir), "--reseed"], monkeypatch, url)
    assert result.exit_code == 0, result.output
    assert "Seeded org original with seed 42" in result.output
    assert org_info(url) == ("original", 42, "generated", seeded_hash)


def test_the_org_and_seed_it_holds_start_without_seeding(
    database_factory: DatabaseFactory, seeded_template: str
) -> None:
    url = database_factory.new_url(template=seeded_template)
    before = org_info(url)
    state = build_state(make_settings(url, database_factory.workdir))
    try:
        assert ensure_database(state.engine, state.registry, state.tables, state.settings) is None
    finally:
        state.engine.dispose()
    assert org_info(url) == before


def test_an_imported_org_serves_whatever_seed_is_asked_for(
    database_factory: DatabaseFactory, seeded_template: str
) -> None:
    url = database_factory.new_url(template=seeded_template)
    claim(url, seed=0, source="import:" + "a" * 64)  # an import's seed means nothing
    before = org_info(url)
    state = build_state(make_settings(url, database_factory.workdir))
    try:
        assert ensure_database(state.engine, state.registry, state.tables, state.settings) is None
    finally:
        state.engine.dispose()
    assert org_info(url) == before


def fingerprint(directory: Path) -> dict[str, str]:
    """Every file and directory under `directory`, files by their sha256."""
    return {
        str(path.relative_to(directory)): (
            hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "directory"
        )
        for path in sorted(directory.rglob("*"))
    }


def refuse_b2b(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Start a server for b2b on `data_dir`, as an app and as `localforce serve`: both refuse."""
    as_b2b = Settings(database_url="", data_dir=data_dir, org="b2b", seed=42)
    with pytest.raises(GeneratedOrgInTheWay, match="not 'b2b' with seed 42"):
        start(create_app(as_b2b))
    result = serve(["--data-dir", str(data_dir), "--org", "b2b"], monkeypatch)
    assert result.exit_code == 1, result.output
    assert result.output.strip() == OTHER_ORG


def test_a_refused_start_leaves_every_file_of_the_data_directory_as_it_was(
    database_factory: DatabaseFactory,
    seeded_template: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if database_factory.backend != "sqlite":
        pytest.skip("a data directory holds the embedded SQLite databases only")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copyfile(make_url(seeded_template).database or "", data_dir / "localforce.db")
    before = fingerprint(data_dir)
    refuse_b2b(data_dir, monkeypatch)
    assert fingerprint(data_dir) == before
    # Served once as the org it holds: the directory has everything a server leaves in it.
    start(create_app(Settings(database_url="", data_dir=data_dir, seed=42, sandbox_pool_size=0)))
    before = fingerprint(data_dir)
    assert {"localforce.db", "localforce-platform.db"} <= set(before)
    refuse_b2b(data_dir, monkeypatch)
    assert fingerprint(data_dir) == before
