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


def cpu_by_owner(server_group: int) -> dict[str, float]:
    """CPU seconds used so far by the server's process group and by PostgreSQL's processes."""
    used = {"server": 0.0, "postgres": 0.0}
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit():
            continue
        fields = _stat_fields(pid_dir)
        if fields is None:
            continue
        if int(fields[3]) == server_group:
            used["server"] += _cpu_seconds(fields)
        elif fields[0] == "postgres":
            used["postgres"] += _cpu_seconds(fields)
    return used
