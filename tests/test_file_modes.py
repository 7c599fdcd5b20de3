"""Files holding secrets are readable by their owner only, whatever mode they had before."""

from __future__ import annotations

import stat
from pathlib import Path

from app.config import Settings
from app.main import prepare_databases
from app.state import build_state
from app.tls import ensure_certificates


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_sqlite_databases_are_0600_even_if_they_were_not(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    state = build_state(settings)
    prepare_databases(state)
    files = [Path(settings.effective_database_url.removeprefix("sqlite:///"))]
    files.append(Path(settings.platform_database_url.removeprefix("sqlite:///")))
    assert all(path.exists() for path in files)
    for path in files:
        path.chmod(0o644)  # as an earlier version left them
    prepare_databases(state)
    assert [mode(path) for path in files] == [0o600, 0o600]
    state.engine.dispose()
    state.platform.dispose()


def test_the_tls_key_is_0600_when_made_and_when_found(tmp_path: Path) -> None:
    files, created = ensure_certificates(tmp_path)
    assert created and mode(files.key_file) == 0o600
    files.key_file.chmod(0o644)
    ensure_certificates(tmp_path)
    assert mode(files.key_file) == 0o600
    files.cert_file.unlink()  # regenerated: the old key file's mode must not survive
    files.key_file.chmod(0o644)
    _, created = ensure_certificates(tmp_path)
    assert created and mode(files.key_file) == 0o600
