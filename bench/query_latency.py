"""Query latency: each CRMArena tool query, and aggregate and child-subquery queries an analyst
agent sends, over HTTP against a running server, beside the same compiled SQL executed directly
on the same database (a subquery's SQL included). Prints the median of each and the ratio, and
the HTTP floor (an authenticated request that touches no data) measured in the same run; then
the same query over HTTP in a copy-on-write sandbox of the same org, first reading through to
its template, then with every table copied into it (the sandbox / full-org ratios).

Run: `make bench` (or `python -m bench.query_latency [--repeat N]`).
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
from app.soql.execute import ResultRows, execute
from app.storage.database import write_transaction
from app.storage.overlay import ensure_local
from bench.server import HttpClient, median_ms, paired_medians, report_http_floor, running_org
from tests.crmarena import tool_queries

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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir)) as org:
        state = org.state
        rows = build_rows(state.registry, state.settings.org, state.settings.seed)
        queries = {**tool_queries(rows), **ANALYST_QUERIES}
        client = HttpClient(org.base_url)
        report_http_floor(client, args.repeat)
        http_ms: dict[str, float] = {}
        ratios = []
        print(f"{'query':40} {'rows':>6} {'http ms':>9} {'sql ms':>9} {'ratio':>7}")
        for name, soql in queries.items():
            compiled = prepare(state.registry, state.tables, soql, False)

            def direct(compiled: CompiledQuery = compiled) -> object:
                return run_direct(state.engine, compiled)

            total = over_http(client, soql)["totalSize"]
            http_ms[name] = median_ms(partial(over_http, client, soql), args.repeat)
            sql_ms = median_ms(direct, args.repeat)
            ratios.append(http_ms[name] / sql_ms)
            print(
                f"{name:40} {total:>6} {http_ms[name]:>9.2f} {sql_ms:>9.2f} "
                f"{http_ms[name] / sql_ms:>7.2f}"
            )
        print(f"median ratio (HTTP / direct SQL): {statistics.median(ratios):.2f}")
        bench_sandbox(client, org.state, queries, args.repeat)


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
        "POST", "/__localforce/sandboxes", b"{}", {"Content-Type": "application/json"}
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
