"""A load generator light enough not to starve the server it measures on a two-core machine: it
runs in a process of its own (`spawn`, so it shares nothing with the benchmark's), on uvloop,
one keep-alive HTTP/1.1 connection per client, sending requests prepared as bytes beforehand and
reading responses with httptools (uvicorn's own parser), so a request costs it a few
microseconds rather than an HTTP client library's tens.

Each client sends a first request, waits until every client has had its first answer (so new
sandboxes' first requests and connection set-up stay out of the figures), then cycles through
its own requests, one at a time, for `warmup` and then `seconds`; every response's latency in
the window is recorded, and the throughput is completed requests over the window. An answer
that takes longer than REQUEST_TIMEOUT counts as an error, and the client reconnects; requests
still unanswered GRACE seconds after the window are counted and abandoned.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context

import httptools
import uvloop

from bench.cpu import Reading, cpu_by_process, used_between

REQUEST_TIMEOUT = 10.0  # an answer later than this counts as an error (status 0)
GRACE = 2.0  # how long past the window the answers in flight are awaited


def raw_request(
    method: str,
    path: str,
    headers: dict[str, str] | None = None,
    body: bytes = b"",
    host: str = "127.0.0.1",
) -> bytes:
    """One HTTP/1.1 request as it goes on the wire (keep-alive is HTTP/1.1's default)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method in ("POST", "PATCH", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass(frozen=True)
class Load:
    port: int
    requests: list[list[bytes]]  # per client, cycled
    seconds: float
    warmup: float
    host: str = "127.0.0.1"
    server_group: int = 0  # the server's process group, whose CPU use is read over the window


@dataclass
class Measured:
    completed: int = 0
    errors: int = 0
    unanswered: int = 0  # requests still waiting GRACE seconds after the window closed
    first_error: str = ""
    seconds: float = 0.0
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # over the window, by owner
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.completed / self.seconds if self.seconds else 0.0

    def cores(self, owner: str) -> float:
        """How many cores `owner` (load, server or postgres) kept busy over the window."""
        return self.cpu_seconds.get(owner, 0.0) / self.seconds if self.seconds else 0.0

    def percentile(self, p: int) -> float:
        if len(self.latencies_ms) < 2:
            return self.latencies_ms[0] if self.latencies_ms else float("nan")
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[p - 1]


class _Response:
    """httptools callbacks: the status, the first bytes of the body, the end."""

    def __init__(self) -> None:
        self.done = False
        self.body = b""

    def on_body(self, body: bytes) -> None:
        if len(self.body) < 300:
            self.body += body[:300]

    def on_message_complete(self) -> None:
        self.done = True


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes
) -> tuple[int, bytes]:
    writer.write(raw)
    response = _Response()
    parser = httptools.HttpResponseParser(response)
    while not response.done:
        data = await reader.read(262144)
        if not data:
            raise ConnectionError("the server closed the connection")
        parser.feed_data(data)
    return parser.get_status_code(), response.body


async def _client(
    load: Load, requests: list[bytes], ready: _Ready, clock: dict[str, float], out: Measured
) -> None:
    """One connection: a first request (a new sandbox's first costs more), then, once every
    client has had its first, requests back to back until the window closes."""
    try:
        reader, writer = await asyncio.open_connection(load.host, load.port)
        await asyncio.wait_for(_exchange(reader, writer, requests[0]), REQUEST_TIMEOUT)
    except (OSError, TimeoutError) as error:
        out.errors += 1
        out.first_error = out.first_error or f"the first request: {error!r}"
        ready.arrive_nowait()
        return
    await ready.arrive()
    try:
        at = 1
        while True:
            now = time.perf_counter()
            if now >= clock["stop"]:
                return
            raw = requests[at % len(requests)]
            at += 1
            try:
                status, body = await asyncio.wait_for(
                    _exchange(reader, writer, raw), REQUEST_TIMEOUT
                )
            except TimeoutError:
                status, body = 0, f"no answer in {REQUEST_TIMEOUT} s".encode()
                writer.close()
                reader, writer = await asyncio.open_connection(load.host, load.port)
            ended = time.perf_counter()
            if now < clock["start"]:
                continue  # warm-up
            out.completed += 1
            out.latencies_ms.append((ended - now) * 1000)
            if status >= 400 or status == 0:
                out.errors += 1
                out.first_error = out.first_error or f"{status} {body[:200]!r}"
    finally:
        writer.close()


class _Ready:
    """Opens the clock when the last client has had its first answer."""

    def __init__(self, clients: int, load: Load, clock: dict[str, float]) -> None:
        self.waiting = clients
        self.load = load
        self.clock = clock
        self.event = asyncio.Event()

    def arrive_nowait(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            start = time.perf_counter() + self.load.warmup
            self.clock.update(start=start, stop=start + self.load.seconds)
            self.event.set()

    async def arrive(self) -> None:
        self.arrive_nowait()
        await self.event.wait()


async def _run(load: Load) -> Measured:
    out = Measured()
    clock = {"start": float("inf"), "stop": float("inf")}
    ready = _Ready(len(load.requests), load, clock)
    clients = [
        asyncio.ensure_future(_client(load, requests, ready, clock, out))
        for requests in load.requests
    ]
    await ready.event.wait()
    await asyncio.sleep(max(0.0, clock["start"] - time.perf_counter()))
    started = _cpu_now(load)
    await asyncio.sleep(max(0.0, clock["stop"] - time.perf_counter()))
    out.cpu_seconds = used_between(started, _cpu_now(load))
    # Wait for the answers in flight when the window closes, but not for a stalled server.
    _, pending = await asyncio.wait(clients, timeout=load.warmup + load.seconds + GRACE)
    for client in pending:
        client.cancel()
    out.unanswered = len(pending)
    await asyncio.gather(*clients, return_exceptions=True)
    out.seconds = load.seconds
    return out


def _cpu_now(load: Load) -> Reading:
    used = {("load", 0): time.process_time()}
    if load.server_group:
        used.update(cpu_by_process(load.server_group))
    return used


def run_load(load: Load) -> Measured:
    return uvloop.run(_run(load))


def load_process() -> ProcessPoolExecutor:
    """The process the load runs in: one, spawned, reused for every measurement."""
    return ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn"))
