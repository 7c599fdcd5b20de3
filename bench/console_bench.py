"""What the web console's pages cost, each against the REST calls that read the same data over
the same keep-alive connection (the floor): a page is the floor plus rendering. Each figure is
the median of alternated runs, with its ratio to the floor; the console's budget is 300 ms a
page on the original org.

Run: `python -m bench.console_bench [--repeat N]`.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlencode

from bench.server import API, HttpClient, paired_medians, running_org
from tests.conftest import ADMIN_HEADERS

BUDGET_MS = 300
LIST_QUERY = (
    "SELECT Id, CaseNumber, Subject, Status, Priority, Origin, CreatedDate FROM Case "
    "ORDER BY CreatedDate DESC, Id DESC LIMIT 25"
)
RUNNER_QUERY = "SELECT Id, Subject, Account.Name FROM Case"
SEARCH = "FIND {Miller} RETURNING Account, Contact, Case"


def page(client: HttpClient, path: str) -> Callable[[], object]:
    return lambda: client.send("GET", path, None, ADMIN_HEADERS)  # the console asks for the key


def calls(client: HttpClient, *paths: str) -> Callable[[], object]:
    def run() -> None:
        for path in paths:
            client.send("GET", path, None, client.headers)

    return run


def query(text: str) -> str:
    return f"{API}/query?" + urlencode({"q": text})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir) / "data") as org:
        api = HttpClient(org.base_url)
        browser = HttpClient(org.base_url, login=False)
        operator = HttpClient(org.base_url, login=False)
        operator.headers = dict(ADMIN_HEADERS)
        busiest = api.get(
            query(
                "SELECT AccountId, COUNT(Id) n FROM Case WHERE AccountId != null "
                "GROUP BY AccountId ORDER BY COUNT(Id) DESC LIMIT 1"
            )
        )["records"][0]["AccountId"]
        for number in range(20):  # a call log and a diff for the sandbox page
            api.request(
                "POST",
                f"{API}/sobjects/Contact",
                f'{{"LastName": "Bench {number}"}}'.encode(),
                {**api.headers, "Content-Type": "application/json"},
            )
        console = "/console/sandboxes/default"
        pairs = {
            "records (Case, page 1)": (
                page(browser, f"{console}/objects/Case"),
                calls(api, query(LIST_QUERY), query("SELECT COUNT() FROM Case")),
            ),
            "record (busiest Account)": (
                page(browser, f"{console}/objects/Account/{busiest}"),
                calls(
                    api,
                    f"{API}/sobjects/Account/{busiest}",
                    query(f"SELECT Id, CaseNumber FROM Case WHERE AccountId = '{busiest}'"),
                ),
            ),
            "query runner (977 rows)": (
                page(browser, f"{console}/query?q={quote(RUNNER_QUERY)}"),
                calls(api, query(RUNNER_QUERY)),
            ),
            "SOSL in the runner": (
                page(browser, f"{console}/query?q={quote(SEARCH)}"),
                calls(api, f"{API}/search?" + urlencode({"q": SEARCH})),
            ),
            "sandbox (log and diff)": (
                page(browser, console),
                calls(
                    operator,
                    "/__localforce/sandboxes/default/log",
                    "/__localforce/sandboxes/default/diff",
                ),
            ),
        }
        figures = {
            name: paired_medians(shown, floor, args.repeat)
            for name, (shown, floor) in pairs.items()
        }
    print(f"console pages vs the REST calls reading the same data; medians of {args.repeat}:")
    for name, (shown, floor) in figures.items():
        verdict = "within" if shown <= BUDGET_MS else "OVER"
        print(
            f"  {name:26} {shown:7.1f} ms  floor {floor:6.1f} ms  {shown / floor:5.2f}x  "
            f"({verdict} the {BUDGET_MS} ms budget)"
        )


if __name__ == "__main__":
    main()
