"""The SOQL engine and the back ends stay in small functions: none over a cyclomatic complexity
of 15 (radon's measure), so that a clause's rules, or a back end's, can be read one at a time."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

MAX_COMPLEXITY = 15
APP = Path(__file__).parents[1] / "app"
CHECKED = (APP / "soql", APP / "storage" / "backends")


def test_no_function_is_over_the_complexity_bound() -> None:
    over = [
        f"{path.relative_to(APP)}:{block.lineno} {block.fullname} ({block.complexity})"
        for package in CHECKED
        for path in sorted(package.glob("*.py"))
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if block.complexity > MAX_COMPLEXITY
    ]
    assert over == []
