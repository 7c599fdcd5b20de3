"""The console under parallel clients and hostile input, over a real server on both back
ends: pages read while writes, resets and a delete run in the same sandbox answer a page or a
Salesforce error page (never a 500), and no parameter a client sends makes one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import ADMIN_HEADERS, API
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

HOSTILE = [
    "",
    "'",
    "\\",
    "%",
    "%00",
    "\x00",
    "\ud800",
    "' OR 1=1 --",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "{{7*7}}",
    "x" * 5000,
    "SELECT Id FROM Account WHERE Name = '\x00'",
    "FIND {\x00} RETURNING Account",
    'FIND {"} RETURNING Account',
    "SELECT Id FROM Account LIMIT 99999999999999999999",
    "SELECT (SELECT (SELECT (SELECT (SELECT (SELECT Id FROM a) FROM b) FROM c) FROM d) FROM e) "
    "FROM f",
]


@pytest.fixture(scope="module")
def base_url(database_factory: DatabaseFactory, sandbox_ready_template: str) -> Iterator[str]:
    app = private_org_app(database_factory, sandbox_ready_template)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}"


def encoded(value: str) -> str:
    """Percent-encoded; a lone surrogate as the bytes no UTF-8 decoder takes."""
    return quote(value, safe="", errors="surrogatepass")


def paths_for(value: str) -> list[str]:
    text = encoded(value)
    return [
        f"/console/sandboxes/default/query?q={text}",
        f"/console/sandboxes/default/query?q=SELECT+Id+FROM+Case&locator={text}",
        f"/console/sandboxes/default/objects/Account?q={text}",
        f"/console/sandboxes/default/objects/Account?page={text}",
        f"/console/sandboxes/default/objects/{text}",
        f"/console/sandboxes/default/objects/Account/{text}",
        f"/console/sandboxes/{text}",
        f"/console/sandboxes/{text}/objects",
        f"/console/login?next={text}",
    ]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_no_parameter_makes_a_500(base_url: str, value: str) -> None:
    with httpx.Client(base_url=base_url, headers=ADMIN_HEADERS, timeout=30) as client:
        for path in paths_for(value):
            response = client.get(path)
            assert response.status_code < 500, (path, response.text[:500])
            if response.status_code >= 400 and "json" in response.headers["content-type"]:
                assert {"message", "errorCode"} <= set(response.json()[0])
        for path, form in (
            ("/console/sandboxes", {"id": value}),
            ("/console/sandboxes", {"seed": value}),
            ("/console/sandboxes", {"org": value}),
            ("/console/sandboxes/default/snapshots", {"name": value}),
            ("/console/login", {"key": value, "next": value}),
            ("/console/tasks/grade", {"results": value}),
        ):
            body = "&".join(f"{key}={encoded(item)}" for key, item in form.items())
            form_type = {"Content-Type": "application/x-www-form-urlencoded"}
            response = client.post(path, content=body, headers=form_type)
            assert response.status_code < 500, (path, form, response.text[:500])
    # What a hostile value made is not left behind as a sandbox named after it.
    with httpx.Client(base_url=base_url, headers=ADMIN_HEADERS, timeout=30) as client:
        for sandbox in client.get("/__localforce/sandboxes").json()["sandboxes"]:
            if sandbox["id"] != "default":
                client.delete(f"/__localforce/sandboxes/{sandbox['id']}")


@pytest.mark.asyncio
async def test_pages_read_while_the_sandbox_is_written_reset_and_deleted(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, headers=ADMIN_HEADERS, timeout=60) as client:
        made = await client.post("/__localforce/sandboxes", json={"id": "console-load"})
        assert made.status_code == 201, made.text
        headers = {"Authorization": f"Bearer {made.json()['access_token']}"}
        pages = [
            "/console/sandboxes/console-load",
            "/console/sandboxes/console-load/objects/Contact",
            "/console/sandboxes/console-load/query?q=SELECT+Id,+Name+FROM+Contact",
            "/console/sandboxes",
            "/console/tasks",
        ]

        async def read(round_number: int) -> list[int]:
            statuses = []
            for path in pages:
                response = await client.get(path)
                statuses.append(response.status_code)
                assert response.status_code in {200, 404}, (path, response.text[:500])
            del round_number
            return statuses

        async def write(number: int) -> int:
            response = await client.post(
                f"{API}/sobjects/Contact", json={"LastName": f"Load {number}"}, headers=headers
            )
            return response.status_code

        async def reset() -> int:
            response = await client.post("/console/sandboxes/console-load/reset")
            return response.status_code

        first = await asyncio.gather(
            *(read(n) for n in range(12)), *(write(n) for n in range(12)), reset(), reset()
        )
        assert all(status in {200, 201} for status in first[12:24])
        assert first[24:] == [303, 303]

        async def delete() -> int:
            response = await client.post("/console/sandboxes/console-load/delete")
            return response.status_code

        second = await asyncio.gather(*(read(n) for n in range(12)), delete())
        assert second[-1] == 303
        gone = await client.get("/console/sandboxes/console-load")
        assert gone.status_code == 404
