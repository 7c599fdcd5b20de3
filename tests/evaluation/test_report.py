"""`localforce report`: the statistics (pass^k, the interval of a mean), the Markdown of two
runs side by side, and the HTML page in Chromium: no console error, and the per-type chart
shows both runs' bars."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import Browser, sync_playwright
from typer.testing import CliRunner

from app.cli import cli
from app.config import REPO_ROOT
from app.evaluation.report import markdown, read_runs
from app.evaluation.statistics import group_stats, mean_interval, pass_hat_k

CHROMIUM = os.environ.get("LOCALFORCE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(
    os.environ.get("LOCALFORCE_TEST_ARTIFACTS", REPO_ROOT / "build" / "test-artifacts")
)
# matplotlib's first two colours: the first run's bars, the second's.
RUN_COLOURS = ((0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E))


def record(idx: int, task: str, reward: float, repeat: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "key": f"{idx}:{repeat}", "idx": idx, "repeat": repeat, "task": task,
        "episode": f"ev-{idx}-{repeat}", "model": "m", "agent": "react", "status": "answered",
        "failure": None, "answer": "x", "reward": reward, "turns": 4, "tool_calls": 3,
        "tool_errors": 0, "tokens_in": 1000, "tokens_out": 50, "seconds": 2.5,
    } | fields  # fmt: skip


def test_pass_hat_k_is_the_chance_that_k_tries_all_succeed() -> None:
    # Task 1 succeeds 2 of 3 tries, task 2 in all 3: pass^1 = (2/3 + 1) / 2,
    # pass^2 = (C(2,2)/C(3,2) + 1) / 2, pass^3 = (0 + 1) / 2.
    records = [record(1, "t", r, k) for k, r in enumerate((1.0, 0.0, 1.0))]
    records += [record(2, "t", 1.0, k) for k in range(3)]
    assert pass_hat_k(records) == pytest.approx({1: 5 / 6, 2: 2 / 3, 3: 0.5})
    # A partial reward is not a success.
    assert pass_hat_k([record(1, "t", 0.5)]) == {1: 0.0}


def test_the_interval_holds_the_mean_and_is_the_same_each_time() -> None:
    rewards = [1.0] * 7 + [0.0] * 3
    low, high = mean_interval(rewards)
    assert low < 0.7 < high and low > 0.3 and high <= 1.0
    assert mean_interval(rewards) == (low, high)
    assert mean_interval([1.0]) == (1.0, 1.0)
    assert mean_interval([0.5] * 20) == (0.5, 0.5)


def test_a_group_counts_failures_and_means_what_it_records() -> None:
    stats = group_stats(
        "g",
        [record(1, "t", 1.0), record(2, "t", 0.0, status="failed", tokens_in=None, turns=8)],
    )
    assert (stats.episodes, stats.failed, stats.mean_reward) == (2, 1, 0.5)
    assert (stats.turns, stats.tokens_in, stats.seconds) == (6.0, 1000.0, 2.5)


def test_the_judge_disagreement_counts_the_episodes_it_graded() -> None:
    stats = group_stats(
        "g",
        [record(1, "t", 1.0, judge_reward=1.0), record(2, "t", 1.0, judge_reward=0.0),
         record(3, "t", 0.0, judge_reward=0.0), record(4, "t", 0.5, judge_reward=None)],
    )  # fmt: skip
    assert (stats.judged, stats.disagreement) == (3, 1 / 3)
    assert group_stats("g", [record(1, "t", 1.0)]).disagreement is None


def write_run(directory: Path, name: str, records: list[dict[str, Any]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row) + "\n" for row in records)
    (directory / f"{name}.jsonl").write_text(text, encoding="utf-8")


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(
        runs,
        "first",
        [record(1, "handle_time", 1.0), record(2, "handle_time", 0.0),
         record(3, "knowledge_qa", 0.5), record(4, "case_routing", 1.0)],
    )  # fmt: skip
    write_run(
        runs,
        "second",
        [record(1, "handle_time", 1.0, model="n"), record(2, "handle_time", 1.0, model="n"),
         record(3, "knowledge_qa", 0.25, model="n")],
    )  # fmt: skip
    return runs


def test_the_markdown_puts_the_runs_side_by_side(two_runs: Path) -> None:
    text = markdown(read_runs(two_runs, ["first", "second"]))
    lines = text.splitlines()
    assert lines[0] == "# localforce report"
    assert (
        "| first | m | react | 4 | 0 | 0.625 [0.250, 1.000] |  | 4.0 | 3.0 | 1,000 | 50 | 2.50 |  |"
        in lines
    )
    second = "| second | n | react | 3 | 0 | 0.750 [0.250, 1.000] |  | 4.0 | 3.0 | 1,000 | 50 |"
    assert f"{second} 2.50 |  |" in lines
    at = lines.index("## Mean reward by task type")
    assert lines[at + 2 : at + 7] == [
        "| task type | skill | first | second |",
        "| --- | --- | --- | --- |",
        "| handle_time | Database querying and numerical computation | 0.500 [0.000, 1.000] "
        "| 1.000 [1.000, 1.000] |",
        "| knowledge_qa | Text reasoning | 0.500 [0.500, 0.500] | 0.250 [0.250, 0.250] |",
        "| case_routing | Workflow execution | 1.000 [1.000, 1.000] |  |",
    ]
    assert "## Run second" in lines


def test_a_run_without_a_file_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", "nope", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "No run nope:" in result.output


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists() and os.environ.get("CI") != "true":
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


def test_the_html_opens_in_chromium_and_shows_the_per_type_chart(
    two_runs: Path, tmp_path: Path, browser: Browser
) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(
        cli, ["report", "first", "second", "--runs-dir", str(two_runs), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# localforce report")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    page.on("requestfailed", lambda request: problems.append(f"failed: {request.url}"))
    page.goto((out / "report.html").as_uri())
    chart = page.locator("#chart-by-type svg")
    box = chart.bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 200
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-chart-by-type.png"
    chart.screenshot(path=shot)
    page.close()
    assert problems == []
    colours = Image.open(shot).convert("RGB").getcolors(1 << 24)
    assert colours is not None
    counts = {colour: count for count, colour in colours}
    for colour in RUN_COLOURS:  # each run's bars are drawn
        assert counts.get(colour, 0) > 500, colour
