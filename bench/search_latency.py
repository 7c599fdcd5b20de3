"""Search latency: the CRMArena search tools' SOSL over HTTP against a running server, beside the
same index queries executed directly on the same database. Prints the median of each and the
ratio, and the HTTP floor (an authenticated request that touches no data) measured in the same
run.

Run: `make bench` (or `python -m bench.search_latency [--repeat N]`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import Select

from app.services.search import prepare
from app.soql.date_literals import UTC_EPOCH_CALENDAR
from bench.server import HttpClient, median_ms, report_http_floor, running_org

# crmarena.md 6.2: the two search tools, with the kind of terms agents send them.
KNOWLEDGE_TOOL = (
    "FIND {{{term}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
    "WHERE PublishStatus='Online' AND Language='en_US')"
)
PRODUCT_TOOL = "FIND {{{term}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"
SEARCHES = {
    "knowledge: return policy": KNOWLEDGE_TOOL.format(term="return policy"),
    "knowledge: track order": KNOWLEDGE_TOOL.format(term="track order"),
    "knowledge: loyalty rewards": KNOWLEDGE_TOOL.format(term="loyalty rewards"),
    "knowledge: shipping": KNOWLEDGE_TOOL.format(term="shipping"),
    "products: racing suit": PRODUCT_TOOL.format(term="racing suit"),
    "products: football cleats": PRODUCT_TOOL.format(term="football cleats"),
    "products: rope": PRODUCT_TOOL.format(term="rope"),
    "products: Yoga": PRODUCT_TOOL.format(term="Yoga"),
    "products: wildcard runn*": PRODUCT_TOOL.format(term="runn*"),
    "all objects: cycling": "FIND {cycling}",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir)) as org:
        state = org.state
        client = HttpClient(org.base_url)
        report_http_floor(client, args.repeat)
        ratios = []
        print(f"{'search':32} {'rows':>6} {'http ms':>9} {'index ms':>9} {'ratio':>7}")
        for name, sosl in SEARCHES.items():

            def over_http(sosl: str = sosl) -> object:
                return client.get("/services/data/v59.0/search?" + urlencode({"q": sosl}))

            dialect = state.engine.dialect.name
            calendar, functions = UTC_EPOCH_CALENDAR, state.functions
            compiled = prepare(state.registry, state.tables, dialect, sosl, calendar, functions)
            statements = [
                target.compiled.statement.limit(target.target.limit)
                for target in compiled.targets
                if target.compiled is not None
            ]

            def direct(statements: list[Select[Any]] = statements) -> object:
                with state.engine.connect() as conn:
                    return [conn.execute(statement).all() for statement in statements]

            rows = len(over_http()["searchRecords"])  # type: ignore[index]
            http_ms = median_ms(over_http, args.repeat)
            index_ms = median_ms(direct, args.repeat)
            ratios.append(http_ms / index_ms)
            line = (
                f"{name:32} {rows:>6} {http_ms:>9.2f} {index_ms:>9.2f} {http_ms / index_ms:>7.2f}"
            )
            print(line)
        print(f"median ratio (HTTP / direct index query): {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
