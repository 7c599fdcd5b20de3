"""The server's admin key, which the examples' control-plane calls carry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def admin_key() -> str:
    """LOCALFORCE_ADMIN_KEY, else what `localforce admin-key` prints (run from the server's
    directory: it reads the key the server keeps in ./data)."""
    given = os.environ.get("LOCALFORCE_ADMIN_KEY")
    if given:
        return given
    beside = Path(sys.executable).with_name("localforce")  # this environment's command
    command = str(beside) if beside.exists() else "localforce"
    printed = subprocess.run(
        [command, "admin-key"], check=True, capture_output=True, text=True, timeout=60
    )
    return printed.stdout.strip()
