"""`localforce eval` over a task file, with a model that costs nothing: the fake OpenAI-compatible
server's `reference` model (tests/evaluation/fake_model.py), which replays the reference agent
and answers at once. What is left is localforce's and the runner's own time: the wall time and
episodes a second at concurrency 1 (the floor) and N, their ratio, and the share of an
episode's time spent outside the model. localforce runs as its own process (`localforce
serve`, its default workers); the runner and the fake model share this one.

Run: `make bench` (or `python -m bench.eval_bench [--per-type N | --split NAME:PART]
[--concurrency N]`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from app.config import REPO_ROOT, Settings
from app.evaluation.evaluate import ModelEndpoint, evaluate
from app.evaluation.run_file import RunFile
from app.evaluation.runner import Plan
from app.tasks.generator import generate_tasks, task_file_text
from app.tasks.source import org_database
from app.tasks.split_files import draw_part
from app.tasks.splits import split_named
from bench.server import seeded_data_dir
from tests.conftest import TEST_ADMIN_KEY
from tests.evaluation.fake_model import FakeModels
from tests.processes import Deployment, running
from tests.servers import serve_in_thread

SEED = 42
ORIGINAL_OBJECTS = REPO_ROOT / "seed" / "orgs" / "original" / "objects"


def timed_run(
    tasks: list[dict[str, Any]],
    base_url: str,
    models_url: str,
    concurrency: int,
    runs: Path,
    org: tuple[str, int],
) -> tuple[float, list[dict[str, Any]]]:
    name = f"{runs.name}-c{concurrency}"  # its own episodes
    endpoint = ModelEndpoint(name="reference", base_url=models_url, api_key="none")
    plan = Plan(run=name, tasks=tasks, concurrency=concurrency, org=org[0], seed=org[1])
    started = time.perf_counter()
    records = evaluate(
        plan, endpoint, base_url, TEST_ADMIN_KEY, RunFile.of_run(runs, name), resume=False
    )
    return time.perf_counter() - started, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-type", type=int, default=10)
    parser.add_argument(
        "--split", help="Run a split's part (e.g. crmarena-original@v1:test) instead"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        data_dir = seeded_data_dir(Path(workdir))
        org_name, seed = "original", SEED
        if args.split:  # drawn from its own orgs; its episodes on the split's org and seeds
            split = split_named(args.split)[0]
            org_name, seed = split.org, split.seed
            rows = draw_part(args.split, Settings().seed_dir)
        else:
            url = Settings(data_dir=data_dir).effective_database_url
            with org_database(ORIGINAL_OBJECTS, org=org_name, seed=SEED, database_url=url) as org:
                rows = generate_tasks(
                    org.engine, org.tables, org=org_name, seed=SEED, per_type=args.per_type
                )
        tasks: list[dict[str, Any]] = json.loads(task_file_text(rows))
        on = (org_name, seed)
        with (
            running(Deployment(data_dir, "")) as server,
            serve_in_thread(FakeModels(tasks).app) as port,
        ):
            models_url = f"http://127.0.0.1:{port}/v1"
            # The first episodes pay for what a server builds once (the sandbox template,
            # the schema, compiled statements): a run of its own, not timed.
            timed_run(tasks[:4], server.base, models_url, 4, Path(workdir) / "warm-up", on)
            figures = {}
            for concurrency in (1, args.concurrency):
                wall, records = timed_run(
                    tasks, server.base, models_url, concurrency, Path(workdir) / "timed", on
                )
                mean = sum(float(record["reward"]) for record in records) / len(records)
                busy = sum(float(record["seconds"]) for record in records)
                model = sum(float(record["model_seconds"]) for record in records)
                figures[concurrency] = wall
                print(
                    f"concurrency {concurrency:3}: {len(records)} episodes in {wall:6.1f} s, "
                    f"{len(records) / wall:5.2f} episodes/s, mean reward {mean:.3f}, "
                    f"{1 - model / busy:.0%} of episode time outside the model"
                )
            speedup = figures[1] / figures[args.concurrency]
            print(f"concurrency {args.concurrency} runs {speedup:.2f}x as fast as the floor (1)")


if __name__ == "__main__":
    main()
