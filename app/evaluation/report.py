"""`localforce report`: runs side by side, as Markdown and as one self-contained HTML page
(its charts inline SVG drawn by matplotlib, no script, nothing fetched).

Each run is read from its file (app.evaluation.run_file): per task type and per skill (the
type's declared skill, app.tasks.model.SKILLS), the mean reward with its confidence interval,
pass^k where tasks were repeated, failures, and the cost per episode."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from matplotlib.figure import Figure

from app.evaluation.run_file import RunFile
from app.evaluation.statistics import CONFIDENCE, GroupStats, group_stats, grouped
from app.tasks.registry import TASK_TYPES

OTHER_SKILL = "Other"  # a type no declaration names (a task file of CRMArena's own)
TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("app.evaluation", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


class ReportRefused(Exception):
    """A run to report has no file, or no episode recorded."""


def skill_of(task: str) -> str:
    kind = TASK_TYPES.first(task)
    return kind.skill if kind is not None else OTHER_SKILL


@dataclass(frozen=True)
class RunReport:
    name: str
    models: str
    agents: str
    overall: GroupStats
    by_type: dict[str, GroupStats]
    by_skill: dict[str, GroupStats]


def run_report(name: str, records: Sequence[dict[str, Any]]) -> RunReport:
    if not records:
        raise ReportRefused(f"Run {name} has no episode recorded")
    return RunReport(
        name=name,
        models=", ".join(sorted({str(record.get("model")) for record in records})),
        agents=", ".join(sorted({str(record.get("agent")) for record in records})),
        overall=group_stats("all", records),
        by_type={stats.name: stats for stats in grouped(records, lambda r: str(r["task"]))},
        by_skill={
            stats.name: stats for stats in grouped(records, lambda r: skill_of(str(r["task"])))
        },
    )


def read_runs(runs_dir: Path, names: Sequence[str]) -> list[RunReport]:
    reports = []
    for name in names:
        run_file = RunFile.of_run(runs_dir, name)
        if not run_file.path.exists():
            raise ReportRefused(f"No run {name}: {run_file.path} does not exist")
        reports.append(run_report(name, run_file.records()))
    return reports


def _union(groups: Sequence[dict[str, GroupStats]]) -> list[str]:
    """Every group's name, in the order the runs first give them."""
    return list(dict.fromkeys(name for group in groups for name in group))


def chart_svg(reports: Sequence[RunReport], level: str) -> str:
    """A bar chart of the mean reward (its interval as the error bar) per task type or skill
    (`level`: "by_type" or "by_skill"), the runs side by side; as SVG text."""
    groups = [getattr(report, level) for report in reports]
    names = _union(groups)
    figure = Figure(figsize=(max(6.0, 0.9 * len(names) + 2), 4.5), layout="constrained")
    axes = figure.add_subplot()
    width = 0.8 / len(reports)
    for position, (report, group) in enumerate(zip(reports, groups, strict=True)):
        shown = [(i, group[name]) for i, name in enumerate(names) if name in group]
        xs = [i - 0.4 + width * (position + 0.5) for i, _ in shown]
        means = [stats.mean_reward for _, stats in shown]
        errors = [
            [stats.mean_reward - stats.low for _, stats in shown],
            [stats.high - stats.mean_reward for _, stats in shown],
        ]
        axes.bar(xs, means, width, yerr=errors, capsize=3, label=report.name)
    axes.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    axes.set_ylim(0, 1.05)
    axes.set_ylabel(f"mean reward ({CONFIDENCE:.0%} interval)")
    axes.legend(fontsize=8)
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # inline: without the XML declaration and doctype


def _reward(stats: GroupStats | None) -> str:
    if stats is None:
        return ""
    return f"{stats.mean_reward:.3f} [{stats.low:.3f}, {stats.high:.3f}]"


def _number(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def _pass_k(stats: GroupStats) -> str:
    if len(stats.pass_k) < 2:  # pass^1 is the success rate: shown only beside a higher k
        return ""
    return ", ".join(f"^{k} {value:.3f}" for k, value in stats.pass_k.items())


def _disagreement(stats: GroupStats) -> str:
    if stats.disagreement is None:
        return ""
    return f"{stats.disagreement:.1%} of {stats.judged}"


def tables(reports: Sequence[RunReport]) -> dict[str, Any]:
    """The report's tables, each a header and rows of text: what both formats show."""
    overview = {
        "header": ["run", "model", "agent", "episodes", "failed", "mean reward [95% CI]",
                   "pass^k", "turns", "tool calls", "tokens in", "tokens out", "seconds",
                   "judge disagrees"],
        "rows": [
            [report.name, report.models, report.agents, str(report.overall.episodes),
             str(report.overall.failed), _reward(report.overall), _pass_k(report.overall),
             _number(report.overall.turns), _number(report.overall.tool_calls),
             _number(report.overall.tokens_in, 0), _number(report.overall.tokens_out, 0),
             _number(report.overall.seconds, 2), _disagreement(report.overall)]
            for report in reports
        ],
    }  # fmt: skip
    names = [report.name for report in reports]
    types = _union([report.by_type for report in reports])
    by_type = {
        "header": ["task type", "skill", *names],
        "rows": [
            [name, skill_of(name), *(_reward(report.by_type.get(name)) for report in reports)]
            for name in types
        ],
    }
    skills = _union([report.by_skill for report in reports])
    by_skill = {
        "header": ["skill", *names],
        "rows": [
            [name, *(_reward(report.by_skill.get(name)) for report in reports)] for name in skills
        ],
    }
    detail = {
        report.name: {
            "header": ["task type", "episodes", "failed", "mean reward [95% CI]", "pass^k",
                       "turns", "tool calls", "tokens in", "tokens out", "seconds",
                       "judge disagrees"],
            "rows": [
                [stats.name, str(stats.episodes), str(stats.failed), _reward(stats),
                 _pass_k(stats), _number(stats.turns), _number(stats.tool_calls),
                 _number(stats.tokens_in, 0), _number(stats.tokens_out, 0),
                 _number(stats.seconds, 2), _disagreement(stats)]
                for stats in report.by_type.values()
            ],
        }
        for report in reports
    }  # fmt: skip
    return {"overview": overview, "by_type": by_type, "by_skill": by_skill, "detail": detail}


def _markdown_table(table: dict[str, Any]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    lines = [line(table["header"]), line(["---"] * len(table["header"]))]
    return "\n".join([*lines, *(line(row) for row in table["rows"])])


def markdown(reports: Sequence[RunReport]) -> str:
    shown = tables(reports)
    parts = [
        "# localforce report",
        _markdown_table(shown["overview"]),
        "## Mean reward by task type",
        _markdown_table(shown["by_type"]),
        "## Mean reward by skill",
        _markdown_table(shown["by_skill"]),
    ]
    for name, table in shown["detail"].items():
        parts += [f"## Run {name}", _markdown_table(table)]
    return "\n\n".join(parts) + "\n"


def html(reports: Sequence[RunReport]) -> str:
    return TEMPLATES.get_template("report.html").render(
        tables=tables(reports),
        type_chart=chart_svg(reports, "by_type"),
        skill_chart=chart_svg(reports, "by_skill"),
    )


def write_report(reports: Sequence[RunReport], out_dir: Path) -> tuple[Path, Path]:
    """report.md and report.html in `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = out_dir / "report.md", out_dir / "report.html"
    written[0].write_text(markdown(reports), encoding="utf-8")
    written[1].write_text(html(reports), encoding="utf-8")
    return written
