"""Tasks: the scripted reference agent, the do-nothing agent and the random-answer agent, each on
N tasks of every type of each org, one episode per task over HTTP; the mean score per type of
each (the reference agent must score 1, the baselines near chance), and the time an episode
takes (create, the agent's calls, answer, delete).

Run: `make bench` (or `python -m bench.tasks_bench [--per-type N] [--org ORG]`). A type that
offers fewer than N distinct tasks on the seed runs all it has, and says so (the original
org's knowledge QA asks 22 questions).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from app.tasks.baselines import RandomAnswers, do_nothing
from app.tasks.generator import generate_tasks, task_file_text
from app.tasks.harness import Agent, run_tasks
from app.tasks.reference_agent import solve
from app.tasks.registry import TASK_TYPES
from bench.server import running_org
from tests.conftest import ADMIN_HEADERS

SEED = 42


def bench_org(org_name: str, per_type: int) -> None:
    with tempfile.TemporaryDirectory() as workdir, running_org(Path(workdir), org=org_name) as org:
        state = org.state
        started = time.perf_counter()
        rows = generate_tasks(
            state.engine, state.tables, org=org_name, seed=SEED, per_type=per_type, exact=False
        )
        spent = time.perf_counter() - started
        print(f"\n== {org_name}: {len(rows)} tasks generated in {spent:.1f} s")
        tasks: list[dict[str, Any]] = json.loads(task_file_text(rows))
        guesser = RandomAnswers(tasks, seed=1)
        agents: dict[str, Agent] = {
            "reference": solve,
            "do-nothing": lambda api, task: do_nothing(task),
            "random": lambda api, task: guesser(task),
        }
        scores: dict[str, dict[int, float]] = {}
        with httpx.Client(base_url=org.base_url, headers=ADMIN_HEADERS, timeout=120) as control:
            for name, agent in agents.items():
                started = time.perf_counter()
                scores[name] = run_tasks(control, tasks, agent)
                spent = (time.perf_counter() - started) * 1000 / len(tasks)
                print(f"{name}: {len(tasks)} episodes, {spent:.1f} ms an episode")
    print(f"\n{'task type':34} {'tasks':>5} " + " ".join(f"{name:>10}" for name in agents))
    for kind in dict.fromkeys(task["task"] for task in tasks):
        of_kind = [task["idx"] for task in tasks if task["task"] == kind]
        means = [sum(scores[name][i] for i in of_kind) / len(of_kind) for name in agents]
        fewer = "  (all the seed offers)" if len(of_kind) < per_type else ""
        print(
            f"{kind:34} {len(of_kind):>5} " + " ".join(f"{mean:>10.3f}" for mean in means) + fewer
        )
    overall = [sum(scores[name].values()) / len(tasks) for name in agents]
    print(f"{'all':34} {len(tasks):>5} " + " ".join(f"{mean:>10.3f}" for mean in overall))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-type", type=int, default=50)
    parser.add_argument("--org", choices=sorted(TASK_TYPES.orgs()), action="append")
    args = parser.parse_args()
    for org in args.org or TASK_TYPES.orgs():
        bench_org(org, args.per_type)


if __name__ == "__main__":
    main()
