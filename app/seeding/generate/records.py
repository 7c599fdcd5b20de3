"""Shared vocabulary of the generator: the record type, deterministic ids and random streams."""

from __future__ import annotations

import functools
from datetime import datetime
from random import Random
from typing import Any

from app.metadata.registry import SchemaRegistry
from app.seeding.generate.text import ORGS_DIR
from app.storage.ids import make_id

# One sObject record: field API name -> Python value (str, int, float, bool, None, date,
# datetime, or list[str] for EmailMessage.ToIds).
Record = dict[str, Any]
Records = dict[str, list[Record]]

# When the org was set up: the catalog, price books and issues date from then, before the
# first order, so no record is older than what it refers to.
ORG_CREATED = datetime(2019, 6, 3, 16, 0)

# LiveChatVisitor is not an object of the org's schema, so its prefix is not in the YAML.
LIVE_CHAT_VISITOR_PREFIX = "571"


@functools.cache
def key_prefixes(org: str = "original") -> dict[str, str]:
    """sObject name -> key prefix, from the org's object definitions."""
    registry = SchemaRegistry.from_directory(ORGS_DIR / org / "objects")
    return {sobject.name: sobject.key_prefix for sobject in registry}


def record_id(sobject: str, ordinal: int, org: str = "original") -> str:
    """The id of the `ordinal`-th (1-based) record of `sobject`: the same on every run."""
    return make_id(key_prefixes(org)[sobject], ordinal)


def visitor_id(ordinal: int) -> str:
    return make_id(LIVE_CHAT_VISITOR_PREFIX, ordinal)


def child_rng(seed: int, stream: str, org: str = "original") -> Random:
    """An independent random stream per generator step.

    Seeding from a string goes through SHA-512 (not hash()), so it is stable across runs and
    machines, and one step drawing more numbers does not shift the numbers of the others.
    """
    return Random(f"localforce/{org}/{seed}/{stream}")
