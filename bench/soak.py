"""Soak: a long mixed load over many sandboxes against a server in its own process, watching
its memory. Prints RSS after the warm-up and at the end (flat: within 10%), and what 200 open
query locators of 22,000 rows cost (under 100 MB).

Run: `make soak` (or `python -m bench.soak [--requests N] [--sandboxes N] [--backend B]`).
The load generator is this process: asyncio with keep-alive httpx connections, one per
concurrent client, on the other core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import httpx

from bench.server import seeded_data_dir
from tests.conftest import ADMIN_HEADERS
from tests.processes import Deployment, running

API = "/services/data/v59.0"
CONTROL = "/__localforce/sandboxes"
WIDE = "SELECT Id, Name, UnitPrice FROM PricebookEntry"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


async def client_loop(
    sf: httpx.AsyncClient,
    budget: list[int],
    rng: random.Random,
    mine: list[str],
    errors: list[str],
) -> None:
    while budget[0] > 0:
        budget[0] -= 1
        pick = rng.random()
        if pick < 0.35:
            response = await sf.get(
                f"{API}/query", params={"q": "SELECT Id, Subject, Status FROM Case LIMIT 20"}
            )
        elif pick < 0.5:
            response = await sf.post(
                f"{API}/sobjects/Contact", json={"LastName": f"Soak{len(mine)}"}
            )
            if response.status_code == 201:
                mine.append(response.json()["id"])
        elif pick < 0.6 and mine:
            response = await sf.patch(
                f"{API}/sobjects/Contact/{rng.choice(mine)}", json={"FirstName": "S"}
            )
        elif pick < 0.7:
            response = await sf.get(
                f"{API}/search", params={"q": "FIND {shoe} RETURNING Product2(Id, Name)"}
            )
        elif pick < 0.8:
            response = await sf.get(f"{API}/sobjects/Case/describe")
        elif pick < 0.9:
            response = await sf.get(
                f"{API}/query",
                params={"q": "SELECT Status, COUNT(Id) FROM Case GROUP BY Status"},
            )
        else:
            response = await sf.get(f"{API}/limits")
        if response.status_code >= 500:
            errors.append(f"{response.status_code} {response.text[:200]}")


async def soak(base: str, pid: int, requests: int, sandboxes: int) -> None:
    limits = httpx.Limits(max_connections=sandboxes + 8)
    async with httpx.AsyncClient(
        base_url=base, headers=ADMIN_HEADERS, timeout=120, limits=limits
    ) as control:
        tokens = []
        for index in range(sandboxes):
            made = await control.post(CONTROL, json={"id": f"soak{index}"})
            made.raise_for_status()
            tokens.append(made.json()["access_token"])
    clients = [
        httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {t}"}, timeout=120)
        for t in tokens
    ]
    errors: list[str] = []
    warm = max(1, requests // 10)
    started = time.perf_counter()
    curve: list[float] = []  # RSS after each tenth of the requests
    files: list[int] = []  # and the server's open files
    rngs = [random.Random(index) for index in range(len(clients))]
    contacts: list[list[str]] = [[] for _ in clients]  # each client's Contacts, to update
    for _ in range(10):
        budget = [warm]
        await asyncio.gather(
            *(
                client_loop(client, budget, rng, mine, errors)
                for client, rng, mine in zip(clients, rngs, contacts, strict=True)
            )
        )
        curve.append(rss_mb(pid))
        files.append(len(os.listdir(f"/proc/{pid}/fd")))
    seconds = time.perf_counter() - started
    after_warmup, at_end = curve[0], curve[-1]
    print(
        f"{requests:,} mixed requests over {sandboxes} sandboxes in {seconds:.0f} s "
        f"({requests / seconds:.0f}/s), {len(errors)} answered 5xx"
    )
    print(
        f"RSS after {warm:,} requests: {after_warmup:.0f} MB; at the end: {at_end:.0f} MB "
        f"({(at_end / after_warmup - 1) * 100:+.1f}%, target within 10%)"
    )
    print("RSS after each tenth (MB): " + " ".join(f"{mb:.0f}" for mb in curve))
    print("open files after each tenth: " + " ".join(str(n) for n in files))
    for sample in errors[:5]:
        print(f"  {sample}")

    before = rss_mb(pid)
    opened = 0
    for client in clients[:20]:
        for _ in range(10):
            page = (await client.get(f"{API}/query", params={"q": WIDE})).json()
            assert page["done"] is False
            opened += 1
    cost = rss_mb(pid) - before
    print(
        f"{opened} open locators of {page['totalSize']:,} rows: RSS {cost:+.0f} MB "
        "(target < 100 MB)"
    )
    for client in clients:
        await client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--sandboxes", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        data_dir = seeded_data_dir(Path(workdir))
        deploy = Deployment(data_dir, "")
        with running(deploy, LOCALFORCE_MAX_SANDBOXES=str(args.sandboxes + 10)) as server:
            asyncio.run(soak(server.base, server.process.pid, args.requests, args.sandboxes))
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
