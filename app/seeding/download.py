"""Fetching a dump by URL (streamed to a temporary file) and checking files against a sha256."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

import requests

from app.seeding.dump_reader import DumpError
from app.seeding.importer import file_sha256

DownloadProgress = Callable[[int, int | None], None]
CHUNK = 1 << 16
TIMEOUT = (15, 120)  # seconds to connect, seconds between bytes
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def is_url(location: str) -> bool:
    return urlparse(location).scheme in {"http", "https"}


def check_sha256_format(expected: str) -> str:
    if not _SHA256.match(expected):
        raise DumpError(f"--sha256 must be 64 hexadecimal digits, not {expected!r}")
    return expected.lower()


def verify_sha256(path: Path, expected: str, actual: str | None = None) -> str:
    """The file's sha256, after checking it is `expected`."""
    wanted = check_sha256_format(expected)
    found = actual or file_sha256(path)
    if found != wanted:
        raise DumpError(
            f"Checksum mismatch for {path.name}: expected sha256 {wanted}, got {found}. "
            "The file is not the dump you meant (or it is damaged): nothing was imported."
        )
    return found


def download(
    url: str,
    directory: Path,
    *,
    sha256: str | None = None,
    on_progress: DownloadProgress | None = None,
) -> Path:
    """Stream `url` into a file in `directory` (the caller's, to delete); check its sha256 when
    one is given."""
    if sha256 is not None:
        check_sha256_format(sha256)
    name = Path(unquote(urlparse(url).path)).name or "dump.db"
    target = directory / name
    digest = hashlib.sha256()
    try:
        with requests.get(url, stream=True, timeout=TIMEOUT) as response:
            if response.status_code != 200:
                raise DumpError(
                    f"Download of {url} failed: HTTP {response.status_code} {response.reason}"
                )
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            done = 0
            with target.open("wb") as handle:
                for block in response.iter_content(CHUNK):
                    handle.write(block)
                    digest.update(block)
                    done += len(block)
                    if on_progress is not None:
                        on_progress(done, total)
            if total is not None and done != total:
                raise DumpError(f"Download of {url} stopped after {done} of {total} bytes")
    except requests.RequestException as error:
        raise DumpError(
            f"Could not download {url}: {error.__class__.__name__}: {error}. Without network "
            "access, download the file elsewhere and import it by path."
        ) from None
    if sha256 is not None:
        verify_sha256(target, sha256, digest.hexdigest())
    return target
