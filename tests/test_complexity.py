"""The SOQL engine stays in small functions: none over a cyclomatic complexity of 15 (radon's
measure), so that a clause's rules can be read one at a time."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

MAX_COMPLEXITY = 15
CHECKED = Path(__file__).parents[1] / "app" / "soql"


def test_no_soql_function_is_over_the_complexity_bound() -> None:
    over = [
        f"{path.name}:{block.lineno} {block.fullname} ({block.complexity})"
        for path in sorted(CHECKED.glob("*.py"))
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if block.complexity > MAX_COMPLEXITY
    ]
    assert over == []
