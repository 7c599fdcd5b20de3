"""Read timeouts: sockets left silent, or stalled mid-request, are closed by the server, and
never hold up the clients that do send requests."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.databases import DatabaseFactory
from tests.processes import deployment, running

IDLE_SOCKETS = 500
TIMEOUT_SECONDS = 1.0


async def _open(base: str, first_bytes: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    address = urlsplit(base)
    reader, writer = await asyncio.open_connection(address.hostname, address.port)
    if first_bytes:
        writer.write(first_bytes)
        await writer.drain()
    return reader, writer


async def _closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), within) == b""
    except (TimeoutError, ConnectionResetError):
        return False


@pytest.mark.asyncio
async def test_silent_and_stalled_sockets_are_closed(
    database_factory: DatabaseFactory, seeded_template: str, tmp_path: Path
) -> None:
    deploy = deployment(database_factory, seeded_template, tmp_path)
    timeouts = {
        "LOCALFORCE_HEADER_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS),
        "LOCALFORCE_BODY_TIMEOUT_SECONDS": str(TIMEOUT_SECONDS),
    }
    with running(deploy, **timeouts) as server:
        stalled_headers = b"GET /services/data HTTP/1.1\r\nHost: localhost\r\n"
        stalled_body = (
            b"POST /services/oauth2/token HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n"
            b"grant_type"
        )
        sockets = [await _open(server.base, b"") for _ in range(IDLE_SOCKETS)]
        sockets += [await _open(server.base, stalled_headers) for _ in range(20)]
        sockets += [await _open(server.base, stalled_body) for _ in range(20)]
        opened = time.monotonic()

        async with httpx.AsyncClient(base_url=server.base, timeout=10) as client:
            # Served beside the silent ones (how fast depends on the machine's load: not timed).
            answers = await asyncio.gather(*(client.get("/services/data") for _ in range(16)))
            assert [a.status_code for a in answers] == [200] * 16

            # A keep-alive client that pauses between requests is not cut off mid-request.
            for _ in range(3):
                assert (await client.get("/services/data")).status_code == 200
                await asyncio.sleep(TIMEOUT_SECONDS / 2)

        closed = await asyncio.gather(
            *(_closed_by_server(reader, 4 * TIMEOUT_SECONDS + 5) for reader, _ in sockets)
        )
        assert all(closed), f"{closed.count(False)} of {len(closed)} sockets still open"
        assert time.monotonic() - opened < 4 * TIMEOUT_SECONDS + 5
        for _, writer in sockets:
            writer.close()


@pytest.mark.asyncio
async def test_a_request_the_http_parser_refuses_gets_a_salesforce_error(
    database_factory: DatabaseFactory, seeded_template: str, tmp_path: Path
) -> None:
    deploy = deployment(database_factory, seeded_template, tmp_path)
    with running(deploy) as server:
        broken = [
            b"GET /services/data HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\x00b\r\n\r\n",
            b"GET /services/data HTTP/9\r\nHost: localhost\r\n\r\n",
            b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03 not http at all\r\n\r\n",
        ]
        for request in broken:
            reader, writer = await _open(server.base, request)
            answer = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 400 "), answer
            assert b"content-type: application/json;charset=UTF-8" in head
            [error] = json.loads(body)
            assert error["errorCode"] == "BAD_REQUEST"
            assert error["message"].startswith("Bad request: ")
