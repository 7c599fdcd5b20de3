"""Field paths bound to the schema, case-insensitively: `Name`, `Account.Owner.Name`, an alias
or the object's name as the first step, and a polymorphic lookup's Name entity (`What.Name`)."""

from __future__ import annotations

from app.metadata.model import FieldDef, FieldType, SObjectDef
from app.soql import ast
from app.soql.bind_context import BindContext
from app.soql.bound import BoundPath, Hop
from app.soql.name_entity import TYPE_FIELD, name_field

NO_SUCH_COLUMN = (
    "No such column '{name}' on entity '{entity}'. If you are attempting to use a custom field, "
    "be sure to append the '__c' after the custom field name. Please reference your WSDL or the "
    "describe call for the appropriate names."
)
BAD_RELATIONSHIP = (
    "Didn't understand relationship '{name}' in field path. If you are attempting to use a "
    "custom relationship, be sure to append the '__r' after the custom relationship name. "
    "Please reference your WSDL or the describe call for the appropriate names."
)


def bind_path(
    ctx: BindContext, root: SObjectDef, alias: str | None, node: ast.FieldPath
) -> BoundPath:
    parts = list(node.parts)
    prefixes = {root.name.lower()} | ({alias.lower()} if alias else set())
    if len(parts) > 1 and parts[0].lower() in prefixes:
        parts = parts[1:]  # `OrderItem.Order.AccountId` on OrderItem, `c.Name` with alias c
    hops: list[Hop] = []
    current = root
    for index, relationship in enumerate(parts[:-1]):
        lookup = current.field_by_relationship(relationship)
        targets = _targets(ctx, lookup) if lookup is not None else []
        if lookup is None or not targets:
            raise ctx.error("INVALID_FIELD", BAD_RELATIONSHIP.format(name=relationship), node.pos)
        if len(targets) > 1:
            # A polymorphic lookup reads the Name entity, which has no lookups to follow.
            if index != len(parts) - 2:
                raise ctx.error(
                    "INVALID_FIELD", BAD_RELATIONSHIP.format(name=parts[index + 1]), node.pos
                )
            hops.append(Hop(lookup=lookup, target=targets[0], alternatives=tuple(targets)))
            return BoundPath(hops=tuple(hops), field=_name_field(ctx, targets, parts[-1], node))
        hops.append(Hop(lookup=lookup, target=targets[0]))
        current = targets[0]
    if len(hops) > ctx.limits.parent_depth:
        raise ctx.malformed(
            "SOQL statements cannot query relationships that are more than 5 levels away "
            "from the root entity object.",
            node.pos,
        )
    field = current.field(parts[-1])
    if field is None:
        raise ctx.error(
            "INVALID_FIELD", NO_SUCH_COLUMN.format(name=parts[-1], entity=current.name), node.pos
        )
    return BoundPath(hops=tuple(hops), field=field)


def refuse_unless(
    ctx: BindContext, allowed: bool, path: BoundPath, what: str, pos: ast.Position
) -> None:
    """Salesforce's refusal of a field its describe says a clause cannot use: `what` is
    "filtered", "sorted" or "grouped"."""
    if not allowed:
        reason = f"field '{path.field.name}' can not be {what} in a query call"
        raise ctx.error("INVALID_FIELD", reason, pos)


def _targets(ctx: BindContext, lookup: FieldDef) -> list[SObjectDef]:
    """The objects of this org that the lookup can point at."""
    found = (ctx.registry.get(name) for name in lookup.reference_to)
    return [target for target in found if target is not None]


def _name_field(
    ctx: BindContext, targets: list[SObjectDef], name: str, node: ast.FieldPath
) -> FieldDef:
    """A field of the Name entity read through a polymorphic lookup: the first target's
    definition of it (a target without it reads null), or the object type for `Type`."""
    canonical = name_field(name)
    if canonical is None:
        raise ctx.error("INVALID_FIELD", NO_SUCH_COLUMN.format(name=name, entity="Name"), node.pos)
    if canonical == "Type":
        return TYPE_FIELD
    for target in targets:
        found = target.field(canonical)
        if found is not None:
            return found
    return FieldDef(name=canonical, type=FieldType.STRING, label=canonical)
