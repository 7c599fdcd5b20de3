"""CRMArena's own harness on a generated task file.

CRMArena's `run_tasks.py` takes its tasks and the schema it shows the agent from
`crm_sandbox.data.assets`, which downloads them from HuggingFace when imported (the published
tasks, whose Ids are the live orgs'). `use_task_file()` registers that module first, holding a
localforce task file's rows and the org's schema instead, so the harness runs unmodified on
generated tasks: nothing is downloaded, and the Ids are those of the org localforce serves.

Only the tasks CRMArena's environments can grade go in (exact match, fuzzy match, privacy
rejection); write tasks are graded by an episode's diff, through localforce's episodes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType

from app.config import Settings
from app.metadata.prompt_schema import crmarena_schema
from app.tasks.registry import external_facing

ASSETS_MODULE = "crm_sandbox.data.assets"
CRMARENA_METRICS = ("exact_match", "fuzzy_match", "privacy_rejection")
# The names `run_tasks.py` imports, per org: its task lists (Pro's plain and interactive
# runs read the same rows) and the schema it shows the agent.
TASK_LISTS = {
    "original": ("TASKS_ORIGINAL",),
    "b2b": ("TASKS_B2B", "TASKS_B2B_INTERACTIVE"),
    "b2c": ("TASKS_B2C", "TASKS_B2C_INTERACTIVE"),
}
SCHEMA_LISTS = {"original": "SCHEMA_ORIGINAL", "b2b": "B2B_SCHEMA", "b2c": "B2C_SCHEMA"}


def use_task_file(task_file: Path | str, *, org: str, seed_dir: Path | None = None) -> ModuleType:
    """Register `crm_sandbox.data.assets` holding the task file's rows for `org` (every other
    org's task lists empty); call it before the harness imports the module."""
    if org not in TASK_LISTS:
        raise ValueError(f"No CRMArena org is called {org} (known: {', '.join(TASK_LISTS)})")
    rows = json.loads(Path(task_file).read_text(encoding="utf-8"))
    tasks = [row for row in rows if row["reward_metric"] in CRMARENA_METRICS]
    seeds = seed_dir or Settings().seed_dir
    module = ModuleType(ASSETS_MODULE, "CRMArena's task assets, served from a localforce task file")
    for name, lists in TASK_LISTS.items():
        for task_list in lists:
            setattr(module, task_list, list(tasks) if name == org else [])
        setattr(module, SCHEMA_LISTS[name], crmarena_schema(name, seeds))
    # The types an agent answers as the company's customer-facing agent, as they declare it.
    module.EXTERNAL_FACING_TASKS = list(external_facing())  # type: ignore[attr-defined]
    module.TOOLS = None  # type: ignore[attr-defined]
    sys.modules[ASSETS_MODULE] = module
    return module
