"""WebSocket messages go uncompressed (app.serving.uvicorn_options): a served app's handshake at
/openenv/ws, offered permessage-deflate, opens without it, and messages then travel as sent."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect

from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

pytestmark = pytest.mark.asyncio


@pytest.fixture(scope="module")
def port(database_factory: DatabaseFactory, seeded_template: str) -> Iterator[int]:
    with serve_in_thread(private_org_app(database_factory, seeded_template)) as served:
        yield served


async def test_a_handshake_offering_permessage_deflate_opens_without_it(port: int) -> None:
    # websockets' client offers permessage-deflate by default ("compression": "deflate").
    async with connect(f"ws://127.0.0.1:{port}/openenv/ws", open_timeout=60) as ws:
        assert ws.request is not None and ws.response is not None
        offered = ws.request.headers.get_all("Sec-WebSocket-Extensions")
        assert any(value.startswith("permessage-deflate") for value in offered), offered
        assert ws.response.status_code == 101
        assert ws.response.headers.get_all("Sec-WebSocket-Extensions") == []
        assert ws.protocol.extensions == []
        # The session answers over the uncompressed connection (OpenEnv's error for a
        # message it does not know).
        await ws.send(json.dumps({"type": "no-such-message"}))
        answer = json.loads(await ws.recv())
    assert answer == {
        "type": "error",
        "data": {"message": "Unknown message type: no-such-message", "code": "UNKNOWN_TYPE"},
    }
