"""A sandbox's custom fields created, changed and deleted through the Metadata API.

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
    check_field_name,
    field_spec,
    split_full_name,
)
from app.sandbox.lifecycle import Sandboxes
from app.sandbox.model import Sandbox
from app.sandbox.schemas import Schema, changes_text, parse_changes
from app.storage.database import write_transaction
from app.storage.schema_ddl import add_field_columns

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
    # The field whose columns the change needs (None: no storage change).
    stored: tuple[str, str] | None
    created: bool | None = None


@dataclass(frozen=True)
class _Ask:
    """One component's change, against one reading of the sandbox's schema."""

    changes: SchemaChanges
    sobject: SObjectDef
    name: str
    metadata: Mapping[str, Any]
    # Whether the org itself has the field (a sandbox may have changed or removed it).
    seeded: bool


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


def _plan_create(ask: _Ask) -> _Plan:
    spec = field_spec(ask.metadata)
    existing = ask.sobject.field(ask.name)
    if existing is not None:
        raise MetadataError(
            DUPLICATE,
            f"There is already a field named {existing.name} on {ask.sobject.name}.",
            ("fullName",),
        )
    target = ask.sobject.name
    return _Plan(ask.changes.with_field(target, ask.name, spec), (target, ask.name), created=True)


def _plan_update(ask: _Ask) -> _Plan:
    existing = _custom_field(ask)
    spec = field_spec(ask.metadata)
    _check_in_place(existing, spec)
    changed = ask.changes.with_field(ask.sobject.name, existing.name, spec)
    return _Plan(changed, None, created=False)


def _plan_upsert(ask: _Ask) -> _Plan:
    return (_plan_create if ask.sobject.field(ask.name) is None else _plan_update)(ask)


def _plan_delete(ask: _Ask) -> _Plan:
    existing = _custom_field(ask)
    changed = ask.changes.without_field(ask.sobject.name, existing.name, seeded=ask.seeded)
    return _Plan(changed, None)


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


def _store(sandbox: Sandbox, before: Schema, after: Schema, field: tuple[str, str]) -> None:
    sobject, name = field
    definition = after.registry.get(sobject)
    stored = None if definition is None else definition.field(name)
    assert stored is not None
    with write_transaction(sandbox.engine) as conn:
        add_field_columns(conn, before.tables[sobject], after.tables[sobject], stored)


def change_field(
    sandboxes: Sandboxes, sandbox: Sandbox, operation: str, metadata: Mapping[str, Any]
) -> SaveResult:
    """One CustomField's create, update, upsert or delete (`metadata`: its elements; a
    delete's only its fullName)."""
    full_name = str(metadata.get("fullName") or "").strip()
    try:
        sobject_name, name = split_full_name(full_name)
        check_field_name(name)
        base = sandboxes.schema_for(sandbox.org)
        for _ in range(MAX_ATTEMPTS):
            before_text = sandboxes.schema_changes(sandbox)
            before = sandboxes.schema_for(sandbox.org, before_text)
            sobject = _object(before, sobject_name)
            ask = _Ask(
                parse_changes(before_text),
                sobject,
                name,
                metadata,
                seeded=_org_has(base, sobject_name, name),
            )
            plan = PLANNERS[operation](ask)
            after_text = changes_text(plan.after)
            after = sandboxes.schema_for(sandbox.org, after_text)
            if plan.stored is not None:
                _store(sandbox, before, after, plan.stored)
            if sandboxes.commit_schema(sandbox, before_text, after_text):
                return SaveResult(full_name, created=plan.created)
    except MetadataError as error:
        return SaveResult(full_name, errors=(error,))
    raise SalesforceError(
        "Other changes to this sandbox's schema kept coming first: try again",
        error_code="UNABLE_TO_LOCK_ROW",
    )
