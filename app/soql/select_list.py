"""Binds a query's SELECT list and GROUP BY: plain fields and parent paths, FIELDS(), toLabel(),
FORMAT() and convertCurrency(), aggregates and date functions, GROUPING(), TYPEOF on
polymorphic lookups and parent-to-child subqueries, and ROLLUP/CUBE.

Output keys follow Salesforce: unaliased functions are `expr0`, `expr1`, ... in SELECT order;
a field selected twice, or twice through FIELDS(), is `duplicate field selected`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from app.metadata.model import FieldDef, SObjectDef
from app.soql import ast
from app.soql.bind_context import BindContext
from app.soql.bind_expression import bind_expression, refuse_function
from app.soql.bind_functions import AggregateMap, bind_aggregate
from app.soql.bind_paths import bind_path, refuse_unless
from app.soql.bound import (
    BoundAggregate,
    BoundColumn,
    BoundFunction,
    BoundPath,
    BoundSubquery,
    BoundTypeOf,
    SelectExpr,
    TypeOfBranch,
)
from app.soql.errors import malformed
from app.soql.function_spec import AggregateFunction, Clause, FunctionKind, FunctionSpec, Transform
from app.soql.name_entity import name_field

# Binds a parent-to-child subquery of the select list: (parent query, parent object, the
# subquery, the parent's depth). Passed in by the binder, so this module does not import it.
ChildQueryBinder = Callable[[ast.Query, SObjectDef, ast.SelectSubquery, int], BoundSubquery]

# The FIELDS() groups; ALL and CUSTOM are unbounded, so they need a LIMIT of at most 200.
FIELDS_GROUPS = ("ALL", "STANDARD", "CUSTOM")
MAX_FIELDS_LIMIT = 200
MAX_ROLLUP_FIELDS = 3


@dataclass
class SelectList:
    """The bound SELECT list, and what the rest of the binding needs to know about it."""

    items: list[SelectExpr] = field(default_factory=list)
    count_only: bool = False
    uses_fields_function: bool = False
    unbounded_fields: bool = False  # FIELDS(ALL) or FIELDS(CUSTOM)
    seen: set[str] = field(default_factory=set)
    expr_index: int = 0


class SelectListBinder:
    def __init__(
        self,
        ctx: BindContext,
        child_query: ChildQueryBinder,
        root: SObjectDef,
        query: ast.Query,
        aggregates: AggregateMap,
        depth: int,
    ) -> None:
        self.ctx = ctx
        self.child_query = child_query
        self.root = root
        self.alias = query.alias
        self.query = query
        self.aggregates = aggregates
        self.depth = depth
        self.out = SelectList()

    def bind(self) -> SelectList:
        for item in self.query.select:
            if isinstance(item, ast.SelectSubquery):
                subquery = self.child_query(self.query, self.root, item, self.depth)
                self._claim(subquery.relationship, None)
                self.out.items.append(subquery)
            elif isinstance(item, ast.SelectTypeOf):
                self.out.items.append(self._typeof(item))
            else:
                self._field_item(item)
        return self.out

    # -- names --------------------------------------------------------------------------

    def _claim(self, name: str, pos: ast.Position | None, *, alias: bool = False) -> None:
        """Every output key once: a second is Salesforce's duplicate field or alias error."""
        if name.lower() in self.out.seen:
            message = f"duplicate alias: {name}" if alias else f"duplicate field selected: {name}"
            raise self.ctx.error("INVALID_FIELD", message, pos)
        self.out.seen.add(name.lower())

    def _function_name(self, item: ast.SelectField) -> str:
        name = item.alias or f"expr{self.out.expr_index}"
        if item.alias is None:
            self.out.expr_index += 1
        self._claim(name, item.pos, alias=True)
        return name

    # -- fields and functions -------------------------------------------------------------

    def _field_item(self, item: ast.SelectField) -> None:
        ctx, expr = self.ctx, item.expr
        if isinstance(expr, ast.FieldPath):
            if item.alias is not None and not self.query.group_by:
                raise malformed(
                    "only aggregate expressions use field aliasing", query=ctx.text, pos=item.pos
                )
            path = bind_path(ctx, self.root, self.alias, expr)
            if item.alias is None:
                self._column(path)
            else:  # a grouped field, written under its alias
                self._claim(item.alias, item.pos, alias=True)
                self.out.items.append(BoundColumn(path, alias=item.alias))
            return
        spec = ctx.functions.get(expr.name)
        if spec is None or not spec.allowed_in(Clause.SELECT):
            raise refuse_function(ctx, expr, Clause.SELECT)
        if spec.aggregate is AggregateFunction.COUNT and not expr.args:
            self._count_only(item)
        elif spec.kind is FunctionKind.FIELDS:
            self._fields_function(item, expr)
        elif spec.transform is not None:
            self._transform(item, expr, spec.transform)
        else:
            name = self._function_name(item)
            bound = bind_expression(
                ctx, self.root, self.alias, expr, Clause.SELECT, self.aggregates, name
            )
            assert not isinstance(bound, BoundPath)
            self.out.items.append(bound)

    def _count_only(self, item: ast.SelectField) -> None:
        """`SELECT COUNT() FROM ...`: the number of records, alone."""
        if len(self.query.select) > 1:
            raise malformed(
                "COUNT() and COUNT(fieldName) can only be used with other fields if the query "
                "has a GROUP BY clause",
                query=self.ctx.text,
                pos=item.pos,
            )
        self.out.count_only = True

    def _column(self, path: BoundPath, pos: ast.Position | None = None) -> None:
        canonical = ".".join([*(hop.name for hop in path.hops), path.field.name])
        self._claim(canonical, pos)
        self.out.items.append(BoundColumn(path))

    def _fields_function(self, item: ast.SelectField, call: ast.FunctionCall) -> None:
        """FIELDS(ALL | STANDARD | CUSTOM): the object's fields in describe order."""
        ctx = self.ctx
        arg = call.args[0] if len(call.args) == 1 else None
        group = arg.text.upper() if isinstance(arg, ast.FieldPath) else ""
        if group not in FIELDS_GROUPS or item.alias is not None:
            raise malformed(
                "FIELDS() takes one of ALL, STANDARD or CUSTOM", query=ctx.text, pos=call.pos
            )
        self.out.uses_fields_function = True
        self.out.unbounded_fields |= group != "STANDARD"
        for definition in self.root.fields:
            if group == "ALL" or definition.custom == (group == "CUSTOM"):
                self._column(BoundPath(hops=(), field=definition))

    def _transform(self, item: ast.SelectField, call: ast.FunctionCall, kind: Transform) -> None:
        """toLabel(f), FORMAT(f), convertCurrency(f), FORMAT(convertCurrency(f)), FORMAT(MIN(f))."""
        ctx = self.ctx
        if len(call.args) != 1:
            raise malformed(f"{call.name}() takes exactly one field", query=ctx.text, pos=call.pos)
        arg = call.args[0]
        if isinstance(arg, ast.FunctionCall):
            inner = ctx.functions.get(arg.name)
            if kind is Transform.FORMAT and _is_currency(inner) and len(arg.args) == 1:
                arg = arg.args[0]
            elif kind is Transform.FORMAT and _formats_as_aggregate(inner):
                name = self._function_name(item)
                aggregate = bind_aggregate(ctx, self.root, self.alias, arg, name)
                formatted = BoundAggregate(aggregate.function, aggregate.path, name, True)
                self.aggregates.add_selected(arg, formatted)
                self.out.items.append(formatted)
                return
        if not isinstance(arg, ast.FieldPath):
            raise malformed(f"{call.name}() takes exactly one field", query=ctx.text, pos=call.pos)
        path = bind_path(ctx, self.root, self.alias, arg)
        if item.alias is not None:
            self._claim(item.alias, item.pos, alias=True)
        else:
            canonical = ".".join([*(hop.name for hop in path.hops), path.field.name])
            self._claim(canonical, item.pos)
        self.out.items.append(BoundColumn(path, transform=kind, alias=item.alias))

    # -- TYPEOF ---------------------------------------------------------------------------

    def _typeof(self, item: ast.SelectTypeOf) -> BoundTypeOf:
        lookup = self._typeof_lookup(item.relationship)
        self._claim(lookup.relationship_name or lookup.name, item.pos)
        for path in item.else_fields:
            if len(path.parts) != 1 or name_field(path.parts[0]) is None:
                raise self.ctx.error(
                    "INVALID_FIELD",
                    f"No such column '{path.text}' on entity 'Name'. TYPEOF's ELSE selects "
                    "fields of the Name entity.",
                    path.pos,
                )
        when = self._when_fields(item, lookup)
        branches = []
        for name in lookup.reference_to:
            target = self.ctx.registry.get(name)
            if target is None:
                continue
            if target.name in when:
                branches.append(TypeOfBranch(target, when[target.name]))
            elif item.else_fields:
                branches.append(TypeOfBranch(target, self._else_fields(target, item.else_fields)))
        return BoundTypeOf(lookup=lookup, branches=tuple(branches))

    def _typeof_lookup(self, node: ast.FieldPath) -> FieldDef:
        """The polymorphic lookup `TYPEOF What` names, on the object queried."""
        parts = list(node.parts)
        if len(parts) > 1 and parts[0].lower() in {self.root.name.lower(), (self.alias or "")}:
            parts = parts[1:]
        lookup = self.root.field_by_relationship(parts[0]) if len(parts) == 1 else None
        if lookup is None:
            raise self.ctx.error(
                "INVALID_FIELD",
                f"Didn't understand relationship '{node.text}' in field path. TYPEOF takes a "
                "polymorphic relationship of the object queried.",
                node.pos,
            )
        if len(lookup.reference_to) < 2:
            raise self.ctx.error(
                "INVALID_FIELD",
                "TYPEOF can only be used on a polymorphic relationship: "
                f"{lookup.relationship_name} is not polymorphic",
                node.pos,
            )
        return lookup

    def _when_fields(
        self, item: ast.SelectTypeOf, lookup: FieldDef
    ) -> dict[str, tuple[FieldDef, ...]]:
        """Each WHEN branch's fields by the object it names, one of the lookup's types."""
        allowed = {name.lower() for name in lookup.reference_to}
        when: dict[str, tuple[FieldDef, ...]] = {}
        for branch in item.branches:
            target = self.ctx.registry.get(branch.sobject)
            if branch.sobject.lower() not in allowed or target is None:
                raise self.ctx.error(
                    "INVALID_FIELD",
                    f"Invalid type in TYPEOF: {branch.sobject} is not a type of "
                    f"{lookup.relationship_name}",
                    branch.pos,
                )
            if target.name in when:
                raise self.ctx.error(
                    "INVALID_FIELD", f"duplicate WHEN type in TYPEOF: {target.name}", branch.pos
                )
            when[target.name] = self._branch_fields(target, branch.fields)
        return when

    def _branch_fields(
        self, target: SObjectDef, paths: tuple[ast.FieldPath, ...]
    ) -> tuple[FieldDef, ...]:
        fields = []
        for path in paths:
            bound = bind_path(self.ctx, target, None, path)
            if bound.hops:
                raise self.ctx.error(
                    "INVALID_FIELD",
                    "TYPEOF selects fields of the related object, not its parents",
                    path.pos,
                )
            fields.append(bound.field)
        return tuple(fields)

    def _else_fields(
        self, target: SObjectDef, paths: tuple[ast.FieldPath, ...]
    ) -> tuple[FieldDef, ...]:
        """ELSE selects from the Name entity, so each field must be one of its fields; a type
        without one of them leaves it out."""
        fields = []
        for path in paths:
            found = target.field(path.parts[0])
            if found is not None:
                fields.append(found)
        return tuple(fields)


def _is_currency(spec: FunctionSpec | None) -> bool:
    return spec is not None and spec.transform is Transform.CURRENCY


def _formats_as_aggregate(spec: FunctionSpec | None) -> bool:
    """FORMAT(MIN(Amount)): an aggregate (or an unknown name, which binding it as one refuses)."""
    return spec is None or spec.kind not in (FunctionKind.TRANSFORM, FunctionKind.ROW)


def bind_group_by(
    ctx: BindContext, root: SObjectDef, query: ast.Query
) -> tuple[list[BoundPath | BoundFunction], str]:
    """GROUP BY's keys, and "ROLLUP" or "CUBE" when it is one of those (alone, up to 3 keys)."""
    keys: list[BoundPath | BoundFunction] = []
    kind = ""
    for key in query.group_by:
        if (
            isinstance(key, ast.FunctionCall)
            and ctx.functions.kind_of(key.name) is FunctionKind.GROUPING_SET
        ):
            if len(query.group_by) != 1:
                raise malformed(
                    f"{key.name.upper()} must be the only expression of GROUP BY",
                    query=ctx.text,
                    pos=key.pos,
                )
            if not 1 <= len(key.args) <= MAX_ROLLUP_FIELDS:
                raise malformed(
                    f"{key.name.upper()} takes from 1 to {MAX_ROLLUP_FIELDS} fields",
                    query=ctx.text,
                    pos=key.pos,
                )
            kind = key.name.upper()
            keys.extend(_group_key(ctx, root, query.alias, arg) for arg in key.args)
            continue
        keys.append(_group_key(ctx, root, query.alias, key))
    return keys, kind


def _group_key(
    ctx: BindContext, root: SObjectDef, alias: str | None, key: ast.FieldPath | ast.FunctionCall
) -> BoundPath | BoundFunction:
    # GROUP BY takes fields and row functions only: the one AggregateMap is never used.
    bound = bind_expression(ctx, root, alias, key, Clause.GROUP_BY, AggregateMap())
    assert isinstance(bound, BoundPath | BoundFunction)
    if isinstance(bound, BoundPath):
        refuse_unless(ctx, bound.field.groupable, bound, "grouped", key.pos)
    return bound
