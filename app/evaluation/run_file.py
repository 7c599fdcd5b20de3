"""A run's record on disk: one JSON line per episode the run finished, appended and flushed as
each finishes, so a run killed at any moment keeps every episode it recorded, and a resumed run
skips them. A line the kill cut short is dropped on reading."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def episode_key(idx: object, repeat: int) -> str:
    """A run's episode: its task's idx and which repeat of the task it is."""
    return f"{idx}:{repeat}"


class RunFile:
    """`<directory>/<run>.jsonl`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of_run(cls, directory: Path, run: str) -> RunFile:
        return cls(directory / f"{run}.jsonl")

    def records(self) -> list[dict[str, Any]]:
        return list(self._read())

    def _read(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last line, cut short by a kill
            if isinstance(record, dict) and "key" in record:
                yield record

    def recorded_keys(self) -> set[str]:
        return {str(record["key"]) for record in self._read()}

    def repair(self) -> None:
        """End the file with a whole line: a line a kill cut short is dropped, so the next
        one starts on a line of its own."""
        if not self.path.exists():
            return
        text = self.path.read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            self.path.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self.path.open("a", encoding="utf-8") as out:
            out.write(line)
            out.flush()
            os.fsync(out.fileno())
