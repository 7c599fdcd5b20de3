"""How the server process runs: uvicorn's HTTP protocol with the read timeouts it lacks, and
Salesforce-format answers to requests its parser refuses (app.tuning has the process's
memory settings).

uvicorn closes a keep-alive connection that stays idle after a response, but waits forever for
the first request's headers, and for a body that stops arriving: 500 sockets opened and left
silent (or a client that stalls mid-request) would hold their memory and descriptors for good.
Here each connection must finish a request's headers within the header timeout of its start
(the connection's, or the request's first byte), and must not leave a gap longer than the body
timeout in its body; otherwise the server closes it.

An idle keep-alive connection is closed after KEEP_ALIVE_SECONDS, but never with a request
waiting in it: see TimedHttpProtocol.timeout_keep_alive_handler.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import struct
import termios
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


@dataclass
class ReadTimeouts:
    header_seconds: float = 10.0
    body_seconds: float = 30.0


# Set by each process's app factory from its settings (a worker process builds its own app, so
# the protocol it serves with reads the same values).
READ_TIMEOUTS = ReadTimeouts()


def set_read_timeouts(header_seconds: float, body_seconds: float) -> None:
    READ_TIMEOUTS.header_seconds = header_seconds
    READ_TIMEOUTS.body_seconds = body_seconds


# How long a keep-alive connection may stay idle after a response before the server closes it:
# longer than the idle expiry of the common clients' connection pools (httpx 5 s, Node's agent
# 5 s, undici 4 s, aiohttp 15 s), so that it is the client that retires an idle connection. A
# request sent on a connection as the server closes it is lost (the client reads a reset, or
# nothing), and with uvicorn's 5 s, the same as httpx's, that happened whenever a client took a
# moment to read a response: the server's count starts when it sends the response, the
# client's when it has read it, so the client reused connections the server was closing.
KEEP_ALIVE_SECONDS = 20


# WebSocket messages go uncompressed: an OpenEnv step's observation (a tool's result, three
# times over, as OpenEnv's clients read it) took a third more time to compress and inflate
# than to answer, and each session held zlib's state (about 300 KB) for as long as it lived.
WS_DEFLATE = False


# The errorCode of a request the HTTP parser refuses: Salesforce's front end answers those
# before any API code runs, so there is no API errorCode to copy; this one says what it is.
BAD_REQUEST_CODE = "BAD_REQUEST"


def unread_bytes(transport: asyncio.BaseTransport) -> int:
    """How many bytes wait unread in the transport's socket (0 if it has none to ask)."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        answer = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4)
    except OSError:  # closed meanwhile
        return 0
    return int(struct.unpack("i", answer)[0])


def uvicorn_options() -> dict[str, Any]:
    """What every localforce server passes to uvicorn's Config, whichever way it is started:
    this protocol and the keep-alive it is measured against."""
    return {
        "http": TimedHttpProtocol,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "ws_per_message_deflate": WS_DEFLATE,
    }


class TimedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header and a body read timeout, and a keep-alive
    timeout that does not throw away a request that has arrived."""

    _read_deadline: asyncio.TimerHandle | None = None

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(seconds, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _read_timed_out(self) -> None:
        self._read_deadline = None
        if self.flow.read_paused:  # the app has not taken the body yet: the wait is ours
            self._arm(READ_TIMEOUTS.body_seconds)
        elif not self.transport.is_closing() and unread_bytes(self.transport) > 0:
            # The bytes have arrived and wait for this loop to read them (a turn held up under
            # load runs its due timers first): the wait is ours, as at the keep-alive timeout.
            self._arm(READ_TIMEOUTS.header_seconds)
        elif not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(READ_TIMEOUTS.header_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(READ_TIMEOUTS.header_seconds)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(READ_TIMEOUTS.body_seconds)  # until the body is in (at once if it has none)

    def on_body(self, body: bytes) -> None:
        super().on_body(body)
        self._arm(READ_TIMEOUTS.body_seconds)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()  # the request is read; the app takes as long as it takes

    def timeout_keep_alive_handler(self) -> None:
        """Close the idle keep-alive connection, unless its next request has already arrived.

        A turn of the event loop runs the timers that are due and reads the sockets that have
        become readable; under load a turn takes tens or hundreds of milliseconds, and a request
        that arrives during one is still unread in the socket when the keep-alive timer fires
        (uvloop runs timers before it polls the sockets). Closing then would discard it: a
        socket closed with unread bytes sends the client a reset (httpx's ReadError) where its
        answer should be. The request is read in this same turn, and its arrival cancels the
        timer set again here."""
        if not self.transport.is_closing() and unread_bytes(self.transport) > 0:
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )
            return
        super().timeout_keep_alive_handler()

    def send_400_response(self, msg: str) -> None:
        """A request the HTTP parser refuses (a NUL in a header, a broken request line): the
        error array every other answer carries, where uvicorn would send plain text."""
        body = json.dumps(
            [{"message": f"Bad request: {msg}", "errorCode": BAD_REQUEST_CODE}]
        ).encode()
        head = [b"HTTP/1.1 400 Bad Request\r\n"]
        defaults = self.server_state.default_headers
        head += [name + b": " + value + b"\r\n" for name, value in defaults]
        head += [
            b"content-type: application/json;charset=UTF-8\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n\r\n",
        ]
        self.transport.write(b"".join([*head, body]))
        self.transport.close()
