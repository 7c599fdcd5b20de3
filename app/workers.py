"""Several worker processes serving one port, each accepting on a listening socket of its own.

uvicorn's workers share one listening socket, and the worker that wakes first accepts every
connection waiting: 64 keep-alive clients that connect at once often all land on one worker,
and the other idles for as long as they stay connected (measured on two cores: 827 queries/s
on 1.07 cores when one worker held all 64 connections, about 1,600 on 1.65 when they split).
With SO_REUSEPORT each worker listens on a socket of its own, and the kernel spreads new
connections over them by a hash of their addresses.

The supervisor keeps uvicorn's (it restarts a worker that dies, and replaces them all on
SIGHUP); it holds the port with a socket bound but never listening, so a port in use fails at
once, and only the workers' sockets receive connections.
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess, multiprocess

LOG = logging.getLogger("uvicorn.error")  # where uvicorn reports a port it cannot bind
# How long the supervisor waits for a worker to answer its health ping before it kills and
# replaces it (uvicorn's default, 5 s). A worker answers only once its process has imported
# the server, which on a busy machine takes longer than 5 s: the supervisor then killed a
# worker that was starting, and started another as slow. A hung worker is found later.
WORKER_HEALTH_SECONDS = 60


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port that other SO_REUSEPORT sockets of this user may share."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


class OwnSocketWorker(multiprocess.Process):
    """A uvicorn worker that serves a socket it binds itself, on the supervisor's port."""

    def target(self, sockets: list[socket.socket] | None = None) -> None:  # pragma: no cover
        # Runs in the worker process. The supervisor's socket only holds the port: it is
        # closed here unused, and this worker listens on one of its own (the port is the one
        # the supervisor was given, or chose when given 0).
        [held] = sockets or []
        port = held.getsockname()[1]
        held.close()
        super().target([reuse_port_socket(self.config.host, port)])


def serve_workers(config: uvicorn.Config) -> None:
    """Run `config.workers` workers until a signal stops them."""
    try:
        held = reuse_port_socket(config.host, config.port)
    except OSError as error:
        LOG.error("cannot listen on %s:%s: %s", config.host, config.port, error)
        sys.exit(STARTUP_FAILURE)
    config.port = held.getsockname()[1]
    config.timeout_worker_healthcheck = WORKER_HEALTH_SECONDS
    # uvicorn's supervisor makes (and remakes) its workers from this module name.
    original: Any = multiprocess.Process
    multiprocess.Process = OwnSocketWorker  # type: ignore[misc]
    try:
        Multiprocess(config, sockets=[held]).run()
    finally:
        multiprocess.Process = original  # type: ignore[misc]
        held.close()
