"""Bulk jobs from many clients at once, over a real server: every job completes, every row is
in the data exactly once, ids are unique, and REST writes beside them are not lost."""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import API
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

pytestmark = pytest.mark.asyncio
CLIENTS = 12
ROWS = 40
JOBS = f"{API}/jobs"


@pytest.fixture(scope="module")
def base_url(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[str]:
    with serve_in_thread(private_org_app(database_factory, seeded_template)) as port:
        yield f"http://127.0.0.1:{port}"


async def token(http: httpx.AsyncClient) -> str:
    response = await http.post(
        "/services/oauth2/token",
        data={"grant_type": "password", "username": "agent@example.com", "password": "x"},
    )
    return str(response.json()["access_token"])


async def finished(http: httpx.AsyncClient, kind: str, job_id: str) -> dict[str, Any]:
    for _ in range(600):
        info: dict[str, Any] = (await http.get(f"{JOBS}/{kind}/{job_id}")).json()
        if info["state"] in ("JobComplete", "Failed", "Aborted"):
            return info
        await asyncio.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish")


async def ingest_job(http: httpx.AsyncClient, client: int) -> tuple[dict[str, Any], str]:
    job = (
        await http.post(f"{JOBS}/ingest", json={"object": "Contact", "operation": "insert"})
    ).json()
    rows = "".join(f"Parallel {client} {row},p{client}-{row}@bulk.example\n" for row in range(ROWS))
    upload = await http.put(
        f"{JOBS}/ingest/{job['id']}/batches",
        content=("LastName,Email\n" + rows).encode(),
        headers={"Content-Type": "text/csv"},
    )
    assert upload.status_code == 201
    closed = await http.patch(f"{JOBS}/ingest/{job['id']}", json={"state": "UploadComplete"})
    assert closed.status_code == 200
    info = await finished(http, "ingest", job["id"])
    results = (await http.get(f"{JOBS}/ingest/{job['id']}/successfulResults")).text
    return info, results


async def rest_writer(http: httpx.AsyncClient, count: int) -> list[str]:
    ids = []
    for index in range(count):
        response = await http.post(f"{API}/sobjects/Contact", json={"LastName": f"Beside {index}"})
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids


async def test_parallel_ingest_and_query_jobs(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as login:
        headers = {"Authorization": f"Bearer {await token(login)}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as http:
        query = {"operation": "query", "query": "SELECT Id FROM Case"}
        jobs_task = asyncio.gather(*(ingest_job(http, client) for client in range(CLIENTS)))
        queries_task = asyncio.gather(*(http.post(f"{JOBS}/query", json=query) for _ in range(3)))
        jobs, beside, queried = await asyncio.gather(jobs_task, rest_writer(http, 20), queries_task)
        query_jobs = [response.json() for response in queried]

        created: list[str] = []
        for info, results in jobs:
            assert (info["state"], info["numberRecordsProcessed"], info["numberRecordsFailed"]) == (
                "JobComplete",
                ROWS,
                0,
            )
            created += [row["sf__Id"] for row in csv.DictReader(io.StringIO(results))]
        assert len(created) == len(set(created)) == CLIENTS * ROWS
        stored = await http.get(
            f"{API}/query", params={"q": "SELECT Id FROM Contact WHERE LastName LIKE 'Parallel %'"}
        )
        assert sorted(r["Id"] for r in stored.json()["records"]) == sorted(created)
        assert not set(beside) & set(created)
        cases = (await http.get(f"{API}/query", params={"q": "SELECT COUNT() FROM Case"})).json()
        for job in query_jobs:
            info = await finished(http, "query", job["id"])
            assert info["numberRecordsProcessed"] == cases["totalSize"]
