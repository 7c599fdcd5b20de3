"""A sandbox's custom objects and fields created, changed and deleted through the Metadata
API.

Each component is its own change (createMetadata saves what it can, as Salesforce does without
allOrNone): checked against the sandbox's schema as its row has it now, its columns added in
the sandbox's storage under the write lock, then its changes recorded in the row if they are
still what was read (else read again and retried). From then on describe, SOQL, SOSL, REST,
composite and Bulk see it, in this sandbox only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.errors import SalesforceError
from app.metadata.custom_metadata import is_custom_name
from app.metadata.model import FieldDef, SObjectDef
from app.metadata.schema_changes import (
    CROSS_REFERENCE,
    DUPLICATE,
    INTEGRITY,
    MetadataError,
    SchemaChanges,
    as_list,
    check_field_name,
    check_name,
    field_spec,
    key_prefix_for,
    object_definition,
    split_full_name,
)
from app.sandbox.lifecycle import Sandboxes
from app.sandbox.model import Sandbox
from app.sandbox.schemas import Schema, changes_text, parse_changes
from app.storage.database import write_transaction
from app.storage.schema_ddl import (
    add_field_columns,
    create_object_table,
    reindex_search,
    rename_object_table,
)

# Attempts at recording a change while other changes to the same sandbox keep coming first.
MAX_ATTEMPTS = 20
# What an update may not change in place (the column it is stored in stays as it is).
FIXED_ON_UPDATE = ("type", "unique", "externalId")


@dataclass(frozen=True)
class SaveResult:
    """One component's outcome: SaveResult, UpsertResult (`created`) or DeleteResult."""

    full_name: str
    errors: tuple[MetadataError, ...] = ()
    created: bool | None = None

    @property
    def success(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class _Plan:
    """A change worked out against one reading of the sandbox's schema."""

    after: SchemaChanges
    # What the change needs stored: (object, field) for a field's columns, (object, None) for
    # a new object's table (its fields with it).
    stored: tuple[tuple[str, str | None], ...] = ()
    created: bool | None = None
    # A created object renamed: (its name, its new name).
    renamed: tuple[str, str] | None = None


@dataclass(frozen=True)
class _Ask:
    """One component's change, against one reading of the sandbox's schema."""

    changes: SchemaChanges
    sobject: SObjectDef
    name: str
    metadata: Mapping[str, Any]
    # Whether the org itself has the field (a sandbox may have changed or removed it).
    seeded: bool
    # The schema the change is made to (a lookup's target must be in it).
    schema: Schema


Planner = Callable[[_Ask], _Plan]


def _no_such_field(full_name: str) -> MetadataError:
    return MetadataError(
        CROSS_REFERENCE,
        f"In field: fullName - no CustomField named {full_name} found",
        ("fullName",),
    )


def _object(schema: Schema, name: str) -> SObjectDef:
    sobject = schema.registry.get(name)
    if sobject is None:
        raise MetadataError(
            CROSS_REFERENCE,
            f"In field: fullName - no CustomObject named {name} found",
            ("fullName",),
        )
    return sobject


def _custom_field(ask: _Ask) -> FieldDef:
    """The custom field an update or delete names (a standard field is none)."""
    existing = ask.sobject.field(ask.name)
    if existing is None or not is_custom_name(existing.name):
        raise _no_such_field(f"{ask.sobject.name}.{ask.name}")
    return existing


def _checked_spec(schema: Schema, metadata: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The field's spec, a lookup's target found in `schema`."""
    spec = field_spec(metadata, name)
    for target in spec.get("referenceTo", ()):
        if schema.registry.get(target) is None:
            raise MetadataError(
                INTEGRITY,
                f"referenceTo value of '{target}' does not resolve to a valid sObject type",
                ("referenceTo",),
            )
    return spec


def _plan_create(ask: _Ask) -> _Plan:
    spec = _checked_spec(ask.schema, ask.metadata, ask.name)
    existing = ask.sobject.field(ask.name)
    if existing is not None:
        raise MetadataError(
            DUPLICATE,
            f"There is already a field named {existing.name} on {ask.sobject.name}.",
            ("fullName",),
        )
    target = ask.sobject.name
    changed = ask.changes.with_field(target, ask.name, spec)
    return _Plan(changed, ((target, ask.name),), created=True)


def _plan_update(ask: _Ask) -> _Plan:
    existing = _custom_field(ask)
    spec = _checked_spec(ask.schema, ask.metadata, ask.name)
    _check_in_place(existing, spec)
    changed = ask.changes.with_field(ask.sobject.name, existing.name, spec)
    return _Plan(changed, created=False)


def _plan_upsert(ask: _Ask) -> _Plan:
    return (_plan_create if ask.sobject.field(ask.name) is None else _plan_update)(ask)


def _plan_delete(ask: _Ask) -> _Plan:
    existing = _custom_field(ask)
    changed = ask.changes.without_field(ask.sobject.name, existing.name, seeded=ask.seeded)
    return _Plan(changed)


def _org_has(base: Schema, sobject: str, name: str) -> bool:
    """Whether the org itself has the field (a sandbox may have changed or removed it)."""
    definition = base.registry.get(sobject)
    return definition is not None and definition.field(name) is not None


def _check_in_place(existing: FieldDef, spec: Mapping[str, Any]) -> None:
    """An update keeps the field's type, uniqueness and external id: its stored column and
    key stay as they are."""
    if (
        spec["type"] != existing.type.value
        or bool(spec.get("unique")) != existing.unique
        or bool(spec.get("externalId")) != existing.external_id
    ):
        raise MetadataError(
            INTEGRITY,
            "localforce does not change a field's type, uniqueness or external id in place yet",
            FIXED_ON_UPDATE,
        )


PLANNERS: dict[str, Planner] = {
    "create": _plan_create,
    "update": _plan_update,
    "upsert": _plan_upsert,
    "delete": _plan_delete,
}


def _store(sandbox: Sandbox, before: Schema, after: Schema, plan: _Plan) -> None:
    """The tables, columns and search indexes the plan's change needs, under the sandbox's
    write lock."""
    with write_transaction(sandbox.engine) as conn:
        if plan.renamed is not None:
            old, new = plan.renamed
            rename_object_table(conn, (before.tables[old], after.tables[new]), plan.renamed)
        for sobject, name in plan.stored:
            if name is None:
                create_object_table(conn, after.tables[sobject])
                continue
            definition = after.registry.get(sobject)
            field = None if definition is None else definition.field(name)
            if field is not None and sobject in before.tables:  # else made with its table
                add_field_columns(conn, before.tables[sobject], after.tables[sobject], field)
        reindex_search(conn, before.tables, after.tables)


PlanFor = Callable[[Schema, SchemaChanges, Schema], _Plan]
# A component's change: (the sandboxes, the sandbox, the operation, its elements) -> result.
Changer = Callable[[Sandboxes, Sandbox, str, Mapping[str, Any]], SaveResult]


def _commit(
    sandboxes: Sandboxes, sandbox: Sandbox, full_name: str, plan_for: PlanFor
) -> SaveResult:
    """Work the change out against the sandbox's schema as its row has it (`plan_for`: that
    schema, its changes, the org's own -> the plan), store it, and record it if the row still
    holds what was read; else again."""
    try:
        base = sandboxes.schema_for(sandbox.org)
        for _ in range(MAX_ATTEMPTS):
            before_text = sandboxes.schema_changes(sandbox)
            before = sandboxes.schema_for(sandbox.org, before_text)
            plan = plan_for(before, parse_changes(before_text), base)
            after_text = changes_text(plan.after)
            after = sandboxes.schema_for(sandbox.org, after_text)
            _store(sandbox, before, after, plan)
            if sandboxes.commit_schema(sandbox, before_text, after_text):
                return SaveResult(full_name, created=plan.created)
    except MetadataError as error:
        return SaveResult(full_name, errors=(error,))
    raise SalesforceError(
        "Other changes to this sandbox's schema kept coming first: try again",
        error_code="UNABLE_TO_LOCK_ROW",
    )


def change_field(
    sandboxes: Sandboxes, sandbox: Sandbox, operation: str, metadata: Mapping[str, Any]
) -> SaveResult:
    """One CustomField's create, update, upsert or delete (`metadata`: its elements; a
    delete's only its fullName)."""
    full_name = str(metadata.get("fullName") or "").strip()

    def plan_for(before: Schema, changes: SchemaChanges, base: Schema) -> _Plan:
        sobject_name, name = split_full_name(full_name)
        check_field_name(name)
        sobject = _object(before, sobject_name)
        seeded = _org_has(base, sobject_name, name)
        ask = _Ask(changes, sobject, name, metadata, seeded=seeded, schema=before)
        return PLANNERS[operation](ask)

    return _commit(sandboxes, sandbox, full_name, plan_for)


# -- custom objects ----------------------------------------------------------------------------


def _inline_fields(schema: Schema, metadata: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A CustomObject's `fields`, each a CustomField named without its object, as specs."""
    specs: dict[str, dict[str, Any]] = {}
    for field_metadata in as_list(metadata.get("fields")):
        if not isinstance(field_metadata, Mapping):
            continue
        name = str(field_metadata.get("fullName") or "").strip()
        check_field_name(name)
        if name.lower() in {known.lower() for known in specs}:
            raise MetadataError(DUPLICATE, f"There is already a field named {name}.", ("fields",))
        specs[name] = _checked_spec(schema, field_metadata, name)
    return specs


def _created_object(changes: SchemaChanges, before: Schema, name: str) -> SObjectDef:
    """A custom object this sandbox created: the org's own are not changed or deleted here."""
    sobject = before.registry.get(name)
    if sobject is None or not is_custom_name(sobject.name):
        raise MetadataError(
            CROSS_REFERENCE,
            f"In field: fullName - no CustomObject named {name} found",
            ("fullName",),
        )
    if sobject.name not in changes.objects:
        raise MetadataError(
            INTEGRITY,
            f"localforce does not change or delete the org's own objects ({sobject.name}) yet",
            ("fullName",),
        )
    return sobject


def _with_fields(
    changes: SchemaChanges, sobject: str, specs: dict[str, dict[str, Any]]
) -> SchemaChanges:
    for name, spec in specs.items():
        changes = changes.with_field(sobject, name, spec)
    return changes


def _create_object(before: Schema, changes: SchemaChanges, metadata: Mapping[str, Any]) -> _Plan:
    name = str(metadata.get("fullName") or "").strip()
    existing = before.registry.get(name)
    if existing is not None:
        raise MetadataError(
            DUPLICATE, f"There is already an object named {existing.name}.", ("fullName",)
        )
    taken = {sobject.key_prefix for sobject in before.registry}
    raw = object_definition(metadata, key_prefix_for(name, taken))
    changed = _with_fields(changes.with_object(raw), name, _inline_fields(before, metadata))
    return _Plan(changed, ((name, None),), created=True)


def _update_object(before: Schema, changes: SchemaChanges, metadata: Mapping[str, Any]) -> _Plan:
    """Its labels and its name field; the fields it lists are created or updated, those it
    leaves out stay."""
    sobject = _created_object(changes, before, str(metadata.get("fullName") or "").strip())
    current = changes.objects[sobject.name]
    # The name field may turn from Text to AutoNumber and back: its column is text either way
    # (records keep their names; new ones are numbered, or named by the caller).
    raw = object_definition({**metadata, "fullName": sobject.name}, sobject.key_prefix)
    fields = _inline_fields(before, metadata)
    changed = _with_fields(changes.with_object({**current, **raw}), sobject.name, fields)
    added = tuple((sobject.name, name) for name in fields if sobject.field(name) is None)
    return _Plan(changed, added, created=False)


def _upsert_object(before: Schema, changes: SchemaChanges, metadata: Mapping[str, Any]) -> _Plan:
    exists = before.registry.get(str(metadata.get("fullName") or "").strip()) is not None
    return (_update_object if exists else _create_object)(before, changes, metadata)


def _delete_object(before: Schema, changes: SchemaChanges, metadata: Mapping[str, Any]) -> _Plan:
    """The object and its fields go from the registry; its table stays, unread, until a
    reset drops it."""
    sobject = _created_object(changes, before, str(metadata.get("fullName") or "").strip())
    return _Plan(changes.without_object(sobject.name))


ObjectPlanner = Callable[[Schema, SchemaChanges, Mapping[str, Any]], _Plan]
OBJECT_PLANNERS: dict[str, ObjectPlanner] = {
    "create": _create_object,
    "update": _update_object,
    "upsert": _upsert_object,
    "delete": _delete_object,
}


def change_object(
    sandboxes: Sandboxes, sandbox: Sandbox, operation: str, metadata: Mapping[str, Any]
) -> SaveResult:
    """One CustomObject's create, update, upsert or delete, with the custom fields its
    `fields` list."""
    full_name = str(metadata.get("fullName") or "").strip()

    def plan_for(before: Schema, changes: SchemaChanges, base: Schema) -> _Plan:
        check_name(full_name, "object")
        return OBJECT_PLANNERS[operation](before, changes, metadata)

    return _commit(sandboxes, sandbox, full_name, plan_for)


def rename_object(sandboxes: Sandboxes, sandbox: Sandbox, old: str, new: str) -> SaveResult:
    """renameMetadata of a CustomObject this sandbox created: its records, fields and ids
    stay; its name (and its table's) change. The result names the old name, as Salesforce's
    does."""

    def plan_for(before: Schema, changes: SchemaChanges, base: Schema) -> _Plan:
        sobject = _created_object(changes, before, old.strip())
        check_name(new, "object")
        if before.registry.get(new) is not None:
            raise MetadataError(
                DUPLICATE, f"There is already an object named {new}.", ("fullName",)
            )
        return _Plan(changes.renamed_object(sobject.name, new), renamed=(sobject.name, new))

    return _commit(sandboxes, sandbox, old.strip(), plan_for)
