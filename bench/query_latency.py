"""Query latency: each CRMArena tool query over HTTP against a running server, beside the same
compiled SQL executed directly on the same database. Prints the median of each and the ratio,
and the HTTP floor (an authenticated request that touches no data) measured in the same run.

Run: `make bench` (or `python -m bench.query_latency [--repeat N]`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from app.seeding.pipeline import build_rows
from app.services.query import prepare
from bench.server import HttpClient, median_ms, report_http_floor, running_org
from tests.crmarena import tool_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir)) as org:
        state = org.state
        queries = tool_queries(build_rows(state.registry, state.settings.org, state.settings.seed))
        client = HttpClient(org.base_url)
        report_http_floor(client, args.repeat)
        ratios = []
        print(f"{'query':40} {'rows':>6} {'http ms':>9} {'sql ms':>9} {'ratio':>7}")  # noqa: T201
        for name, soql in queries.items():

            def over_http(soql: str = soql) -> object:
                return client.get("/services/data/v59.0/query?" + urlencode({"q": soql}))

            compiled = prepare(state.registry, state.tables, soql, False)

            def direct(statement: object = compiled.statement) -> object:
                with state.engine.connect() as conn:
                    return conn.execute(statement).all()  # type: ignore[call-overload]

            rows = over_http()["totalSize"]  # type: ignore[index]
            http_ms = median_ms(over_http, args.repeat)
            sql_ms = median_ms(direct, args.repeat)
            ratios.append(http_ms / sql_ms)
            print(f"{name:40} {rows:>6} {http_ms:>9.2f} {sql_ms:>9.2f} {http_ms / sql_ms:>7.2f}")  # noqa: T201
        print(f"median ratio (HTTP / direct SQL): {statistics.median(ratios):.2f}")  # noqa: T201


if __name__ == "__main__":
    main()
