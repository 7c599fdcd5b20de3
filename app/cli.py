"""The `localforce` command: serve an org, or (re)build its data."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from app.config import Settings
from app.main import build_state, create_app
from app.seeding.bootstrap import ensure_database
from app.seeding.pipeline import ProgressCallback, SeedResult, seed_org
from app.storage.database import migrate_platform
from app.tls import ensure_certificates, tls_files

cli = typer.Typer(
    help="localforce: a Salesforce org on your machine, for agents and their benchmarks.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console(stderr=True)

DataDirOption = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        help="Where the embedded SQLite database lives (default ./data)",
        envvar="LOCALFORCE_DATA_DIR",
        show_default=False,
    ),
]


def _settings(data_dir: Path | None, **overrides: object) -> Settings:
    values = {key: value for key, value in overrides.items() if value is not None}
    if data_dir is not None:
        values["data_dir"] = data_dir
    return Settings(**values)  # type: ignore[arg-type]


def _report(result: SeedResult) -> None:
    rows = sum(result.counts.values())
    console.print(
        f"Seeded org [bold]{result.org}[/] with seed {result.seed}: {rows:,} records "
        f"in {result.seconds:.2f}s"
    )
    # The hash goes to stdout so scripts can compare runs.
    print(f"content hash: {result.content_hash}")  # noqa: T201


def _with_progress(run: Callable[[ProgressCallback], SeedResult | None]) -> SeedResult | None:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("Seeding", total=None)

        def on_progress(sobject: str, done: int, total: int) -> None:
            progress.update(task, description=f"Seeding {sobject}", completed=done, total=total)

        return run(on_progress)


@cli.command()
def serve(
    host: Annotated[
        str | None,
        typer.Option(
            help="Interface to listen on (default 127.0.0.1)",
            envvar="LOCALFORCE_HOST",
            show_default=False,
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            help="Port to listen on (default 8000)", envvar="LOCALFORCE_PORT", show_default=False
        ),
    ] = None,
    data_dir: DataDirOption = None,
    tls: Annotated[
        bool,
        typer.Option(
            "--tls",
            help="Serve https with a local CA and certificate (made on first use in the data "
            "directory)",
            envvar="LOCALFORCE_TLS",
        ),
    ] = False,
) -> None:
    """Serve the org over HTTP (or https with --tls), creating and seeding the database on
    first run."""
    settings = _settings(data_dir, host=host, port=port)
    state = build_state(settings)
    result = _with_progress(
        lambda on_progress: ensure_database(
            state.engine, state.registry, state.tables, settings, on_progress
        )
    )
    if result is not None:
        _report(result)
    state.engine.dispose()
    certfile: str | None = None
    keyfile: str | None = None
    scheme = "http"
    if tls:
        files, created = ensure_certificates(settings.data_dir)
        if created:
            console.print(f"Created a local certificate authority: {files.ca_file.resolve()}")
        console.print("To trust it, set in the clients' environment:")
        for line in files.trust_instructions():
            console.print(f"  {line}", markup=False, highlight=False)
        certfile, keyfile = str(files.cert_file), str(files.key_file)
        scheme = "https"
    console.print(f"localforce serving on {scheme}://{settings.host}:{settings.port}")
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )


def environment(base_url: str, username: str, password: str, ca_file: Path | None) -> list[str]:
    """The variables Salesforce clients and harnesses read, pointed at localforce."""
    token = ""
    values = {
        "SF_INSTANCE_URL": base_url,
        "SF_LOGIN_URL": base_url,
        "SF_USERNAME": username,
        "SF_PASSWORD": password,
        "SALESFORCE_INSTANCE_URL": base_url,
        "SALESFORCE_USERNAME": username,
        "SALESFORCE_PASSWORD": password,
        "SALESFORCE_SECURITY_TOKEN": token,
    }
    if ca_file is not None:
        ca = str(ca_file.resolve())
        values.update(REQUESTS_CA_BUNDLE=ca, SSL_CERT_FILE=ca, NODE_EXTRA_CA_CERTS=ca)
    return [f"export {name}={shlex.quote(value)}" for name, value in values.items()]


@cli.command()
def env(
    host: Annotated[
        str | None,
        typer.Option(help="Host the server listens on", envvar="LOCALFORCE_HOST"),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(help="Port the server listens on", envvar="LOCALFORCE_PORT"),
    ] = None,
    data_dir: DataDirOption = None,
    tls: Annotated[
        bool, typer.Option("--tls", help="The server runs with --tls", envvar="LOCALFORCE_TLS")
    ] = False,
    username: Annotated[str, typer.Option(help="Username to log in with")] = "agent@example.com",
    password: Annotated[str, typer.Option(help="Password to log in with")] = "password",
) -> None:
    """Print shell exports (SF_*, SALESFORCE_*, CA bundle) that point clients at localforce."""
    settings = _settings(data_dir, host=host, port=port)
    ca_file = None
    if tls:
        ca_file = tls_files(settings.data_dir).ca_file
    shown_host = "localhost" if settings.host in {"127.0.0.1", "0.0.0.0"} else settings.host
    base_url = f"{'https' if tls else 'http'}://{shown_host}:{settings.port}"
    for line in environment(base_url, username, password, ca_file):
        print(line)  # noqa: T201


@cli.command()
def seed(
    seed_value: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="Random seed: same seed, same data (default 42)",
            envvar="LOCALFORCE_SEED",
            show_default=False,
        ),
    ] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Rebuild the org's data from scratch (drops every record) and print its content hash."""
    settings = _settings(data_dir, seed=seed_value)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    state = build_state(settings)
    migrate_platform(state.engine)
    result = _with_progress(
        lambda on_progress: seed_org(
            state.engine,
            state.registry,
            state.tables,
            org=settings.org,
            seed=settings.seed,
            on_progress=on_progress,
        )
    )
    assert result is not None
    _report(result)
    state.engine.dispose()


def main() -> None:
    cli()
