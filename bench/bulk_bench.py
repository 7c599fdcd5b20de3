"""What the Bulk API 2.0 costs against the REST API doing the same work over a keep-alive
connection (the floor): inserting records (Bulk: one ingest job; REST: sObject Collections of
200), and reading a large result (Bulk: one query job, its CSV in pages of 10,000; REST: a
query and its nextRecordsUrl batches). Each figure is the median wall time of whole runs, and
its ratio to the floor.

Run: `python -m bench.bulk_bench [--records N] [--repeat N]`.
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

from bench.server import API, HttpClient, query_all, running_org

EXPORT_QUERY = "SELECT Id, Product2Id, UnitPrice FROM PricebookEntry"


def json_call(client: HttpClient, method: str, path: str, body: object | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {**client.headers, "Content-Type": "application/json"}
    return client.request(method, path, data, headers)


def rest_insert(client: HttpClient, records: int, tag: str) -> None:
    for start in range(0, records, 200):
        batch = [
            {"attributes": {"type": "Contact"}, "LastName": f"{tag} {i}"}
            for i in range(start, min(start + 200, records))
        ]
        json_call(client, "POST", f"{API}/composite/sobjects", {"records": batch})


def _wait(client: HttpClient, path: str) -> None:
    while json_call(client, "GET", path)["state"] not in ("JobComplete", "Failed", "Aborted"):
        time.sleep(0.005)


def bulk_insert(client: HttpClient, records: int, tag: str) -> None:
    job = json_call(
        client, "POST", f"{API}/jobs/ingest", {"object": "Contact", "operation": "insert"}
    )
    data = "LastName\n" + "".join(f"{tag} {i}\n" for i in range(records))
    path = f"{API}/jobs/ingest/{job['id']}"
    csv_headers = {**client.headers, "Content-Type": "text/csv"}
    client.send("PUT", f"{path}/batches", data.encode(), csv_headers)
    json_call(client, "PATCH", path, {"state": "UploadComplete"})
    _wait(client, path)


def bulk_export(client: HttpClient) -> None:
    job = json_call(
        client, "POST", f"{API}/jobs/query", {"operation": "query", "query": EXPORT_QUERY}
    )
    path = f"{API}/jobs/query/{job['id']}"
    _wait(client, path)
    locator = ""
    while locator != "null":
        suffix = f"&locator={locator}" if locator else ""
        headers, _ = client.send(
            "GET", f"{path}/results?maxRecords=10000{suffix}", None, client.headers
        )
        locator = headers.get("sforce-locator", headers.get("Sforce-Locator", "null"))


def median_ms(run: Callable[[int], object], repeat: int) -> float:
    samples = []
    for round_ in range(repeat):
        started = time.perf_counter()
        run(round_)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir) / "data") as org:
        client = HttpClient(org.base_url)
        n, repeat = args.records, args.repeat
        figures = {
            "insert over REST collections": median_ms(
                lambda r: rest_insert(client, n, f"R{r}"), repeat
            ),
            "insert by a Bulk 2.0 job": median_ms(
                lambda r: bulk_insert(client, n, f"B{r}"), repeat
            ),
            "export over REST query": median_ms(lambda r: query_all(client, EXPORT_QUERY), repeat),
            "export by a Bulk 2.0 job": median_ms(lambda r: bulk_export(client), repeat),
        }
    print(f"{n} records inserted, {EXPORT_QUERY!r} exported; medians of {repeat} runs:")
    for name, ms in figures.items():
        floor = figures[
            "insert over REST collections" if "insert" in name else "export over REST query"
        ]
        print(f"  {name:30} {ms:9.1f} ms  {ms / floor:5.2f}x the REST floor")


if __name__ == "__main__":
    main()
