"""Keep-alive connections: a request that reaches an idle connection as its keep-alive time runs
out is answered, not reset, and an idle connection outlives the idle expiry of httpx's pool,
so that the client, not the server, retires it."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from app.serving import KEEP_ALIVE_SECONDS, READ_TIMEOUTS, TimedHttpProtocol, set_read_timeouts
from tests.databases import DatabaseFactory
from tests.processes import deployment, running
from tests.servers import free_port

REQUEST = b"GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n"
ANSWER = b"HTTP/1.1 200 OK\r\n"
# httpx's pool keeps an idle connection this long (httpx.Limits' keepalive_expiry).
HTTPX_IDLE_EXPIRY_SECONDS = 5.0


def _read_answer(sock: socket.socket) -> bytes:
    """One response (by its Content-Length), or what came before the server closed."""
    answer = b""
    while True:
        head, found, body = answer.partition(b"\r\n\r\n")
        if found:
            lengths = [
                int(line.split(b":", 1)[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            ]
            if len(body) >= lengths[0]:
                return answer
        chunk = sock.recv(65536)
        if not chunk:
            return answer
        answer += chunk


@contextmanager
def _pong_server(keep_alive_seconds: int) -> Iterator[tuple[int, list[asyncio.AbstractEventLoop]]]:
    """A server of /ping on localforce's protocol, on uvloop (which runs due timers before it
    reads the sockets); yields its port and, after the first request, its event loop."""
    loops: list[asyncio.AbstractEventLoop] = []

    async def ping(request: Request) -> PlainTextResponse:
        loops.append(asyncio.get_running_loop())
        return PlainTextResponse("pong")

    app = Starlette(routes=[Route("/ping", ping)])
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        loop="uvloop",
        http=TimedHttpProtocol,
        timeout_keep_alive=keep_alive_seconds,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield port, loops
    finally:
        server.should_exit = True
        thread.join(timeout=30)


class _HoldsTheLoop(asyncio.Protocol):
    """A protocol whose data_received holds its event loop up for HOLD_SECONDS: as a burst of
    requests does under load, inside the turn's reading of the sockets."""

    def data_received(self, data: bytes) -> None:
        time.sleep(HOLD_SECONDS)


HOLD_SECONDS = 2.0


def test_a_request_that_arrives_as_the_keep_alive_time_runs_out_is_answered() -> None:
    """The server's event loop is held up, while it reads another socket, past the connection's
    keep-alive time; the next request arrives meanwhile. When the loop moves on the keep-alive
    timer is due before the loop reads the request. The connection answers it (uvicorn's own
    timer closed it with the request unread, and the client read a reset)."""
    with (
        _pong_server(keep_alive_seconds=1) as (port, loops),
        socket.create_connection(("127.0.0.1", port), timeout=10) as sock,
    ):
        sock.sendall(REQUEST)
        assert _read_answer(sock).startswith(ANSWER)
        loop = loops[0]
        holder_port = free_port()
        holding = loop.create_server(_HoldsTheLoop, "127.0.0.1", holder_port)
        holder = asyncio.run_coroutine_threadsafe(holding, loop).result(timeout=10)
        try:
            with socket.create_connection(("127.0.0.1", holder_port)) as hold:
                hold.sendall(b"x")  # the loop sleeps through the keep-alive time...
                time.sleep(0.5)
                sock.sendall(REQUEST)  # ...and the request goes in meanwhile
                answer = _read_answer(sock)
        finally:
            loop.call_soon_threadsafe(holder.close)
    assert answer.startswith(ANSWER), answer
    assert answer.endswith(b"\r\n\r\npong")


def test_a_request_that_arrives_as_the_header_time_runs_out_is_answered() -> None:
    """A new connection's request is sent while the server's event loop is held up past the
    header timeout: when the loop moves on, the timeout is due before the loop reads the
    request. The connection answers it (closing it then sent the client a reset, or nothing:
    "Server disconnected without sending a response", under load)."""
    header_seconds, body_seconds = READ_TIMEOUTS.header_seconds, READ_TIMEOUTS.body_seconds
    set_read_timeouts(1.0, body_seconds)
    try:
        with (
            _pong_server(keep_alive_seconds=5) as (port, loops),
            socket.create_connection(("127.0.0.1", port), timeout=10) as warm,
        ):
            warm.sendall(REQUEST)  # the first request: the test learns the server's loop
            assert _read_answer(warm).startswith(ANSWER)
            loop = loops[0]
            holder_port = free_port()
            holding = loop.create_server(_HoldsTheLoop, "127.0.0.1", holder_port)
            holder = asyncio.run_coroutine_threadsafe(holding, loop).result(timeout=10)
            try:
                with (
                    socket.create_connection(("127.0.0.1", port), timeout=10) as sock,
                    socket.create_connection(("127.0.0.1", holder_port)) as hold,
                ):
                    time.sleep(0.2)  # the connection is made: its header timer runs
                    hold.sendall(b"x")  # the loop sleeps through the header time...
                    time.sleep(0.5)
                    sock.sendall(REQUEST)  # ...and the request goes in meanwhile
                    answer = _read_answer(sock)
            finally:
                loop.call_soon_threadsafe(holder.close)
    finally:
        set_read_timeouts(header_seconds, body_seconds)
    assert answer.startswith(ANSWER), answer
    assert answer.endswith(b"\r\n\r\npong")


def test_an_idle_connection_stays_open_past_the_idle_expiry_of_httpx(
    database_factory: DatabaseFactory, seeded_template: str, tmp_path: Path
) -> None:
    """`localforce serve` keeps an idle connection longer than httpx's pool does, so a client
    reusing one just inside its pool's expiry finds it open."""
    assert KEEP_ALIVE_SECONDS > HTTPX_IDLE_EXPIRY_SECONDS
    deploy = deployment(database_factory, seeded_template, tmp_path)
    with running(deploy) as server:
        host, port = server.base.removeprefix("http://").split(":")
        request = f"GET /services/data HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(request)
            assert _read_answer(sock).startswith(ANSWER)
            time.sleep(HTTPX_IDLE_EXPIRY_SECONDS + 0.5)
            sock.sendall(request)
            assert _read_answer(sock).startswith(ANSWER)


def test_an_idle_connection_is_still_closed_after_its_keep_alive_time() -> None:
    with (
        _pong_server(keep_alive_seconds=1) as (port, _),
        socket.create_connection(("127.0.0.1", port), timeout=10) as sock,
    ):
        sock.sendall(REQUEST)
        assert _read_answer(sock).startswith(ANSWER)
        started = time.monotonic()
        assert sock.recv(1) == b""  # the server's close, with nothing unread to reset
        assert 0.9 < time.monotonic() - started < 6  # 1 s, however loaded the machine
