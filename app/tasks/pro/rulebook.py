"""What a scripted reader knows of the Pro orgs' sales texts: which stage each kind of task
belongs to, from the task subjects the org's texts list per stage
(`seed/orgs/<org>/text/sales.yaml`)."""

from __future__ import annotations

import functools
import re

from app.seeding.generate.text import load_text


def _pattern(template: str) -> re.Pattern[str]:
    """A subject template as a pattern: its placeholders ({account}, {first}) match any text."""
    parts = re.split(r"\{\w+\}", template)
    return re.compile(".+?".join(re.escape(part) for part in parts) + r"\Z")


@functools.cache
def _task_subjects(org: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    stages = load_text("sales", org)["tasks"]
    return tuple(
        (stage, _pattern(spec["subject"])) for stage, specs in stages.items() for spec in specs
    )


def stages_of_subject(org: str, subject: str) -> set[str]:
    """The stages whose kind of task a subject is (one, unless the texts are ambiguous)."""
    return {stage for stage, pattern in _task_subjects(org) if pattern.match(subject)}
