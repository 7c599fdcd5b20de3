"""What a sandbox's own schema costs: a custom field created through the Metadata API
(createMetadata, one field a call), and a SOQL query in a sandbox whose schema it changed
against the same query in a sandbox of the same template that changed nothing but wrote one
Account (the floor: both then read their own copy of Account's table), timed in alternation
in one run. Medians in milliseconds, and the query's ratio to the floor.

The server is `localforce serve` in a process of its own (one worker), on each back end asked.

Run: `python -m bench.schema_bench [--fields N] [--repeat N] [--backends sqlite,postgresql]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from bench.server import API, bench_database, seeded_data_dir
from tests.conftest import ADMIN_HEADERS
from tests.processes import Deployment

CONTROL = "/__localforce/sandboxes"
METADATA = "/services/Soap/m/59.0"
M = "http://soap.sforce.com/2006/04/metadata"
QUERY = "SELECT Id, Name, Industry FROM Account ORDER BY Name LIMIT 20"


def create_field_body(token: str, name: str) -> str:
    field = (
        f'<metadata xsi:type="CustomField"><fullName>Account.{name}__c</fullName>'
        f"<label>{name}</label><type>Text</type><length>40</length></metadata>"
    )
    return (
        '<env:Envelope xmlns:env="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><env:Header>'
        f'<SessionHeader xmlns="{M}"><sessionId>{token}</sessionId></SessionHeader>'
        f'</env:Header><env:Body><createMetadata xmlns="{M}">{field}</createMetadata>'
        "</env:Body></env:Envelope>"
    )


def timed_ms(call: Callable[[], None]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def run(backend: str, fields: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as workdir, bench_database(backend) as url:
        deployment = Deployment(seeded_data_dir(Path(workdir), url), url)
        server = deployment.start()
        try:
            with httpx.Client(base_url=server.base, timeout=120) as http:
                tokens = {}
                for name in ("changed", "floor"):
                    made = http.post(CONTROL, json={"id": name}, headers=ADMIN_HEADERS)
                    made.raise_for_status()
                    tokens[name] = made.json()["access_token"]
                # Both sandboxes hold their own copy of Account (a field's creation copies it
                # into the changed one; one record created copies it into the floor's), so the
                # query differs by the schema alone.
                floor_auth = {"Authorization": f"Bearer {tokens['floor']}"}
                made = http.post(
                    f"{API}/sobjects/Account", json={"Name": "Bench"}, headers=floor_auth
                )
                made.raise_for_status()
                created = []
                for n in range(fields):
                    body = create_field_body(tokens["changed"], f"Bench_{n}")

                    def create(body: str = body) -> None:
                        answer = http.post(
                            METADATA, content=body, headers={"Content-Type": "text/xml"}
                        )
                        assert (
                            answer.status_code == 200 and "<success>true</success>" in answer.text
                        )

                    created.append(timed_ms(create))
                queries: dict[str, list[float]] = {"changed": [], "floor": []}
                for _ in range(repeat):
                    for name in ("floor", "changed"):
                        auth = {"Authorization": f"Bearer {tokens[name]}"}

                        def query(auth: dict[str, str] = auth) -> None:
                            http.get(
                                f"{API}/query", params={"q": QUERY}, headers=auth
                            ).raise_for_status()

                        queries[name].append(timed_ms(query))
        finally:
            server.stop()
    floor = statistics.median(queries["floor"])
    changed = statistics.median(queries["changed"])
    print(f"{backend}: field creation median {statistics.median(created):.2f} ms ({fields} fields)")
    print(f"{backend}: query, unchanged schema (floor) {floor:.2f} ms")
    print(
        f"{backend}: query, schema with {fields} added fields {changed:.2f} ms "
        f"({changed / floor:.2f}x the floor)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fields", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    for backend in args.backends.split(","):
        run(backend, args.fields, args.repeat)


if __name__ == "__main__":
    main()
