"""README.md's examples, by name: the python block after each `<!-- example: NAME -->` line,
and the tests that run them (tests/test_readme.py holds the two lists to each other).

An example reads the names the README's text gives it (URL, KEY, and what each one's text
names: MODEL, CLIENT, TOKENIZER, ARGS); the test that runs it binds them."""

from __future__ import annotations

import re

from app.config import REPO_ROOT

README = REPO_ROOT / "README.md"
EXAMPLE = re.compile(r"<!-- example: (\w+) -->\n```python\n(.*?)\n```\n", re.DOTALL)
# Where each example runs: in `make test`, or with its trainer's package in `make adapters`.
RUN_BY = {
    "gym": "tests/clients/test_readme_examples.py",
    "openenv": "tests/clients/test_readme_examples.py",
    "verifiers": "tests/adapters/test_adapters.py",
    "nemo_gym": "tests/adapters/test_adapters.py",
    "trl": "tests/adapters/test_adapters.py",
}
# The README's split: the tests serve a part of their own under its name (stand_in_split).
SPLIT = "crmarena-original@v1:train"


def examples() -> dict[str, str]:
    """Each example's code, by name, in the README's order."""
    return dict(EXAMPLE.findall(README.read_text(encoding="utf-8")))


def example(name: str) -> str:
    return examples()[name]
