"""The SOQL and SOSL engines, the back ends and the API's routes stay in small functions: none
over a cyclomatic complexity of 15 (radon's measure), so that a clause's rules, a back end's or
a route's can be read one at a time."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

MAX_COMPLEXITY = 15
APP = Path(__file__).parents[1] / "app"
CHECKED = (APP / "soql", APP / "sosl", APP / "storage" / "backends", APP / "api")


def test_no_function_is_over_the_complexity_bound() -> None:
    over = [
        f"{path.relative_to(APP)}:{block.lineno} {block.fullname} ({block.complexity})"
        for package in CHECKED
        for path in sorted(package.glob("*.py"))
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if block.complexity > MAX_COMPLEXITY
    ]
    assert over == []
