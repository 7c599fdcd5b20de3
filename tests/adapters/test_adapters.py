"""The client distribution's trainer adapters, each with its real package from PyPI, in a
virtualenv of its own beside the server's (`make adapters`, which CI runs after `make test`:
the three virtualenvs take minutes to build and a few GB, and verifiers pins an mcp the server
cannot share). Each virtualenv gets the client installed from a copy of clients/python, then
runs its script (tests/adapters/scripts) against a server with a task file of 30 tasks, three
of each original type: the package's own loop, a scripted policy in place of a model, rewards
graded by the server and its results store holding each episode once.

- verifiers 0.4.0: `load_environment()` run by vf-eval's runner and by the environment's own
  rollout loop (localforce/verifiers.py).
- NeMo Gym 0.4.0 (it needs Python 3.12): the resources server driven by NeMo Gym's own simple
  agent, rollouts in parallel (localforce/nemo_gym.py).
- TRL 1.16 (CPU torch): the rollout function alone, then one GRPOTrainer step with the
  scripted policy and one with the trainer's own generation, on a tiny random model built
  locally (localforce/trl.py, examples/trl_grpo.py).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import localforce
import pytest

from app.config import REPO_ROOT
from tests.conftest import TEST_ADMIN_KEY
from tests.databases import DatabaseFactory
from tests.readme_examples import SPLIT, example
from tests.servers import serve_in_thread, task_file_app
from tests.stand_in_splits import stand_in_split, task_row
from tests.tasks.original_tasks import original_tasks

pytestmark = pytest.mark.adapters

VENVS = REPO_ROOT / "build" / "adapters"
SCRIPTS = Path(__file__).with_name("scripts")
CLIENT = REPO_ROOT / "clients" / "python"


def python_312() -> str | None:
    """A Python 3.12 that runs (NeMo Gym 0.2 to 0.4 need it; later ones need 3.13.14): the
    machine's pyenv builds, or one on the PATH (a pyenv shim may name one it cannot run)."""
    candidates = [*sorted(glob.glob("/root/.pyenv/versions/3.12*/bin/python3"))]
    candidates += [found] if (found := shutil.which("python3.12")) else []
    for candidate in candidates:
        if subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    return None


@dataclass(frozen=True)
class Adapter:
    script: str
    # pip's installs, in order (torch first, from the CPU build on disk, so that trl does not
    # pull a CUDA one).
    installs: tuple[tuple[str, ...], ...]
    python: str | None = sys.executable


ADAPTERS = {
    "verifiers": Adapter("verifiers_episodes.py", (("verifiers==0.4.0",),)),
    "nemo_gym": Adapter("nemo_gym_episodes.py", (("nemo-gym==0.4.0",),), python_312()),
    "trl": Adapter("trl_episodes.py", (("torch==2.13.0",), ("trl==1.16.0",))),
}


def adapter_python(name: str, adapter: Adapter, workdir: Path) -> str:
    """The adapter's virtualenv's Python, the virtualenv built once per set of installs (kept
    in build/adapters), with the client installed from a copy of its source this run."""
    if adapter.python is None:
        message = f"{name} needs a Python 3.12 (none on the PATH or in pyenv)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    venv = VENVS / name
    python = venv / "bin" / "python"
    stamp = venv / "installed.json"
    wanted = json.dumps([adapter.python, adapter.installs])
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != wanted:
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([adapter.python, "-m", "venv", venv], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        for packages in adapter.installs:
            subprocess.run([*pip, *packages], check=True)
        stamp.write_text(wanted, encoding="utf-8")
    # A copy: a build writes into its source tree.
    source = shutil.copytree(
        CLIENT, workdir / "client", ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--force-reinstall", "--no-deps", source], check=True)
    subprocess.run([*pip, source], check=True)  # and what it needs (httpx), if missing
    return str(python)


@pytest.fixture(scope="module")
def sqlite_only(database_factory: DatabaseFactory) -> None:
    if database_factory.backend != "sqlite":
        pytest.skip("the adapters reach the server over HTTP: its back end is not theirs")


@pytest.fixture(scope="module")
def served(
    sqlite_only: None,
    database_factory: DatabaseFactory,
    sandbox_ready_template: str,
    seeded_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, Path]]:
    """The server's URL, and its task file (the scripted policies read the answers there)."""
    tasks = original_tasks(seeded_template, per_type=3)
    directory = tmp_path_factory.mktemp("adapters")
    with pytest.MonkeyPatch.context() as patch:
        # The README's split: the task file's first three tasks (the scripted policies'
        # plans name them).
        stand_in_split(patch, [SPLIT], [task_row(row) for row in tasks[:3]])
        app = task_file_app(database_factory, sandbox_ready_template, tasks, directory)
        with serve_in_thread(app) as port:
            yield f"http://127.0.0.1:{port}", directory / "tasks.json"


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_adapter_runs_episodes_with_its_package(
    name: str, served: tuple[str, Path], tmp_path: Path
) -> None:
    url, answers = served
    adapter = ADAPTERS[name]
    python = adapter_python(name, adapter, tmp_path)
    env = {
        **os.environ,
        "LOCALFORCE_URL": url,
        "LOCALFORCE_ADMIN_KEY": TEST_ADMIN_KEY,
        "LOCALFORCE_ANSWERS": str(answers),
        "LOCALFORCE_OUT": str(tmp_path / "out"),
        "OMP_NUM_THREADS": "1",  # torch's: the server and the test share two cores
    }
    ran = subprocess.run(
        [python, str(SCRIPTS / adapter.script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert ran.returncode == 0, f"{ran.stdout[-6000:]}\n{ran.stderr[-4000:]}"


@dataclass(frozen=True)
class ReadmeExample:
    """What a trainer's README example is given beside URL and KEY (the names the README's
    text gives it), and what it prints on the split's three tasks."""

    given: str
    # Whether its last printed line is right, given the split's tasks.
    printed: Callable[[str, list[dict[str, Any]]], bool]


README_EXAMPLES = {
    # The verifiers script's scripted policy (imported: its CLIENT routes to it) plays the
    # tasks right, wrong, and right as text.
    "verifiers": ReadmeExample(
        "from verifiers_episodes import CLIENT\nMODEL = 'scripted-policy'\n",
        lambda line, tasks: line.endswith("[1.0, 0.0, 1.0]"),
    ),
    "nemo_gym": ReadmeExample(
        "",
        lambda line, tasks: repr({"role": "user", "content": tasks[0]["query"]}) in line,
    ),
    # The tiny random model of examples/trl_grpo.py, one step of two episodes.
    "trl": ReadmeExample(
        "from trl_grpo import grpo_args, tiny_model, tiny_tokenizer\n"
        "TOKENIZER = tiny_tokenizer()\nMODEL = tiny_model(TOKENIZER)\n"
        "ARGS = grpo_args(steps=1, num_generations=2, max_completion_length=64)\n",
        lambda line, tasks: True,  # the trainer's log: the results are checked
    ),
}


@pytest.mark.parametrize("name", sorted(README_EXAMPLES))
def test_the_readmes_example_runs_with_its_package(
    name: str, served: tuple[str, Path], tmp_path: Path
) -> None:
    url, answers = served
    python = adapter_python(name, ADAPTERS[name], tmp_path)
    given = README_EXAMPLES[name]
    script = tmp_path / f"readme_{name}.py"
    script.write_text(
        "import os\nURL, KEY = os.environ['LOCALFORCE_URL'], os.environ['LOCALFORCE_ADMIN_KEY']\n"
        + given.given
        + example(name)
        + "\n",
        encoding="utf-8",
    )
    before = {r["episode"] for r in localforce.Control(url, TEST_ADMIN_KEY).results()}
    env = {
        **os.environ,
        "LOCALFORCE_URL": url,
        "LOCALFORCE_ADMIN_KEY": TEST_ADMIN_KEY,
        "LOCALFORCE_ANSWERS": str(answers),
        "LOCALFORCE_OUT": str(tmp_path / "out"),
        "PYTHONPATH": os.pathsep.join([str(SCRIPTS), str(REPO_ROOT / "examples")]),
        "OMP_NUM_THREADS": "1",
    }
    ran = subprocess.run(
        [python, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert ran.returncode == 0, f"{ran.stdout[-4000:]}\n{ran.stderr[-4000:]}"
    tasks = json.loads(answers.read_text(encoding="utf-8"))[:3]
    last = (ran.stdout.strip().splitlines() or [""])[-1]
    assert given.printed(last, tasks), ran.stdout[-2000:]
    results = [
        r for r in localforce.Control(url, TEST_ADMIN_KEY).results() if r["episode"] not in before
    ]
    # Each episode the example played is kept once, a task of the split: verifiers' three
    # graded as printed, NeMo Gym's data set none (its rows' episodes are purged), TRL's
    # step two (a random model's: their answers are whatever it wrote, if any).
    played = {"verifiers": 3, "nemo_gym": 0, "trl": 2}[name]
    assert len(results) == played and all(r["idx"] in (0, 1, 2) for r in results), results
    if name == "verifiers":
        assert sorted(r["reward"] for r in results) == [0.0, 1.0, 1.0], results
