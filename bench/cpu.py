"""Where the machine's CPU went during a measurement: the server's processes (its process group:
uvicorn's supervisor and workers) and the PostgreSQL server's backends, read from /proc. On two
cores these say whether a figure is bound by the server, the database or the machine.
"""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid_dir: Path) -> list[str] | None:
    try:
        raw = (pid_dir / "stat").read_text()
    except OSError:  # the process ended while we looked
        return None
    # The command name is in parentheses and may hold spaces; the fields follow the last ')'.
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    return [name, *raw[raw.rindex(")") + 2 :].split()]


def _cpu_seconds(fields: list[str]) -> float:
    # After the name: state, ppid, pgrp, session, ..., utime at 12 and stime at 13 (0-based).
    return (int(fields[12]) + int(fields[13])) / TICKS


Reading = dict[tuple[str, int], float]  # CPU seconds so far, by (owner, process id)


def cpu_by_process(server_group: int) -> Reading:
    """CPU seconds used so far by each process of the server's group and of PostgreSQL."""
    used: Reading = {}
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        fields = _stat_fields(pid_dir)
        if fields is None:
            continue
        if int(fields[3]) == server_group:
            used["server", int(pid_dir.name)] = _cpu_seconds(fields)
        elif fields[0] == "postgres":
            used["postgres", int(pid_dir.name)] = _cpu_seconds(fields)
    return used


def used_between(before: Reading, after: Reading) -> dict[str, float]:
    """CPU seconds each owner used between two readings: by the processes alive at the second
    (one started between them counts from zero; one that ended between them is not seen, so a
    server that opens and closes database connections shows PostgreSQL's share too small)."""
    used: dict[str, float] = {}
    for (owner, pid), seconds in after.items():
        used[owner] = used.get(owner, 0.0) + seconds - before.get((owner, pid), 0.0)
    return used
