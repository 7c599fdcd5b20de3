"""Each org's schema (its object registry and the tables of its objects), read from the seed
directory's definitions and loaded once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from app.errors import SalesforceError
from app.metadata.registry import SchemaRegistry
from app.storage.tables import TableSet


@dataclass
class Schema:
    registry: SchemaRegistry
    tables: TableSet


class Schemas:
    """Each org's registry and tables, loaded once: Table identity is the SQL cache key."""

    def __init__(self, seed_dir: Path) -> None:
        self.seed_dir = seed_dir
        self._loaded: dict[str, Schema] = {}

    def objects_dir(self, org: str) -> Path:
        return self.seed_dir / "orgs" / org / "objects"

    def known(self) -> set[str]:
        """The orgs the seed directory defines (a name a client sends is never made a path)."""
        orgs = self.seed_dir / "orgs"
        return {path.parent.name for path in orgs.glob("*/objects") if path.is_dir()}

    def __call__(self, org: str) -> Schema:
        if org not in self._loaded:
            if org not in self.known():
                raise SalesforceError(f"Unknown org: {org}", error_code="INVALID_INPUT")
            objects = self.objects_dir(org)
            registry = SchemaRegistry.from_directory(objects)
            self._loaded[org] = Schema(registry=registry, tables=TableSet(registry))
        return self._loaded[org]
