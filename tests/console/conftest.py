"""The console's tests share the original org's task file (one task of each type), served as
the server's LOCALFORCE_TASK_FILE."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tasks.original_tasks import original_tasks


@pytest.fixture(scope="module")
def tasks(seeded_template: str) -> list[dict[str, Any]]:
    return original_tasks(seeded_template, per_type=1)
