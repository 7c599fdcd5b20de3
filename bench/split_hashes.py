"""Every part of every split drawn here against its published SHA-256, with its counts, the
seeds it was drawn from and the time it took; the exit status is 1 if one differs.

The test suite checks the test parts (the original org's on SQLite and PostgreSQL) and the
original org's train part; this also draws the Pro orgs' train parts, five sibling orgs each
(about a minute and a half a part).

Run: `make bench` (or `python -m bench.split_hashes [PART ...]`, e.g.
`crmarena-pro-b2c@v1:train`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from app.config import Settings
from app.tasks.split_files import draw_part
from app.tasks.splits import PARTS, SPLITS, SplitRefused


def check(name: str) -> bool:
    started = time.perf_counter()
    try:
        rows = draw_part(name, Settings().seed_dir)
    except SplitRefused as refused:
        print(f"{name}: DIFFERS: {refused}")
        return False
    nones = sum(row.answer in (None, [None]) for row in rows)
    seeds = sorted(Counter(row.seed for row in rows).items(), key=lambda item: str(item[0]))
    print(
        f"{name}: {len(rows)} tasks of {len({row.task for row in rows})} types, "
        f"{nones / len(rows):.0%} None, seeds {dict(seeds)}, matches its SHA-256 "
        f"({time.perf_counter() - started:.1f} s)"
    )
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    every = [f"{split.id}:{part}" for split in SPLITS for part in PARTS]
    parser.add_argument("parts", nargs="*", default=every, help="parts to draw (default: all)")
    names = parser.parse_args().parts
    failed = [name for name in names if not check(name)]
    if failed:
        print(f"{len(failed)} of {len(names)} parts differ from their published SHA-256")
        sys.exit(1)


if __name__ == "__main__":
    main()
