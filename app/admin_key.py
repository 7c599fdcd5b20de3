"""The operator's key to the control plane and the console: LOCALFORCE_ADMIN_KEY, else one
made at first start and kept in the data directory, so that every worker, and every server
sharing that directory, asks for the same key."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from app.config import Settings

KEY_FILE = "admin-key"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


class InsecureOnPublicAddress(ValueError):
    """An open control plane was asked for on an address other machines reach."""


def key_path(data_dir: Path) -> Path:
    return data_dir / KEY_FILE


def stored_key(data_dir: Path) -> str:
    """The key kept in `data_dir`, made now if there is none (readable by its owner only)."""
    path = key_path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        # O_EXCL: of processes starting at once, one makes the file and the others read it.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        path.chmod(0o600)  # whatever mode it was given by hand
        return _read_key(path)
    key = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(key + "\n")
    return key


def _read_key(path: Path, wait_seconds: float = 5.0) -> str:
    # The process that made the file may not have written the key yet: wait a moment for it.
    deadline = time.monotonic() + wait_seconds
    while True:
        key = path.read_text(encoding="utf-8").strip()
        if key:
            return key
        if time.monotonic() > deadline:
            raise RuntimeError(f"{path} holds no key: delete it and start again")
        time.sleep(0.05)


def check_control_plane(settings: Settings) -> None:
    """An insecure control plane asks for no key, and is served on a loopback address only."""
    if settings.insecure_control_plane and settings.host not in LOOPBACK_HOSTS:
        raise InsecureOnPublicAddress(
            f"An open control plane (--insecure-control-plane) is served on a loopback "
            f"address only (127.0.0.1, ::1, localhost), not on {settings.host}."
        )


def with_admin_key(settings: Settings) -> Settings:
    """`settings` with the key the control plane asks for: LOCALFORCE_ADMIN_KEY if set, else
    the data directory's (made now if it has none: so call this once the data directory is
    known to be this server's). An insecure control plane asks for none."""
    check_control_plane(settings)
    if settings.insecure_control_plane or settings.admin_key:
        return settings
    return settings.model_copy(update={"admin_key": stored_key(settings.data_dir)})
