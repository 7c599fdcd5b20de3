"""A blocking WebSocket client on a plain socket: the WebSocket counterpart of
bench.server.HttpClient, the lightest client there is, so a figure is the server's and not a
client library's (websockets' own clients read in a thread of their own, or on an event loop).
The protocol is websockets' sans-I/O one; this module only moves its bytes."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

READ_BYTES = 1 << 20


class BlockingWebSocket:
    """One WebSocket connection: `send` a text message, `recv` the next one whole."""

    def __init__(self, url: str) -> None:
        self.protocol = ClientProtocol(parse_uri(url))
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname or "", parts.port or 80))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.protocol.send_request(self.protocol.connect())
        self._flush()
        while not any(isinstance(event, Response) for event in self._read()):
            pass
        if self.protocol.handshake_exc is not None:
            raise self.protocol.handshake_exc

    def send(self, text: str) -> None:
        self.protocol.send_text(text.encode())
        self._flush()

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            for event in self._read():
                if isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.CONT):
                    parts.append(bytes(event.data))
                    if event.fin:
                        self._flush()  # what the protocol answers on its own (a pong)
                        return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if data:
                self.sock.sendall(data)

    def _read(self) -> list[object]:
        data = self.sock.recv(READ_BYTES)
        if not data:
            raise ConnectionError("the server closed the WebSocket connection")
        self.protocol.receive_data(data)
        return list(self.protocol.events_received())
