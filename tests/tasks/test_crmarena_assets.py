"""CRMArena's harness takes a generated task file: `use_task_file` registers the assets module
`run_tasks.py` imports, holding the file's gradable rows and the org's schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import REPO_ROOT
from app.crmarena import ASSETS_MODULE, use_task_file
from tests.tasks.original_tasks import original_tasks


@pytest.fixture(autouse=True)
def _no_assets_left_behind() -> Iterator[None]:
    yield
    sys.modules.pop(ASSETS_MODULE, None)


def test_the_harness_imports_the_generated_tasks_and_the_orgs_schema(
    tmp_path: Path, seeded_template: str
) -> None:
    rows = original_tasks(seeded_template, per_type=2)
    task_file = tmp_path / "tasks.json"
    task_file.write_text(json.dumps(rows), encoding="utf-8")
    use_task_file(task_file, org="original")

    # What run_tasks.py does with them: import, pick a category, key by idx.
    from crm_sandbox.data.assets import (  # type: ignore[import-not-found]
        EXTERNAL_FACING_TASKS,
        SCHEMA_ORIGINAL,
        TASKS_B2B,
        TASKS_ORIGINAL,
    )

    written = json.loads(task_file.read_text(encoding="utf-8"))
    gradable = [row for row in written if row["reward_metric"] != "diff_match"]
    assert gradable == TASKS_ORIGINAL
    # The write tasks stay out: two of case_routing_write, two of each administrator's type.
    assert len(gradable) == len(written) - 8
    assert TASKS_B2B == []
    selected = {t["idx"]: t for t in TASKS_ORIGINAL if t["task"] == "handle_time"}
    assert [t["task"] for t in selected.values()] == ["handle_time", "handle_time"]
    objects = {row["object"]: row["fields"] for row in SCHEMA_ORIGINAL}
    assert len(objects) == 16
    assert objects["Case"]["OwnerId"] == "Owner ID"
    assert "knowledge_qa" in EXTERNAL_FACING_TASKS


def test_a_pro_file_fills_the_orgs_plain_and_interactive_lists(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"idx": 0, "task": "lead_routing", "answer": ["005Lf000000000GIAQ"],
         "reward_metric": "exact_match"},
        {"idx": 1, "task": "lead_routing_write", "answer": [],
         "reward_metric": "diff_match"},
        {"idx": 2, "task": "internal_operation_data", "answer": [None],
         "reward_metric": "privacy_rejection"},
    ]  # fmt: skip
    task_file = tmp_path / "b2b.json"
    task_file.write_text(json.dumps(rows), encoding="utf-8")
    assets = use_task_file(task_file, org="b2b")
    assert assets.TASKS_B2B == assets.TASKS_B2B_INTERACTIVE == [rows[0], rows[2]]
    assert assets.TASKS_ORIGINAL == assets.TASKS_B2C == []
    assert len(assets.B2B_SCHEMA) == 27
    assert sys.modules[ASSETS_MODULE] is assets


def test_an_unknown_org_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="No CRMArena org is called b2x"):
        use_task_file(tmp_path / "none.json", org="b2x")
    assert ASSETS_MODULE not in sys.modules


HARNESS_IMPORT = (
    "from crm_sandbox.data.assets import TASKS_ORIGINAL, SCHEMA_ORIGINAL, TASKS_B2B, "
    "TASKS_B2B_INTERACTIVE, TASKS_B2C, TASKS_B2C_INTERACTIVE, B2B_SCHEMA, B2C_SCHEMA, "
    "EXTERNAL_FACING_TASKS\n"
)


def test_the_readmes_launcher_runs_the_harness_script_on_the_file(tmp_path: Path) -> None:
    """The launcher of the tasks guide, in a fresh interpreter, before a script that imports what
    run_tasks.py imports, exactly as it does."""
    rows = [{"idx": 7, "task": "handle_time", "answer": None, "reward_metric": "exact_match"}]
    (tmp_path / "tasks.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "run_tasks.py").write_text(
        HARNESS_IMPORT
        + "import sys\nprint(len(TASKS_ORIGINAL), TASKS_ORIGINAL[0]['idx'], len(TASKS_B2B),"
        " len(SCHEMA_ORIGINAL), sys.argv[1:])\n",
        encoding="utf-8",
    )
    (tmp_path / "run_localforce.py").write_text(
        "import runpy\nimport sys\n\nfrom app.crmarena import use_task_file\n\n"
        'use_task_file("tasks.json", org="original")\n'
        'sys.argv = ["run_tasks.py", *sys.argv[1:]]\n'
        'runpy.run_path("run_tasks.py", run_name="__main__")\n',
        encoding="utf-8",
    )
    ran = subprocess.run(
        [sys.executable, "run_localforce.py", "--org_type", "original"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "1 7 0 16 ['--org_type', 'original']\n"
