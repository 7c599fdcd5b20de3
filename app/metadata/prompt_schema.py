"""An org's schema as CRMArena shows it to agents: its schema config's rows (`{"object",
"fields": {name: description}}`, the HF datasets' `schema` configs) and the prompt section they
render to, "# Salesforce instance description" (crmarena.md 4 and 6.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.metadata.registry import SchemaRegistry


def crmarena_schema(org: str, seed_dir: Path) -> list[dict[str, Any]]:
    """The org's own objects (those its data holds, not the standard ones every org
    describes) as CRMArena's schema rows: {"object", "fields": {name: label}}."""
    objects_dir = seed_dir / "orgs" / org / "objects"
    own = {path.stem for path in objects_dir.glob("*.yaml")}
    registry = SchemaRegistry.from_directory(objects_dir)
    return [
        {"object": sobject.name, "fields": {f.name: f.label for f in sobject.fields}}
        for sobject in registry
        if sobject.name in own
    ]


def schema_text(rows: list[dict[str, Any]]) -> str:
    """The rows as the prompt lists them: the object names, then each object's fields."""
    lines = [
        "# Salesforce instance description",
        "",
        "Objects: " + ", ".join(r["object"] for r in rows),
    ]
    for row in rows:
        lines += ["", f"## {row['object']}"]
        lines += [f"- {name}: {description}" for name, description in row["fields"].items()]
    return "\n".join(lines) + "\n"
