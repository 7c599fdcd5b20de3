"""What a scripted reader knows of an org's texts (`seed/orgs/<org>/text`), where a task asks
for reading rather than querying: the lines the original org's policies count as violations,
and which stage each kind of Pro sales task belongs to."""

from __future__ import annotations

import functools
import re

from app.seeding.generate.text import load_text


def template_pattern(template: str) -> re.Pattern[str]:
    """A text template as a pattern: its placeholders ({product}, {account}) match any text."""
    parts = re.split(r"\{\w+\}", template)
    return re.compile(".+?".join(re.escape(part) for part in parts))


@functools.cache
def violation_lines() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(the policy's article title, a line that violates it), for every violation line of the
    original org's policies and of its issues' stories."""
    policies = load_text("knowledge")["policies"]
    titles = {policy["key"]: policy["title"] for policy in policies}
    lines = [(policy["key"], line) for policy in policies for line in policy.get("violation", [])]
    for issue in load_text("issues")["issues"]:
        for scenario in issue.get("scenarios", []):
            for key, extra in scenario.get("violations", {}).items():
                lines += [(key, line) for line in extra]
    return tuple((titles[key], template_pattern(line)) for key, line in lines)


@functools.cache
def _task_subjects(org: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    stages = load_text("sales", org)["tasks"]
    return tuple(
        (stage, template_pattern(spec["subject"]))
        for stage, specs in stages.items()
        for spec in specs
    )


def stages_of_subject(org: str, subject: str) -> set[str]:
    """The stages of a Pro org whose kind of task a subject is (one, unless the texts are
    ambiguous)."""
    return {stage for stage, pattern in _task_subjects(org) if pattern.fullmatch(subject)}
