"""Every function of app/ stays small: none over a cyclomatic complexity of 15 (radon's
measure), so that a clause's rules, a back end's, a route's or a generator step's can be read
one at a time."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit

MAX_COMPLEXITY = 15
APP = Path(__file__).parents[1] / "app"


def over_the_bound() -> list[str]:
    """`path:line name (complexity)` of each function, method or class of app/ over the bound."""
    return [
        f"app/{path.relative_to(APP).as_posix()}:{block.lineno} {block.fullname} "
        f"({block.complexity})"
        for path in sorted(APP.rglob("*.py"))
        for block in cc_visit(path.read_text(encoding="utf-8"))
        if block.complexity > MAX_COMPLEXITY
    ]


def test_no_function_is_over_the_complexity_bound() -> None:
    over = over_the_bound()
    assert not over, (
        f"{len(over)} function(s) of app/ over a cyclomatic complexity of {MAX_COMPLEXITY}: "
        "split each into well-named steps (or a table over an if-chain)\n  " + "\n  ".join(over)
    )
