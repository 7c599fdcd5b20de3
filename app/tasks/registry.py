"""Every task type, collected from the declarations of its family's module: what the generator
draws in each org, the grader and episodes grade by, the reference agent solves with and the
coverage report lists. Nothing else names a type.

A type is declared once, in its family's module (`TASK_TYPES`, app/tasks/original and
app/tasks/pro, one module per persona or kind of task, and app/tasks/admin: an administrator's
schema changes): its name, persona, orgs, draw (the
ground truth), metric and answer kind, reference solver and tool set. FAMILIES gives the
order in which an org's task file numbers them. A name two families declare (the original
org's knowledge QA and the Pro orgs') is one type: its declarations must agree on how it is
graded, what its agent may call and how CRMArena's harness faces it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from app.tasks import admin
from app.tasks.model import TaskType
from app.tasks.original import service_agent, service_analyst, service_manager
from app.tasks.pro import (
    confidentiality,
    sales_activity,
    sales_analyst,
    sales_insights,
    sales_leads,
    sales_ops,
    writes,
)
from app.tasks.pro import service_agent as pro_service_agent
from app.tasks.tools import ANY_WRITE, READ_ONLY

# The families, in the order the task files number their types (an org draws those declared
# for it). A new family is appended: the types before it keep their numbers.
FAMILIES = (
    service_manager,
    service_agent,
    pro_service_agent,
    service_analyst,
    sales_analyst,
    sales_ops,
    sales_leads,
    sales_activity,
    confidentiality,
    writes,
    sales_insights,
    admin,
)
# What declarations of one name must agree on: what is read of a task row by its name alone.
SHARED = ("reward_metric", "answer_kind", "tools", "external_facing", "skill")


class Registry:
    """Task type declarations, in order; a name declared at most once per org."""

    def __init__(self, declarations: Iterable[TaskType] = ()) -> None:
        self._declared: list[TaskType] = []
        for kind in declarations:
            self.add(kind)

    def add(self, kind: TaskType) -> None:
        for other in self.named(kind.name):
            if set(other.orgs) & set(kind.orgs):
                raise ValueError(f"Task type {kind.name} is declared twice for the same org")
            differ = [key for key in SHARED if getattr(other, key) != getattr(kind, key)]
            if differ:
                raise ValueError(
                    f"The declarations of task type {kind.name} differ in {', '.join(differ)}"
                )
        self._declared.append(kind)

    def remove(self, kind: TaskType) -> None:
        self._declared.remove(kind)

    @contextmanager
    def registered(self, *kinds: TaskType) -> Iterator[None]:
        """The types declared for the time of the block (a test's own types)."""
        added: list[TaskType] = []
        try:
            for kind in kinds:
                self.add(kind)
                added.append(kind)
            yield
        finally:
            for kind in added:
                self.remove(kind)

    def __iter__(self) -> Iterator[TaskType]:
        return iter(tuple(self._declared))

    def orgs(self) -> tuple[str, ...]:
        """The orgs some type is drawn in, in the order the declarations first name them."""
        return tuple(dict.fromkeys(org for kind in self._declared for org in kind.orgs))

    def of_org(self, org: str) -> tuple[TaskType, ...]:
        """The types drawn in `org`, in task-file order."""
        return tuple(kind for kind in self._declared if org in kind.orgs)

    def named(self, name: str) -> tuple[TaskType, ...]:
        """The declarations of a type name (one per family that declares it)."""
        return tuple(kind for kind in self._declared if kind.name == name)

    def first(self, name: str) -> TaskType | None:
        """A declaration of the name: any one tells what all of them share (SHARED)."""
        return next(iter(self.named(name)), None)

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(kind.name for kind in self._declared))


TASK_TYPES = Registry(kind for family in FAMILIES for kind in family.TASK_TYPES)


def answer_kind(name: str) -> str | None:
    """The kind of item an exact-match answer of the type lists (None: not an exact-match
    type, or no type of that name)."""
    kind = TASK_TYPES.first(name)
    return kind.answer_kind if kind else None


def tool_set_of(row: Mapping[str, Any]) -> frozenset[str]:
    """The tool set of a task row: its type's, or by its metric for a type none declares."""
    kind = TASK_TYPES.first(str(row.get("task")))
    if kind is not None:
        return kind.tools
    return ANY_WRITE if row.get("reward_metric") == "diff_match" else READ_ONLY


def external_facing() -> Sequence[str]:
    """The types asked as the company's customer-facing agent."""
    return list(dict.fromkeys(kind.name for kind in TASK_TYPES if kind.external_facing))
