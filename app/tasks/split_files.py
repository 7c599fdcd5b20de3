"""A split's parts as task files: drawn from their orgs (each generated from its seed into a
throwaway database), and kept by the server in its data directory, drawn on first use and
checked against the published SHA-256 whenever the file changed, so that an episode can name a
split's task by its idx and nobody sends the answers over the wire."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from app.tasks.generator import task_file_text
from app.tasks.model import TaskRow
from app.tasks.source import org_database
from app.tasks.splits import Split, split_named, verified_part


def draw_part(name: str, seed_dir: Path) -> list[TaskRow]:
    """A split's part ("crmarena-original@v1:test"), drawn from its org generated from each
    seed it is drawn from, its SHA-256 checked."""
    split, part = split_named(name)
    objects_dir = seed_dir / "orgs" / split.org / "objects"
    with contextlib.ExitStack() as stack:
        databases = {
            seed: stack.enter_context(org_database(objects_dir, org=split.org, seed=seed))
            for seed in split.seeds(part)
        }
        engines = {seed: database.engine for seed, database in databases.items()}
        tables = next(iter(databases.values())).tables
        return verified_part(engines, tables, split, part)


class SplitFiles:
    """The task files of the parts this server was asked for, under `directory`. One draw of
    a part at a time on the machine (a lock file: workers and servers sharing the data
    directory wait for the first); a file is trusted once its bytes hash to the published
    SHA-256, and checked again when its size or time changes."""

    def __init__(self, directory: Path, seed_dir: Path) -> None:
        self.directory = directory
        self.seed_dir = seed_dir
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._verified: dict[Path, tuple[int, int]] = {}

    def path(self, name: str) -> tuple[Split, Path]:
        """The split `name` names and its part's task file, drawn first if need be (a
        declared part only: SplitRefused names the known ones)."""
        split, part = split_named(name)
        path = self.directory / f"{split.id}.{part}.json"
        if self._trusted(path, split.sha256[part]):
            return split, path
        with self._drawing(path):
            if not self._trusted(path, split.sha256[part]):
                text = task_file_text(draw_part(f"{split.id}:{part}", self.seed_dir))
                partial = path.with_suffix(f".{os.getpid()}.partial")
                partial.write_text(text, encoding="utf-8")
                os.replace(partial, path)  # a reader sees the whole file or none
                self._trusted(path, split.sha256[part])
        return split, path

    def drawn(self, split: Split, part: str) -> bool:
        """Whether the part's file is here (and not yet checked: listing draws nothing)."""
        return (self.directory / f"{split.id}.{part}.json").exists()

    def _trusted(self, path: Path, sha256: str) -> bool:
        try:
            stat = path.stat()
        except FileNotFoundError:
            return False
        seen = (stat.st_size, stat.st_mtime_ns)
        if self._verified.get(path) == seen:
            return True
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
            return False  # another version's, or changed by hand: drawn again
        self._verified[path] = seen
        return True

    @contextlib.contextmanager
    def _drawing(self, path: Path) -> Iterator[None]:
        with self._locks_lock:
            lock = self._locks.setdefault(path.name, threading.Lock())
        self.directory.mkdir(parents=True, exist_ok=True)
        with lock, open(path.with_suffix(".lock"), "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(held, fcntl.LOCK_UN)
