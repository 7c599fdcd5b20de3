"""Query latency: each CRMArena tool query, the aggregate and child-subquery queries an analyst
agent sends, and a 22,000-row scan, over HTTP against localforce and against the floor
(`bench.floor`: a bare app answering the same compiled SQL from the same database in the same
2,000-record pages), each followed to its last page as a client's `query_all` does, timed in
alternation in one run: the localforce / floor ratios, on SQLite and then on PostgreSQL (a
database of its own on the local server, dropped at the end; skipped when none is reachable).

On SQLite, then: the same queries beside their compiled SQL executed directly on the same
database (a subquery's SQL included), with the HTTP floor of an authenticated request that
touches no data; and the same queries in a copy-on-write sandbox of the same org, first reading
through to its template, then with every table copied into it (the sandbox / full-org ratios).

Run: `make bench` (or `python -m bench.query_latency [--repeat N] [--backend B] [--floor-only]`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Engine, Select

from app.api.state import AppState
from app.seeding.pipeline import build_rows
from app.services.query import prepare
from app.soql.compiler import USER_PARAM, CompiledQuery
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from app.soql.execute import ResultRows, execute
from app.storage.database import write_transaction
from app.storage.overlay import ensure_local
from bench.floor import floor_in_thread
from bench.server import (
    HttpClient,
    median_ms,
    paired_medians,
    query_all,
    report_http_floor,
    running_org,
)
from tests.conftest import ADMIN_HEADERS
from tests.crmarena import tool_queries
from tests.databases import DatabaseFactory, postgres_available

# Beyond the tool queries: the aggregates and subqueries of analyst and free-form agents.
ANALYST_QUERIES = {
    "aggregate: cases by status and priority": (
        "SELECT Status, Priority, COUNT(Id) n FROM Case GROUP BY Status, Priority "
        "ORDER BY COUNT(Id) DESC"
    ),
    "aggregate: monthly case trend": (
        "SELECT CALENDAR_YEAR(CreatedDate) y, CALENDAR_MONTH(CreatedDate) m, COUNT(Id) n "
        "FROM Case GROUP BY CALENDAR_YEAR(CreatedDate), CALENDAR_MONTH(CreatedDate)"
    ),
    "aggregate: top accounts by order total": (
        "SELECT Order.AccountId, SUM(TotalPrice) total FROM OrderItem GROUP BY Order.AccountId "
        "ORDER BY SUM(TotalPrice) DESC LIMIT 10"
    ),
    "aggregate: rollup of priority and status": (
        "SELECT Priority, Status, COUNT(Id) n, GROUPING(Status) g FROM Case "
        "GROUP BY ROLLUP(Priority, Status)"
    ),
    "subquery: accounts with latest cases": (
        "SELECT Name, (SELECT Subject, Status FROM Cases ORDER BY CreatedDate DESC LIMIT 5) "
        "FROM Account LIMIT 100"
    ),
    "subquery: orders with their items": (
        "SELECT Id, Status, (SELECT Quantity, UnitPrice, Product2.Name FROM OrderItems) "
        "FROM Order LIMIT 200"
    ),
}


# The widest read of the org: every price book entry, eleven pages.
SCAN_NAME = "scan: PricebookEntry, 22,000 rows"
SCAN = "SELECT Id, Name, UnitPrice FROM PricebookEntry"


def run_direct(engine: Engine, compiled: CompiledQuery) -> ResultRows:
    """The query's SQL without the server: its statement, then its child subqueries' for the
    rows it returned (the server's own execute step)."""
    with engine.connect() as conn:

        def fetch(statement: Select[Any], params: dict[str, Any]) -> Sequence[Sequence[Any]]:
            return conn.execute(statement, {USER_PARAM: "", **params}).all()

        return execute(compiled, conn.execute(compiled.statement, {USER_PARAM: ""}).all(), fetch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument(
        "--floor-only", action="store_true", help="only the localforce / floor comparison"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        if args.backend in ("sqlite", "both"):
            with running_org(Path(workdir) / "sqlite") as org:
                client = HttpClient(org.base_url)
                queries = bench_queries(org.state)
                with floor_in_thread(org.state.settings) as floor_url:
                    floor = HttpClient(floor_url, login=False)
                    compare_with_floor("SQLite", client, floor, queries, args.repeat)
                if not args.floor_only:
                    del queries[SCAN_NAME]
                    bench_direct(client, org.state, queries, args.repeat)
                    bench_sandbox(client, org.state, queries, args.repeat)
        if args.backend in ("postgres", "both"):
            bench_postgres(Path(workdir), args.repeat)


def bench_queries(state: AppState) -> dict[str, str]:
    rows = build_rows(state.registry, state.settings.org, state.settings.seed)
    return {**tool_queries(rows), **ANALYST_QUERIES, SCAN_NAME: SCAN}


def bench_postgres(workdir: Path, repeat: int) -> None:
    """The floor comparison on a PostgreSQL database of this run's own, dropped after."""
    if not postgres_available():
        print("\nPostgreSQL: no server reachable (LOCALFORCE_TEST_DATABASE_URL); skipped")
        return
    factory = DatabaseFactory("postgres", workdir)
    try:
        url = factory.new_url()
        with running_org(workdir / "postgres", database_url=url) as org:
            client = HttpClient(org.base_url)
            with floor_in_thread(org.state.settings) as floor_url:
                floor = HttpClient(floor_url, login=False)
                compare_with_floor("PostgreSQL", client, floor, bench_queries(org.state), repeat)
            org.state.engine.dispose()
    finally:
        factory.drop_all()


def compare_with_floor(
    backend: str,
    client: HttpClient,
    floor: HttpClient,
    queries: dict[str, str],
    repeat: int,
) -> None:
    """Each query read to its last page from localforce and from the floor, in alternation;
    the median of each and their ratio."""
    print(f"\n{backend}: localforce vs the floor (same SQL, same pages, same database)")
    print(f"{'query':40} {'rows':>6} {'lf ms':>9} {'floor ms':>9} {'ratio':>7}")
    ratios: dict[str, float] = {}
    for name, soql in queries.items():
        rows = query_all(client, soql)
        if query_all(floor, soql) != rows:
            raise RuntimeError(f"{name}: the floor read other rows than localforce")
        times = max(5, repeat // 5) if rows > 2000 else repeat  # the scan: eleven pages a run
        lf_ms, floor_ms = paired_medians(
            partial(query_all, client, soql), partial(query_all, floor, soql), times
        )
        ratios[name] = lf_ms / floor_ms
        print(f"{name:40} {rows:>6} {lf_ms:>9.2f} {floor_ms:>9.2f} {ratios[name]:>7.2f}")
    tools = [ratio for name, ratio in ratios.items() if name not in ANALYST_QUERIES]
    tools = tools[:-1] if SCAN_NAME in ratios else tools
    print(
        f"{backend}: tool queries, ratio localforce / floor: median {statistics.median(tools):.2f},"
        f" worst {max(tools):.2f}"
        + (f"; the 22,000-row scan {ratios[SCAN_NAME]:.2f}" if SCAN_NAME in ratios else "")
    )


def bench_direct(client: HttpClient, state: AppState, queries: dict[str, str], repeat: int) -> None:
    """Each query over HTTP beside its compiled SQL run directly on the same database."""
    print()
    report_http_floor(client, repeat)
    http_ms: dict[str, float] = {}
    ratios = []
    print(f"{'query':40} {'rows':>6} {'http ms':>9} {'sql ms':>9} {'ratio':>7}")
    for name, soql in queries.items():
        compiled = prepare(
            state.registry, state.tables, soql, False, UTC_EPOCH_CALENDAR, state.functions
        )

        def direct(compiled: CompiledQuery = compiled) -> object:
            return run_direct(state.engine, compiled)

        total = over_http(client, soql)["totalSize"]
        http_ms[name] = median_ms(partial(over_http, client, soql), repeat)
        sql_ms = median_ms(direct, repeat)
        ratios.append(http_ms[name] / sql_ms)
        print(
            f"{name:40} {total:>6} {http_ms[name]:>9.2f} {sql_ms:>9.2f} "
            f"{http_ms[name] / sql_ms:>7.2f}"
        )
    print(f"median ratio (HTTP / direct SQL): {statistics.median(ratios):.2f}")


def over_http(client: HttpClient, soql: str, token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else client.headers
    path = "/services/data/v59.0/query?" + urlencode({"q": soql})
    return client.request("GET", path, headers=headers)


def bench_sandbox(
    client: HttpClient,
    state: AppState,
    queries: dict[str, str],
    repeat: int,
) -> None:
    """The queries in a copy-on-write sandbox, reading the template and then with all tables
    copied, each timed in alternation with the same query on the full org."""
    made = client.request(
        "POST",
        "/__localforce/sandboxes",
        b"{}",
        {"Content-Type": "application/json", **ADMIN_HEADERS},
    )
    token = made["access_token"]
    sandbox = state.sandboxes.get(made["id"])
    ratios: dict[str, dict[str, float]] = {"template": {}, "copied": {}}
    times: dict[str, dict[str, float]] = {"template": {}, "copied": {}}
    for phase in ratios:
        if phase == "copied":
            with write_transaction(sandbox.engine) as conn:
                for _, table in sandbox.schema.tables.items():
                    ensure_local(conn, table)
        for name, soql in queries.items():
            full, in_sandbox = paired_medians(
                partial(over_http, client, soql), partial(over_http, client, soql, token), repeat
            )
            times[phase][name], ratios[phase][name] = in_sandbox, in_sandbox / full
    print(
        f"\n{'in a sandbox':40} {'reads template':>15} {'ratio':>6} {'all copied':>11} {'ratio':>6}"
    )
    for name in queries:
        print(
            f"{name:40} {times['template'][name]:>12.2f} ms {ratios['template'][name]:>6.2f} "
            f"{times['copied'][name]:>8.2f} ms {ratios['copied'][name]:>6.2f}"
        )
    for phase, by_query in ratios.items():
        median = statistics.median(by_query.values())
        print(f"median ratio (sandbox, {phase} / full org): {median:.2f}")


if __name__ == "__main__":
    main()
