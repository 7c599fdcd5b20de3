"""Each org's schema (its object registry and the tables of its objects), read from the seed
directory's definitions and loaded once; and the schemas sandboxes changed through the Metadata
API, each the org's with a sandbox's changes laid over it (app.metadata.schema_changes)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from app.errors import SalesforceError
from app.metadata.categories import DataCategories
from app.metadata.loader import load_definitions, org_definitions
from app.metadata.registry import SchemaRegistry
from app.metadata.schema_changes import SchemaChanges
from app.storage.schema_ddl import add_field_columns, create_object_table, reindex_search
from app.storage.tables import TableSet

# Changed schemas kept built (each its own tables, hence its own compiled statements): a
# sandbox holds its own while it lives; sandboxes with the same changes share one.
CHANGED_SCHEMAS_KEPT = 64


@dataclass
class Schema:
    registry: SchemaRegistry
    tables: TableSet
    # The sandbox's changes as its row stores them ("" for the org's own schema).
    changes: str = ""


def changes_text(changes: SchemaChanges) -> str:
    """How a sandbox's row stores its changes: canonical JSON, "" for none."""
    return json.dumps(changes.to_json(), sort_keys=True) if changes else ""


class Schemas:
    """Each org's registry and tables, loaded once: Table identity is the SQL cache key."""

    def __init__(self, seed_dir: Path) -> None:
        self.seed_dir = seed_dir
        self._loaded: dict[str, Schema] = {}
        self._definitions: dict[str, dict[str, dict[str, Any]]] = {}
        self._categories: dict[str, DataCategories] = {}
        self._changed: OrderedDict[tuple[str, str], Schema] = OrderedDict()
        self._lock = threading.Lock()

    def objects_dir(self, org: str) -> Path:
        return self.seed_dir / "orgs" / org / "objects"

    def known(self) -> set[str]:
        """The orgs the seed directory defines (a name a client sends is never made a path)."""
        orgs = self.seed_dir / "orgs"
        return {path.parent.name for path in orgs.glob("*/objects") if path.is_dir()}

    def __call__(self, org: str, changes: str = "") -> Schema:
        """The org's schema, with a sandbox's stored changes (`changes_text`) laid over it."""
        with self._lock:
            if org not in self._loaded:
                self._load(org)
            if not changes:
                return self._loaded[org]
            key = (org, changes)
            found = self._changed.get(key)
            if found is None:
                parsed = SchemaChanges.from_json(json.loads(changes))
                definitions = parsed.apply(self._definitions[org])
                registry = SchemaRegistry(load_definitions(definitions), self._categories[org])
                found = Schema(registry=registry, tables=TableSet(registry), changes=changes)
                self._changed[key] = found
                while len(self._changed) > CHANGED_SCHEMAS_KEPT:
                    self._changed.popitem(last=False)
            self._changed.move_to_end(key)
            return found

    def _load(self, org: str) -> None:
        if org not in self.known():
            raise SalesforceError(f"Unknown org: {org}", error_code="INVALID_INPUT")
        objects = self.objects_dir(org)
        self._definitions[org] = org_definitions(objects)
        self._categories[org] = DataCategories.load(objects.parent / "data_categories.yaml")
        registry = SchemaRegistry(load_definitions(self._definitions[org]), self._categories[org])
        self._loaded[org] = Schema(registry=registry, tables=TableSet(registry))


def parse_changes(changes: str) -> SchemaChanges:
    return SchemaChanges.from_json(json.loads(changes) if changes else None)


def changed_tables(schema: Schema, base: Schema) -> list[str]:
    """The tables of the objects `schema`'s changes create, remove or change the fields of
    (a removed object's as the org has it)."""
    names = []
    for sobject in parse_changes(schema.changes).touched():
        for tables in (schema.tables, base.tables):
            if sobject in tables:
                names.append(tables[sobject].name)
                break
    return names


def store_schema(conn: Connection, base: Schema, target: Schema) -> None:
    """Give `target`'s changes to its org's schema (`base`) their storage in the sandbox: the
    tables of the objects it creates, the columns of the fields it adds to the others, and
    the search indexes over the text fields it adds or removes."""
    changes = parse_changes(target.changes)
    for sobject in changes.objects:
        create_object_table(conn, target.tables[sobject])
    for sobject, name in changes.added():
        definition = target.registry.get(sobject)
        field = None if definition is None else definition.field(name)
        if field is not None and sobject not in changes.objects and sobject in base.tables:
            add_field_columns(conn, base.tables[sobject], target.tables[sobject], field)
    reindex_search(conn, base.tables, target.tables)
