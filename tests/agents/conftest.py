"""The tasks of the agents' tests: two of every original type."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tasks.original_tasks import original_tasks


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    """Two tasks of every original type."""
    return original_tasks(seeded_template, per_type=2)
