"""Loads an org's text vocabularies (seed/orgs/<org>/text/*.yaml) and fills templates."""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from random import Random
from typing import Any

import yaml

ORGS_DIR = Path(__file__).resolve().parents[3] / "seed" / "orgs"
ORG_DIR = ORGS_DIR / "original"
TEXT_DIR = ORG_DIR / "text"
OBJECTS_DIR = ORG_DIR / "objects"
TEXT_FILES = ("names", "catalog", "issues", "knowledge", "conversation")


@functools.cache
def load_text(name: str, org: str = "original") -> dict[str, Any]:
    """The parsed `seed/orgs/<org>/text/<name>.yaml`. Cached per process, so callers must treat
    it as read-only."""
    path = ORGS_DIR / org / "text" / f"{name}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{name}.yaml must hold a mapping")
    return data


# Words that agree with a product name, which may be plural ("Trail Running Shoes"). A
# template writes "the {product} {is} late" or "{does}n't fit" (doesn't / don't).
_SINGULAR = {"is": "is", "has": "has", "was": "was", "does": "does", "it": "it", "It": "It",
             "them": "it", "s": "s"}  # fmt: skip
_PLURAL = {"is": "are", "has": "have", "was": "were", "does": "do", "it": "they", "It": "They",
           "them": "them", "s": ""}  # fmt: skip


def agreement(plural: bool) -> dict[str, str]:
    return dict(_PLURAL if plural else _SINGULAR)


def fill(template: str, context: Mapping[str, object]) -> str:
    """`template` with its {placeholders} replaced; a missing key raises KeyError on purpose."""
    return template.format_map(context)


def pick(rng: Random, templates: Sequence[str], context: Mapping[str, object]) -> str:
    return fill(rng.choice(templates), context)


def placeholders(template: str) -> set[str]:
    """The placeholder names a template uses (for tests that check every template)."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def long_date(day: date) -> str:
    """How people write a date in a message: "March 3, 2021"."""
    return f"{day:%B} {day.day}, {day.year}"


def money(amount: float) -> str:
    return f"${amount:,.2f}"
