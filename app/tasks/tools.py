"""What an episode's agent may call: each task type declares a tool set, by name.

The agent interfaces name their tools; a task type names what it needs: `READS` (every tool
that only reads the org, as its interface marks it), the writes it needs by tool name, and
the answer. CRMArena gives its read-only tasks no write tool, so a task that asks about
records cannot be "solved" by deleting them.
"""

from __future__ import annotations

READS = "reads"  # every tool the interface marks read-only
ANSWER = "submit_answer"

READ_ONLY: frozenset[str] = frozenset({READS, ANSWER})
# A write task of CRMArena's: it changes fields of records that exist.
UPDATES: frozenset[str] = READ_ONLY | {"update_record"}
# The Metadata API's calls that change the schema, by the tool that makes each.
METADATA_TOOLS = {"createMetadata": "create_metadata", "updateMetadata": "update_metadata"}
# An administrator's task: it creates or changes custom objects and fields (the Metadata API).
SCHEMA_CHANGES: frozenset[str] = READ_ONLY | set(METADATA_TOOLS.values())
# A write task of a row no task type declares (its own `task` name): every write.
ANY_WRITE: frozenset[str] = UPDATES | SCHEMA_CHANGES | {"create_record", "delete_record"}


def allows(tool_set: frozenset[str], name: str, *, reads_only: bool) -> bool:
    """Whether the set holds the tool: by its name, or as a read."""
    return name in tool_set or (reads_only and READS in tool_set)
