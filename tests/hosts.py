"""Hosts on this machine: Linux network namespaces, each with its own network stack and an
address on a bridge of its own subnet (a veth pair from the bridge into the namespace), so
that a process run in one listens and connects as a separate host does. They share the file
system (PostgreSQL's Unix socket among it). Needs root and iproute2."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


def can_make_hosts() -> str | None:
    """Why hosts cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@dataclass
class Host:
    name: str  # its network namespace's
    address: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self, command: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        """Run `command` on this host, in a process group of its own, its output into `log`."""
        with log.open("ab") as out:
            self.processes.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", self.name, *command],
                    env=dict(env),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def kill(self) -> None:
        """The host dies: its processes are killed outright, and its link goes down."""
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        _ip("-n", self.name, "link", "set", "eth0", "down")


@contextmanager
def hosts(count: int) -> Iterator[list[Host]]:
    """`count` hosts on a bridge of a subnet of their own (10.a.b.0/24, its .1 this machine's
    end), torn down at the end, their processes killed."""
    tag = f"{os.getpid() % 10000}{random.randrange(100):02d}"
    subnet = f"10.{random.randrange(100, 250)}.{random.randrange(256)}"
    bridge = f"lfbr{tag}"
    made: list[Host] = []
    _ip("link", "add", bridge, "type", "bridge")
    try:
        _ip("addr", "add", f"{subnet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        for index in range(count):
            host = Host(name=f"lf{tag}h{index}", address=f"{subnet}.{10 + index}")
            outside = f"lf{tag}v{index}"
            _ip("netns", "add", host.name)
            made.append(host)
            _ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", host.name)
            _ip("link", "set", outside, "master", bridge)
            _ip("link", "set", outside, "up")
            _ip("-n", host.name, "addr", "add", f"{host.address}/24", "dev", "eth0")
            _ip("-n", host.name, "link", "set", "eth0", "up")
            _ip("-n", host.name, "link", "set", "lo", "up")
        yield made
    finally:
        for host in made:
            for process in host.processes:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=30)
            subprocess.run(["ip", "netns", "del", host.name], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)
