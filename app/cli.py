"""The `localforce` command: serve an org, (re)build its data, import a CRMArena dump, or
generate benchmark tasks."""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
import uvicorn
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table
from sqlalchemy import Connection

from app.admin_key import InsecureOnPublicAddress, check_control_plane, key_path, with_admin_key
from app.config import REPO_ROOT, Settings
from app.console import coverage
from app.errors import SalesforceError
from app.evaluation.control import ControlError
from app.evaluation.evaluate import (
    EvalRefused,
    ModelEndpoint,
    evaluate,
    load_tasks,
    select_tasks,
)
from app.evaluation.report import ReportRefused, read_runs, write_report
from app.evaluation.run_file import RunFile
from app.evaluation.runner import Plan
from app.evaluation.statistics import grouped
from app.main import create_app, prepare_databases
from app.seeding.bootstrap import OrgInTheWay
from app.seeding.download import check_sha256_format, download, is_url, verify_sha256
from app.seeding.dump_reader import DumpError
from app.seeding.importer import (
    DUMP_BASE_URL,
    DUMP_FILES,
    DumpRejected,
    ImportResult,
    ObjectReport,
    import_dump,
)
from app.seeding.pipeline import ProgressCallback, SeedResult, seed_org
from app.serving import uvicorn_options
from app.state import build_state
from app.storage.database import create_db_engine, migrate_platform
from app.tasks.generator import generate_tasks, task_types, write_task_file
from app.tasks.grading import GradingFailed, grade
from app.tasks.judge import Judge
from app.tasks.results import export, purge, result_rows
from app.tasks.source import org_database
from app.tasks.split_files import draw_part
from app.tasks.splits import PARTS, SPLITS, split_named
from app.tls import ensure_certificates, tls_files
from app.workers import serve_workers

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


class AgentStrategy(StrEnum):  # app.evaluation.agent.STRATEGIES
    function_calling = "function-calling"
    react = "react"


class OrgName(StrEnum):
    original = "original"
    b2b = "b2b"
    b2c = "b2c"


OrgOption = Annotated[
    OrgName | None,
    typer.Option(
        "--org",
        help="Which org: original (CRMArena), b2b or b2c (CRMArena-Pro); default original",
        envvar="LOCALFORCE_ORG",
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


T = TypeVar("T")


def _with_progress(run: Callable[[ProgressCallback], T], verb: str = "Seeding") -> T:
    """Run with a progress bar; the callback's step name follows `verb` (empty: shown as is)."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(verb or "Working", total=None)

        def on_progress(step: str, done: int, total: int) -> None:
            description = f"{verb} {step}" if verb else step
            progress.update(task, description=description, completed=done, total=total)

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
    org: OrgOption = None,
    tls: Annotated[
        bool,
        typer.Option(
            "--tls",
            help="Serve https with a local CA and certificate (made on first use in the data "
            "directory)",
            envvar="LOCALFORCE_TLS",
        ),
    ] = False,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            help="Worker processes (state is in the database, so any worker serves any "
            "sandbox); on SQLite they share the data directory",
            envvar="LOCALFORCE_WORKERS",
        ),
    ] = 1,
    reseed: Annotated[
        bool,
        typer.Option(
            "--reseed",
            help="Replace the org the database holds, whatever it is, with the org and seed "
            "asked for (without it, a database holding another org or seed is refused)",
            envvar="LOCALFORCE_RESEED",
        ),
    ] = False,
    insecure_control_plane: Annotated[
        bool,
        typer.Option(
            "--insecure-control-plane",
            help="Serve the control plane (/__localforce) and /console without the admin key; "
            "refused unless the server listens on a loopback address",
            envvar="LOCALFORCE_INSECURE_CONTROL_PLANE",
        ),
    ] = False,
) -> None:
    """Serve the org over HTTP (or https with --tls), creating and seeding the database on
    first run."""
    settings = _settings(
        data_dir,
        host=host,
        port=port,
        org=org and org.value,
        insecure_control_plane=insecure_control_plane,
    )
    key_given = bool(settings.admin_key)
    try:
        check_control_plane(settings)
    except InsecureOnPublicAddress as error:
        console.print(f"[red]{escape(str(error))}[/]", soft_wrap=True)
        raise typer.Exit(1) from None
    state = build_state(settings)
    try:
        result = _with_progress(
            lambda on_progress: prepare_databases(state, on_progress, reseed=reseed)
        )
    except OrgInTheWay as error:
        console.print(f"[red]{error}[/]")
        raise typer.Exit(1) from None
    finally:
        state.engine.dispose()
        state.platform.dispose()
    if result is not None:
        _report(result)
    # Once the data directory is known to be this org's: every worker reads it back.
    settings = with_admin_key(settings)
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
    _announce_admin_key(settings, key_given)
    if workers > 1:
        # Each worker process builds its app from the environment: hand it these settings.
        os.environ.update(settings.as_environment())
        config = uvicorn.Config(
            "app.main:create_app",
            factory=True,
            workers=workers,
            host=settings.host,
            port=settings.port,
            log_level="info",
            ssl_certfile=certfile,
            ssl_keyfile=keyfile,
            **uvicorn_options(),
        )
        serve_workers(config)
        return
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="info",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
        **uvicorn_options(),
    )


def _announce_admin_key(settings: Settings, key_given: bool) -> None:
    """One line: the key the control plane asks for and where it is kept, or a warning that it
    asks for none. A key given in the environment is not echoed."""
    if settings.insecure_control_plane:
        line = (
            "[yellow]Warning: the control plane (/__localforce) and /console ask for no admin "
            "key (--insecure-control-plane): anything that reaches this port can use them.[/]"
        )
    elif key_given:
        line = "Admin key (control plane and /console): the one in LOCALFORCE_ADMIN_KEY"
    else:
        key, path = escape(settings.admin_key), escape(str(key_path(settings.data_dir)))
        line = f"Admin key (control plane and /console): {key}  (from {path})"
    console.print(line, soft_wrap=True, highlight=False)  # on one line, however long


@cli.command("admin-key")
def admin_key(data_dir: DataDirOption = None) -> None:
    """Print the admin key the control plane and /console ask for: LOCALFORCE_ADMIN_KEY if set,
    else the one kept in the data directory (made now if there is none)."""
    settings = with_admin_key(_settings(data_dir, insecure_control_plane=False))
    print(settings.admin_key)  # noqa: T201


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


@cli.command("coverage")
def coverage_report(
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; fail when a file is stale")
    ] = False,
) -> None:
    """Write the coverage report (app/console/coverage.json and docs/coverage.md) from the route
    table, the SOQL and SOSL constructs and the tests (read, not run): a repository's checkout."""
    with tempfile.TemporaryDirectory(prefix="localforce-coverage-") as scratch:
        data_dir = Path(scratch)
        # The app is built for its route table only: its lifespan never runs.
        # The embedded default database in a scratch directory, whatever the environment says.
        settings = Settings(database_url="", data_dir=data_dir, org="original", bulk_runner=False)
        app = create_app(settings)
        try:
            report = coverage.build(REPO_ROOT, app)
        finally:
            app.state.localforce.engine.dispose()
            app.state.localforce.platform.dispose()
    if check:
        stale = coverage.stale_files(REPO_ROOT, report)
        for path in stale:
            console.print(f"{path.as_posix()} is stale: run `make coverage`", highlight=False)
        if stale:
            raise typer.Exit(code=1)
        return
    for path in coverage.write(REPO_ROOT, report):
        console.print(f"wrote {path.as_posix()}", highlight=False)


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
    org: OrgOption = None,
    tls: Annotated[
        bool, typer.Option("--tls", help="The server runs with --tls", envvar="LOCALFORCE_TLS")
    ] = False,
    username: Annotated[str, typer.Option(help="Username to log in with")] = "agent@example.com",
    password: Annotated[str, typer.Option(help="Password to log in with")] = "password",
) -> None:
    """Print shell exports (SF_*, SALESFORCE_*, CA bundle) that point clients at localforce."""
    settings = _settings(data_dir, host=host, port=port, org=org and org.value)
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
    org: OrgOption = None,
) -> None:
    """Rebuild the org's data from scratch (drops every record) and print its content hash."""
    settings = _settings(data_dir, seed=seed_value, org=org and org.value)
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


def _download(url: str, directory: Path, sha256: str | None) -> Path:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(f"Downloading {url.rsplit('/', 1)[-1]}", total=None)

        def on_progress(done: int, total: int | None) -> None:
            progress.update(task, completed=done, total=total)

        return download(url, directory, sha256=sha256, on_progress=on_progress)


def _report_table(reports: list[ObjectReport]) -> Table:
    table = Table(title="Import report", title_justify="left")
    table.add_column("Object")
    table.add_column("Loaded", justify="right")
    table.add_column("Converted", justify="right")
    table.add_column("Rejected", justify="right")
    table.add_column("Reasons and notes", overflow="fold")
    for report in reports:
        notes = report.reasons() + report.notes()
        if report.converted:
            notes.append("converted: " + ", ".join(sorted(report.converted)))
        if report.table is None:
            notes.append("no table in the dump: left empty")
        table.add_row(
            report.sobject,
            f"{report.loaded:,}",
            f"{report.converted_values:,}",
            f"{report.rejected_rows:,}",
            escape("; ".join(notes)),
            style="red" if report.rejected_rows else None,
        )
    return table


def _import_report(result: ImportResult, settings: Settings) -> None:
    console.print(_report_table(result.reports))
    rows = sum(result.counts.values())
    console.print(
        f"Imported {escape(result.source)} into org [bold]{result.org}[/]: {rows:,} records "
        f"in {result.seconds:.2f}s"
    )
    if Settings().org != result.org:
        console.print(f"Serve it with: LOCALFORCE_ORG={result.org} localforce serve")
    print(f"sha256: {result.sha256}")  # noqa: T201
    print(f"content hash: {result.content_hash}")  # noqa: T201


@cli.command("import")
def import_command(
    location: Annotated[
        str,
        typer.Argument(
            metavar="PATH_OR_URL",
            help="A CRMArena SQLite dump: a file, or an http(s) URL to download it from",
            show_default=False,
        ),
    ],
    org: Annotated[
        OrgName,
        typer.Option(
            "--org",
            help="Which org the dump is of: original (crmarena_data.db), b2b "
            "(crmarenapro_b2b_data.db) or b2c (crmarenapro_b2c_data.db)",
            case_sensitive=False,
        ),
    ],
    sha256: Annotated[
        str | None,
        typer.Option(
            "--sha256",
            metavar="HEX",
            help="Refuse the file unless its sha256 is this (checked before anything changes)",
            show_default=False,
        ),
    ] = None,
    skip_invalid_rows: Annotated[
        bool,
        typer.Option(
            "--skip-invalid-rows",
            help="Leave out (and report) rows holding values that cannot be read, instead of "
            "failing",
        ),
    ] = False,
    data_dir: DataDirOption = None,
) -> None:
    """Load a CRMArena dump into the org, keeping every id (replaces the org's data; a dump
    that cannot be imported changes nothing)."""
    settings = _settings(data_dir, org=org.value)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        if sha256 is not None:
            sha256 = check_sha256_format(sha256)
        with tempfile.TemporaryDirectory(prefix="import-", dir=settings.data_dir) as scratch:
            if is_url(location):
                path = _download(location, Path(scratch), sha256)
            else:
                path = Path(location).expanduser()
                if not path.is_file():
                    raise DumpError(
                        f"No such file: {path}. CRMArena publishes the {org.value} dump at "
                        f"{DUMP_BASE_URL}{DUMP_FILES[org.value]}"
                    )
                if sha256 is not None:
                    verify_sha256(path, sha256)
            state = build_state(settings)
            try:
                migrate_platform(state.engine)
                result = _with_progress(
                    lambda on_progress: import_dump(
                        state.engine,
                        state.registry,
                        state.tables,
                        path,
                        org=settings.org,
                        source=location,
                        skip_invalid=skip_invalid_rows,
                        on_progress=on_progress,
                    ),
                    verb="",
                )
            finally:
                state.engine.dispose()
    except DumpRejected as error:
        console.print(_report_table(error.reports))
        _fail(error)
    except DumpError as error:
        _fail(error)
    _import_report(result, settings)


tasks_cli = typer.Typer(
    help="Benchmark tasks: CRMArena's task types drawn from an org, with their answers.",
    no_args_is_help=True,
)
cli.add_typer(tasks_cli, name="tasks")


@tasks_cli.command("generate")
def tasks_generate(
    out: Annotated[Path, typer.Option("--out", help="The task file to write (JSON)")],
    per_type: Annotated[
        int, typer.Option("--per-type", min=1, help="Tasks of each type (default 10)")
    ] = 10,
    seed_value: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help="The org's seed, which also draws the tasks (default 42)",
            envvar="LOCALFORCE_SEED",
            show_default=False,
        ),
    ] = None,
    org: OrgOption = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            help="Draw from the org in this database (default: the org generated from its seed)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write K tasks of every type of the org, each with the answer its data gives."""
    settings = _settings(None, seed=seed_value, org=org and org.value)
    objects_dir = settings.seed_dir / "orgs" / settings.org / "objects"
    try:
        task_types(settings.org)  # an org without tasks fails before its data is built
        with org_database(
            objects_dir, org=settings.org, seed=settings.seed, database_url=database_url
        ) as database:
            rows = generate_tasks(
                database.engine,
                database.tables,
                org=settings.org,
                seed=settings.seed,
                per_type=per_type,
                planted=database.planted,
            )
    except SalesforceError as error:
        console.print(
            f"[bold red]Generation failed:[/] {escape(str(error))}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(code=1) from error
    write_task_file(rows, out)
    drawn = {row.task for row in rows}
    console.print(
        f"Wrote {len(rows)} tasks of {len(drawn)} types to {escape(str(out))}", soft_wrap=True
    )
    left_out = [kind.name for kind in task_types(settings.org) if kind.name not in drawn]
    if left_out:
        console.print(
            "Left out, as the org was imported and their answers are ones the generator "
            f"plants: {', '.join(left_out)}",
            soft_wrap=True,
        )


@tasks_cli.command("splits")
def tasks_splits() -> None:
    """List the fixed, versioned splits: each part's org, seeds, types, tasks and SHA-256."""
    table = Table("split", "org", "seeds", "types", "tasks", "sha256")
    for split in SPLITS:
        for part in PARTS:
            table.add_row(
                f"{split.id}:{part}",
                split.org,
                ",".join(str(seed) for seed in split.seeds(part)),
                str(len(split.types)),
                str(split.size(part)),
                split.sha256[part],
            )
    Console(width=200).print(table)


@tasks_cli.command("split")
def tasks_split(
    name: Annotated[str, typer.Argument(help="The split's part, e.g. crmarena-original@v1:test")],
    out: Annotated[Path, typer.Option("--out", help="The task file to write (JSON)")],
) -> None:
    """Write a split's part as a task file (CRMArena's layout), checked against its SHA-256."""
    try:
        rows = draw_part(name, Settings().seed_dir)
    except SalesforceError as error:
        console.print(
            f"[bold red]No split:[/] {escape(str(error))}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(code=1) from error
    write_task_file(rows, out)
    console.print(
        f"Wrote {len(rows)} tasks of {escape(name)} to {escape(str(out))}", soft_wrap=True
    )


@tasks_cli.command("grade")
def tasks_grade(
    tasks_file: Annotated[
        Path, typer.Option("--tasks", exists=True, dir_okay=False, help="The task file")
    ],
    results_file: Annotated[
        Path,
        typer.Option(
            "--results",
            exists=True,
            dir_okay=False,
            help='The responses: a JSON list of {"idx": N, "response": "..."}',
        ),
    ],
) -> None:
    """Score each response by its task's metric and print the mean score per task type."""
    try:
        judge = Judge.from_settings(Settings())
        grades = grade(_json_list(tasks_file), _json_list(results_file), judge)
    except SalesforceError as error:
        console.print(
            f"[bold red]Grading failed:[/] {escape(str(error))}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(code=1) from error
    table = Table("task", "metric", "tasks", "answered", "score")
    for row in grades.by_type:
        table.add_row(row.task, row.metric, str(row.tasks), str(row.answered), f"{row.score:.3f}")
    table.add_row("all", "", str(len(grades.scores)), "", f"{grades.overall:.3f}", style="bold")
    Console().print(table)


results_cli = typer.Typer(
    help="The results store: every episode's result, kept after its sandbox is deleted.",
    no_args_is_help=True,
)
cli.add_typer(results_cli, name="results")


class ExportFormat(StrEnum):
    jsonl = "jsonl"
    csv = "csv"


@results_cli.command("export")
def results_export(
    run: Annotated[str | None, typer.Option("--run", help="The run's name (default: all)")] = None,
    fmt: Annotated[ExportFormat, typer.Option("--format", help="jsonl or csv")] = (
        ExportFormat.jsonl
    ),
    out: Annotated[
        Path | None, typer.Option("--out", help="The file to write (default: standard output)")
    ] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Write one row per episode: run, task idx and type, org, seed, clock, agent label,
    answer, expected, reward, metric, steps, tool calls (the trajectory), API calls, diff and
    timings."""
    with _platform_connection(data_dir) as conn:
        text = export(result_rows(conn, run=run), fmt.value)
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")


@results_cli.command("purge")
def results_purge(
    run: Annotated[str, typer.Option("--run", help="The run whose results to delete")],
    data_dir: DataDirOption = None,
) -> None:
    """Delete a run's results, on purpose: nothing else ever does."""
    with _platform_connection(data_dir) as conn:
        count = purge(conn, run=run)
        conn.commit()
    console.print(f"Purged {count} results of run {run}")


@contextmanager
def _platform_connection(data_dir: Path | None) -> Iterator[Connection]:
    settings = _settings(data_dir)
    engine = create_db_engine(settings.platform_database_url)
    try:
        migrate_platform(engine)  # a data directory of an older version reads as this one
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def _json_list(path: Path) -> list[Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GradingFailed(f"{path} is not JSON: {error}") from error
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise GradingFailed(f"{path} must hold a JSON list of objects")
    return value


@cli.command("eval")
def eval_command(
    model: Annotated[str, typer.Option("--model", help="The model's name at its endpoint")],
    base_url: Annotated[
        str,
        typer.Option("--base-url", help="The model's OpenAI-compatible API, e.g. http://host/v1"),
    ],
    run: Annotated[
        str,
        typer.Option(
            "--run", help="The run's name: its file in --runs-dir, its label in the results"
        ),
    ],
    split_name: Annotated[
        str | None,
        typer.Option(
            "--split",
            help="The split's part to run, e.g. crmarena-original@v1:test (localforce tasks "
            "splits lists them)",
            show_default=False,
        ),
    ] = None,
    tasks_file: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            exists=True,
            dir_okay=False,
            help="A task file to run instead of a split",
            show_default=False,
        ),
    ] = None,
    api_key_env: Annotated[
        str, typer.Option("--api-key-env", help="The variable holding the model's API key")
    ] = "OPENAI_API_KEY",
    agent: Annotated[
        AgentStrategy, typer.Option("--agent", help="How the model acts: function-calling or react")
    ] = AgentStrategy.function_calling,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, max=256)] = 1,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Run the first K tasks only")
    ] = None,
    types: Annotated[
        list[str] | None, typer.Option("--types", help="Run tasks of these types only")
    ] = None,
    per_type: Annotated[
        int | None,
        typer.Option("--per-type", min=1, help="Run the first K tasks of each type only"),
    ] = None,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, max=32, help="Run each task k times (pass^k)")
    ] = 1,
    resume: Annotated[
        bool, typer.Option("--resume", help="Go on with a run: skip its recorded episodes")
    ] = False,
    localforce_url: Annotated[
        str, typer.Option("--localforce-url", help="The localforce server")
    ] = "http://127.0.0.1:8000",
    runs_dir: Annotated[Path, typer.Option("--runs-dir", help="Where run files are kept")] = Path(
        "runs"
    ),
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds a model call may take")
    ] = 120.0,
    max_retries: Annotated[
        int, typer.Option("--max-retries", min=0, help="Retries of a failed model call")
    ] = 4,
    judge_model: Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            help="Also grade by an LLM judge (its reward recorded beside the rules')",
            show_default=False,
        ),
    ] = None,
    judge_base_url: Annotated[
        str | None,
        typer.Option("--judge-base-url", help="The judge's API (default --base-url)"),
    ] = None,
    judge_api_key_env: Annotated[
        str | None,
        typer.Option(
            "--judge-api-key-env", help="The judge's key variable (default --api-key-env)"
        ),
    ] = None,
    user_model: Annotated[
        str | None,
        typer.Option(
            "--user-model",
            help="Interactive mode: a simulated user, this model, talks with the agent",
            show_default=False,
        ),
    ] = None,
    user_base_url: Annotated[
        str | None,
        typer.Option("--user-base-url", help="The simulated user's API (default --base-url)"),
    ] = None,
    user_api_key_env: Annotated[
        str | None,
        typer.Option("--user-api-key-env", help="The user's key variable (default --api-key-env)"),
    ] = None,
    data_dir: DataDirOption = None,
) -> None:
    """Run a model over a split or a task file: each task an episode in its own sandbox, the
    model acting through the episode's tools, its answer graded and recorded in the run."""
    if (split_name is None) == (tasks_file is None):
        console.print("[bold red]Evaluation stopped:[/] name the tasks: --split or --tasks")
        raise typer.Exit(code=2)
    settings = _settings(data_dir)
    admin_key = os.environ.get("LOCALFORCE_ADMIN_KEY")
    if admin_key is None and key_path(settings.data_dir).exists():
        admin_key = key_path(settings.data_dir).read_text(encoding="utf-8").strip()

    def endpoint(name: str, url: str | None, key_env: str | None) -> ModelEndpoint:
        return ModelEndpoint(
            name=name,
            base_url=url or base_url,
            # A local server may ask for no key.
            api_key=os.environ.get(key_env or api_key_env, "none"),
            timeout=timeout,
            max_retries=max_retries,
        )

    judge = (
        None if judge_model is None else endpoint(judge_model, judge_base_url, judge_api_key_env)
    )
    user = None if user_model is None else endpoint(user_model, user_base_url, user_api_key_env)
    run_file = RunFile.of_run(runs_dir, run)
    org, seed = None, None  # a task file's tasks are on the server's org and seed
    try:
        if tasks_file is not None:
            tasks = load_tasks(tasks_file, types=types or (), limit=limit, per_type=per_type)
        else:
            assert split_name is not None
            rows = [row.to_json() for row in draw_part(split_name, Settings().seed_dir)]
            tasks = select_tasks(
                rows, split_name, types=types or (), limit=limit, per_type=per_type
            )
            split = split_named(split_name)[0]
            org, seed = split.org, split.seed
        plan = Plan(
            run=run,
            tasks=tasks,
            repeat=repeat,
            concurrency=concurrency,
            agent=agent.value,
            org=org,
            seed=seed,
        )
        with _eval_progress(len(plan.episodes()) - len(run_file.recorded_keys())) as on_record:
            records = evaluate(
                plan,
                endpoint(model, None, None),
                localforce_url,
                admin_key,
                run_file,
                resume=resume,
                on_record=on_record,
                judge=judge,
                user=user,
            )
    except (EvalRefused, ControlError, SalesforceError) as error:
        console.print(
            f"[bold red]Evaluation stopped:[/] {escape(str(error))}",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(code=1) from error
    table = Table("task", "episodes", "failed", "mean reward")
    for row in grouped(records, lambda record: str(record["task"])):
        table.add_row(row.name, str(row.episodes), str(row.failed), f"{row.mean_reward:.3f}")
    Console().print(table)
    console.print(f"Run {run}: {len(records)} episodes in {escape(str(run_file.path))}")


@cli.command("report")
def report_command(
    runs: Annotated[list[str], typer.Argument(help="The runs to show side by side")],
    runs_dir: Annotated[Path, typer.Option("--runs-dir", help="Where run files are kept")] = Path(
        "runs"
    ),
    out: Annotated[
        Path, typer.Option("--out", help="The directory to write report.md and report.html in")
    ] = Path("report"),
) -> None:
    """Report runs side by side: mean reward with its confidence interval per task type and
    per skill, pass^k, failures and cost, as Markdown and as an HTML page with charts."""
    try:
        written = write_report(read_runs(runs_dir, runs), out)
    except ReportRefused as error:
        console.print(f"[bold red]No report:[/] {escape(str(error))}", highlight=False)
        raise typer.Exit(code=1) from error
    console.print(f"Wrote {' and '.join(escape(str(path)) for path in written)}", soft_wrap=True)


@contextmanager
def _eval_progress(total: int) -> Iterator[Callable[[dict[str, Any]], None]]:
    """A progress bar of a run's episodes, with the mean reward so far."""
    rewards: list[float] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task("Episodes", total=max(total, 0))

        def on_record(record: dict[str, Any]) -> None:
            rewards.append(float(record["reward"] or 0))
            mean = sum(rewards) / len(rewards)
            progress.update(bar, advance=1, description=f"Episodes, mean reward {mean:.3f}")

        yield on_record


def _fail(error: Exception) -> NoReturn:
    console.print(f"[bold red]Import failed:[/] {escape(str(error))}", highlight=False)
    console.print("The org's data was not changed.")
    raise typer.Exit(code=1)


def main() -> None:
    cli()
