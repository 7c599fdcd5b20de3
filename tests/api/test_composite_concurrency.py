"""Composites at once: each borrows its own request's connection and context, so parallel
composites into one sandbox all get their own right answers; and a composite never holds a
thread its subrequests need, so they finish even with one thread in the default pool."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from anyio import to_thread

from tests.conftest import ADMIN_HEADERS, API
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

COMPOSITES = 24
CONTROL = "/__localforce/sandboxes"


@pytest.fixture(scope="module")
def server(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[str]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"


def episode(tag: str, all_or_none: bool = False, email: str = "z@example.com") -> dict[str, Any]:
    """An Account and its Contact, the Contact found by a query and updated, then read."""
    return {
        "allOrNone": all_or_none,
        "compositeRequest": [
            {
                "method": "POST",
                "url": f"{API}/sobjects/Account",
                "referenceId": "account",
                "body": {"Name": tag},
            },
            {
                "method": "POST",
                "url": f"{API}/sobjects/Contact",
                "referenceId": "contact",
                "body": {"LastName": tag, "Email": email, "AccountId": "@{account.id}"},
            },
            {
                "method": "GET",
                "url": f"{API}/query?q=SELECT+Id,Account.Name+FROM+Contact"
                "+WHERE+AccountId='@{account.id}'",
                "referenceId": "found",
            },
            {
                "method": "PATCH",
                "url": f"{API}/sobjects/Contact/@{{found.records[0].Id}}",
                "referenceId": "updated",
                "body": {"FirstName": f"F {tag}"},
            },
            {
                "method": "GET",
                "url": f"{API}/sobjects/Contact/@{{contact.id}}?fields=FirstName,AccountId",
                "referenceId": "read",
            },
        ],
    }


def check_episode(tag: str, body: dict[str, Any]) -> None:
    account, contact, found, _, read = body["compositeResponse"]
    statuses = [answer["httpStatusCode"] for answer in body["compositeResponse"]]
    assert statuses == [201, 201, 200, 204, 200], body
    assert found["body"]["totalSize"] == 1
    assert found["body"]["records"][0]["Id"] == contact["body"]["id"]
    assert found["body"]["records"][0]["Account"]["Name"] == tag
    assert read["body"]["FirstName"] == f"F {tag}"
    assert read["body"]["AccountId"] == account["body"]["id"]


def count(sf: httpx.Client, soql: str) -> int:
    response = sf.get(f"{API}/query", params={"q": soql})
    assert response.status_code == 200, response.text
    return int(response.json()["totalSize"])


@pytest.mark.asyncio
async def test_parallel_composites_into_one_sandbox(server: str) -> None:
    token = httpx.post(
        f"{server}/services/oauth2/token",
        data={"grant_type": "password", "username": "agent@example.com", "password": "x"},
    ).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    # Every third composite fails at its Contact, all or none: it must leave nothing behind.
    failing = {i for i in range(COMPOSITES) if i % 3 == 2}
    bodies = [
        episode(f"Zcc {i}", all_or_none=True, email="not an email")
        if i in failing
        else episode(f"Zcc {i}")
        for i in range(COMPOSITES)
    ]
    batch = {"batchRequests": [{"method": "GET", "url": "v59.0/sobjects/Account/describe"}] * 3}
    limits = httpx.Limits(max_connections=COMPOSITES + 8)
    async with httpx.AsyncClient(
        base_url=server, headers=headers, timeout=120, limits=limits
    ) as sf:
        composites = [sf.post(f"{API}/composite", json=body) for body in bodies]
        batches = [sf.post(f"{API}/composite/batch", json=batch) for _ in range(8)]
        responses = await asyncio.gather(*composites, *batches)

    assert [response.status_code for response in responses] == [200] * len(responses)
    for i, response in enumerate(responses[:COMPOSITES]):
        if i in failing:
            statuses = [a["httpStatusCode"] for a in response.json()["compositeResponse"]]
            assert statuses == [400] * 5
        else:
            check_episode(f"Zcc {i}", response.json())
    for response in responses[COMPOSITES:]:
        assert [r["statusCode"] for r in response.json()["results"]] == [200] * 3
    with httpx.Client(base_url=server, headers=headers, timeout=120) as sf:
        for i in range(COMPOSITES):
            expected = 0 if i in failing else 1
            assert count(sf, f"SELECT Id FROM Account WHERE Name = 'Zcc {i}'") == expected
            assert count(sf, f"SELECT Id FROM Contact WHERE LastName = 'Zcc {i}'") == expected


async def new_sandbox(http: httpx.AsyncClient, sandbox_id: str) -> dict[str, str]:
    response = await http.post(CONTROL, json={"id": sandbox_id})
    assert response.status_code == 201, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


@pytest.mark.asyncio
async def test_composites_finish_with_one_thread_in_the_default_pool(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> None:
    """A composite waits for its subrequests, which FastAPI runs in its default thread pool:
    were the composite itself in that pool, one thread would be held by the composite while its
    subrequest waited for it, for ever."""
    app = private_org_app(database_factory, sandbox_ready_template)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url="https://testserver", headers=ADMIN_HEADERS
        ) as http,
    ):
        sandboxes = [await new_sandbox(http, name) for name in ("one", "two")]
        to_thread.current_default_thread_limiter().total_tokens = 1
        tags = [(f"Zct {n} {i}", headers) for n, headers in enumerate(sandboxes) for i in range(3)]
        calls = [http.post(f"{API}/composite", json=episode(tag), headers=h) for tag, h in tags]
        responses = await asyncio.wait_for(asyncio.gather(*calls), timeout=120)
    for (tag, _), response in zip(tags, responses, strict=True):
        assert response.status_code == 200, response.text
        check_episode(tag, response.json())
