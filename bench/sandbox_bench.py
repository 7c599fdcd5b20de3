"""Sandbox lifecycle cost at CRMArena scale and at ten times that scale (SQLite): create,
reset after 10 and after 100 writes, delete; beside the floor to beat, a plain full reload
(copying the seeded template, and re-seeding it).

Run: `make bench` (or `python -m bench.sandbox_bench [--repeat N] [--scales 1,10]`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.api.state import AppState
from app.sandbox.copies import SqliteCopies
from app.seeding.pipeline import build_rows
from app.storage.database import create_db_engine, migrate_platform, recreate_data_tables
from app.storage.ids import make_id
from app.storage.records import insert_rows, set_sequences
from bench.server import HttpClient, running_org

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
    """Write the (scaled) org where the sandbox manager looks for its template."""
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
        copies = SqliteCopies(Path(workdir).resolve() / "sandboxes")
        template = copies.template_url(f"{state.settings.org}_{state.settings.seed}")
        seed_ms, records = _timed(lambda: build_template(state, template, factor))
        client = HttpClient(org.base_url)
        copy_ms = [_timed(lambda: copies.drop(copies.clone(template)))[0] for _ in range(repeat)]

        create: list[float] = []
        reset10: list[float] = []
        reset100: list[float] = []
        delete: list[float] = []
        for _ in range(repeat):
            time.sleep(0.3 * factor)  # let the warm pool refill, as between real episodes
            ms, sandbox = _timed(lambda: client.request("POST", "/__localforce/sandboxes"))
            create.append(ms)
            for count, samples in ((10, reset10), (100, reset100)):
                _writes(client, sandbox["access_token"], count)
                result = client.request("POST", f"/__localforce/sandboxes/{sandbox['id']}/reset")
                assert result["undoneWrites"] >= count, result
                samples.append(float(result["durationMs"]))
            path = f"/__localforce/sandboxes/{sandbox['id']}"
            delete.append(_timed(lambda: client.delete(path))[0])  # noqa: B023 - called at once
        print(f"\nscale x{factor}: {records:,} records")  # noqa: T201
        print(f"  floor: full reload by re-seeding   {seed_ms:8.2f} ms (once)")  # noqa: T201
        print(f"  floor: full reload by file copy    {_median_ms(copy_ms)} ms")  # noqa: T201
        print(f"  create (HTTP, warm pool)           {_median_ms(create)} ms")  # noqa: T201
        print(f"  reset after 10 writes (server)     {_median_ms(reset10)} ms")  # noqa: T201
        print(f"  reset after 100 writes (server)    {_median_ms(reset100)} ms")  # noqa: T201
        print(f"  delete (HTTP)                      {_median_ms(delete)} ms")  # noqa: T201
        ratio = statistics.median(copy_ms) / statistics.median(reset100)
        print(f"  reset after 100 writes is {ratio:.0f}x cheaper than a file-copy reload")  # noqa: T201


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--scales", default="1,10")
    args = parser.parse_args()
    for factor in (int(part) for part in args.scales.split(",")):
        bench_scale(factor, args.repeat)


if __name__ == "__main__":
    main()
