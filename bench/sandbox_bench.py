"""Sandbox lifecycle cost at CRMArena scale and at ten times that scale (SQLite): create, the
first write to an object (which copies its table into the copy-on-write sandbox), reset after 10
and after 100 writes, delete; beside the floor to beat, a plain full reload (copying the seeded
template's file, and re-seeding it). Then many live sandboxes at once (1,000 on SQLite and
10,000 on PostgreSQL by default): create median (and of the first and last 100), disk per idle
sandbox, open files, and the database connections they hold.

Run: `make bench` (or `python -m bench.sandbox_bench [--repeat N] [--scales 1,10] [--live N]
[--live-postgres N]`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import make_url, text

from app.api.state import AppState
from app.sandbox.clock import utc_now
from app.sandbox.registry import register_template
from app.sandbox.templates import TemplateSpec
from app.seeding.pipeline import build_rows
from app.storage.backends import backend_for_url
from app.storage.database import (
    create_db_engine,
    migrate_platform,
    platform_transaction,
    recreate_data_tables,
)
from app.storage.ids import make_id
from app.storage.records import insert_rows, set_sequences
from bench.server import HttpClient, bench_database, running_org
from tests.conftest import ADMIN_HEADERS

API = "/services/data/v59.0"


def _scaled_rows(state: AppState, factor: int) -> dict[str, list[dict[str, Any]]]:
    """The seeded org, each object's rows repeated `factor` times under new ids."""
    rows = build_rows(state.registry, state.settings.org, state.settings.seed)
    if factor == 1:
        return rows
    scaled: dict[str, list[dict[str, Any]]] = {}
    for sobject in state.registry:
        batch = rows[sobject.name]
        copies = []
        for copy in range(factor):
            for number, row in enumerate(batch, start=1):
                copies.append(
                    {**row, "Id": make_id(sobject.key_prefix, copy * len(batch) + number)}
                )
        scaled[sobject.name] = copies
    return scaled


def build_template(state: AppState, url: str, factor: int) -> int:
    """Write the (scaled) org where app.sandbox.templates looks for its template."""
    rows = _scaled_rows(state, factor)
    engine = create_db_engine(url)
    migrate_platform(engine)
    recreate_data_tables(engine, state.tables)
    with engine.begin() as conn:
        for name, batch in rows.items():
            for start in range(0, len(batch), 5000):
                insert_rows(conn, state.tables[name], batch[start : start + 5000])
        set_sequences(conn, {name: len(batch) for name, batch in rows.items()})
    engine.dispose()
    backend_for_url(url).settle_template(url)
    return sum(len(batch) for batch in rows.values())


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples):8.2f}"


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return (time.perf_counter() - started) * 1000, result


def _writes(client: HttpClient, token: str, count: int) -> None:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for index in range(count):
        body = json.dumps({"Name": f"Bench issue {index}"}).encode()
        client.request("POST", f"{API}/sobjects/Issue__c", body, headers)


def bench_scale(factor: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir)) as org:
        state = org.state
        copies = state.sandboxes.copies
        spec = TemplateSpec(org=state.settings.org, seed=state.settings.seed)
        template = copies.template_url(spec.key)
        template_db = copies.database_url(template)
        copies.create_empty(template)  # its directory, on SQLite
        seed_ms, records = _timed(lambda: build_template(state, template_db, factor))
        with platform_transaction(state.platform) as conn:
            register_template(conn, template, utc_now())  # the scaled build is the template
        client = HttpClient(org.base_url)
        copy_ms = [_timed(lambda: _full_copy(template_db))[0] for _ in range(repeat)]

        create: list[float] = []
        # The first write to an object copies its table into the sandbox (search index too).
        first_write: dict[str, list[float]] = {"Issue__c": [], "Case": [], "EmailMessage": []}
        reset10: list[float] = []
        reset100: list[float] = []
        delete: list[float] = []
        for _ in range(repeat):
            time.sleep(0.3)  # let the warm pool refill, as between real episodes
            ms, sandbox = _timed(
                lambda: client.request("POST", "/__localforce/sandboxes", headers=ADMIN_HEADERS)
            )
            create.append(ms)
            headers = {
                "Authorization": f"Bearer {sandbox['access_token']}",
                "Content-Type": "application/json",
            }
            for sobject, samples in first_write.items():
                body = json.dumps(
                    {"Name" if sobject == "Issue__c" else "Subject": "Bench"}
                ).encode()
                path = f"{API}/sobjects/{sobject}"
                samples.append(_timed(lambda: client.request("POST", path, body, headers))[0])  # noqa: B023
            # Three resets after 100 writes per sandbox: a median over more samples.
            for count, samples in (
                (10, reset10),
                (100, reset100),
                (100, reset100),
                (100, reset100),
            ):
                _writes(client, sandbox["access_token"], count)
                reset = f"/__localforce/sandboxes/{sandbox['id']}/reset"
                result = client.request("POST", reset, headers=ADMIN_HEADERS)
                assert result["undoneWrites"] >= count, result
                samples.append(float(result["durationMs"]))
            path = f"/__localforce/sandboxes/{sandbox['id']}"
            delete.append(_timed(lambda: client.delete(path, ADMIN_HEADERS))[0])  # noqa: B023 - called at once
        print(f"\nscale x{factor}: {records:,} records")
        print(f"  floor: full reload by re-seeding   {seed_ms:8.2f} ms (once)")
        print(f"  floor: full reload by file copy    {_median_ms(copy_ms)} ms")
        print(f"  create (HTTP, warm pool)           {_median_ms(create)} ms")
        for sobject, samples in first_write.items():
            print(f"  first write to {sobject:<18}{_median_ms(samples)} ms (copies its table)")
        print(f"  reset after 10 writes (server)     {_median_ms(reset10)} ms")
        print(f"  reset after 100 writes (server)    {_median_ms(reset100)} ms")
        print(f"  delete (HTTP)                      {_median_ms(delete)} ms")
        ratio = statistics.median(copy_ms) / statistics.median(reset100)
        print(f"  reset after 100 writes is {ratio:.0f}x cheaper than a file-copy reload")


def _full_copy(template: str) -> None:
    """The floor: a plain copy of the template's file, as a sandbox without copy-on-write made."""
    source = Path(make_url(template).database or "")
    target = source.with_suffix(".floor")
    shutil.copyfile(source, target)
    target.unlink()


def _disk_bytes(state: AppState, urls: list[str]) -> int:
    copies = state.sandboxes.copies
    if state.engine.dialect.name == "sqlite":
        files = [make_url(copies.database_url(url)).database for url in urls]
        return sum(
            Path(f"{file}{suffix}").stat().st_size
            for file in files
            for suffix in ("", "-wal")
            if Path(f"{file}{suffix}").exists()
        )
    query = text(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = :s AND c.relkind = 'r'"
    )
    with state.engine.connect() as conn:
        return sum(
            int(conn.execute(query, {"s": copies.storage_of(url)}).scalar_one()) for url in urls
        )


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


def _connections(state: AppState) -> int | None:
    """Connections to the server's database (every sandbox's schema is in it)."""
    if state.engine.dialect.name != "postgresql":
        return None
    with state.engine.connect() as conn:
        query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
        return int(conn.execute(text(query)).scalar_one())


def bench_live(backend: str, count: int) -> None:
    """`count` sandboxes created one after another and left idle, each queried once."""
    with (
        tempfile.TemporaryDirectory() as workdir,
        bench_database(backend) as database_url,
        running_org(
            Path(workdir), database_url=database_url, max_sandboxes=count + 10, sandbox_pool_size=2
        ) as org,
    ):
        client = HttpClient(org.base_url)
        # The first sandbox builds the template.
        client.request("POST", "/__localforce/sandboxes", headers=ADMIN_HEADERS)
        time.sleep(2)
        create: list[float] = []
        urls: list[str] = []
        for _ in range(count):
            ms, made = _timed(
                lambda: client.request("POST", "/__localforce/sandboxes", headers=ADMIN_HEADERS)
            )
            create.append(ms)
            sf = {"Authorization": f"Bearer {made['access_token']}"}
            client.request("GET", f"{API}/query?q=SELECT+Id+FROM+Account+LIMIT+1", None, sf)
            urls.append(org.state.sandboxes.get(made["id"]).url)
        disk = _disk_bytes(org.state, urls) / len(urls) / 1e6
        connections = _connections(org.state)
        live = len(org.state.sandboxes.all())
        print(f"\n{backend}: {count} sandboxes created, {live} live")
        print(f"  create (HTTP) median               {_median_ms(create)} ms")
        print(f"  create, the first 100               {_median_ms(create[:100])} ms")
        print(f"  create, the last 100                {_median_ms(create[-100:])} ms")
        print(f"  disk per idle sandbox               {disk:8.2f} MB")
        print(f"  open files in the server process    {_open_files():8d}")
        if connections is not None:
            print(f"  database connections, all idle      {connections:8d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scales", default="1,10")
    parser.add_argument("--live", type=int, default=1000, help="live SQLite sandboxes at once")
    parser.add_argument(
        "--live-postgres", type=int, default=10_000, help="live PostgreSQL sandboxes at once"
    )
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    for factor in (int(part) for part in args.scales.split(",")):
        bench_scale(factor, args.repeat)
    live = {"sqlite": args.live, "postgresql": args.live_postgres}
    for backend in args.backends.split(","):
        if live[backend] > 0:
            bench_live(backend, live[backend])


if __name__ == "__main__":
    main()
