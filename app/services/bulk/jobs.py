"""Bulk jobs as both Bulk APIs' requests reach them: where a request's jobs are (its `Scope`),
and what their two state machines share. Each API declares the states a client may ask a job
for in one table (`Transitions`): the states each may start from, the kinds of job that may
ask, and what else the transition does; `make_transition` makes one in one platform
transaction, the job's row locked (a runner, or a sandbox reset, may have changed the job since
it was read)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine

from app.metadata.model import SObjectDef
from app.sandbox.model import Sandbox
from app.services.bulk.runner import BulkRunner
from app.services.context import OrgContext
from app.storage import bulk_jobs
from app.storage.bulk_jobs import FINISHED, Job, Origin, State
from app.storage.database import platform_transaction

# What the APIs' wire formats read of a job: the job itself, its states and the finished ones.
__all__ = ["FINISHED", "Job", "State"]


@dataclass(frozen=True)
class Scope:
    """What a Bulk request reaches: the platform database its jobs are rows of, this worker's
    job runner (None when LOCALFORCE_BULK_RUNNER is off), and its session's sandbox and org."""

    platform: Engine
    runner: BulkRunner | None
    sandbox: Sandbox
    ctx: OrgContext

    def origin(self) -> Origin:
        """A job made now, in this sandbox, by the session's user, at the request's API
        version."""
        ctx = self.ctx
        return Origin(
            self.sandbox.id, self.sandbox.instance, f"v{ctx.api_version}", ctx.user_id, ctx.now
        )

    def wake(self) -> None:
        """Tell this worker's runner a job waits (another worker's finds it at its next poll)."""
        if self.runner is not None:
            self.runner.wake()


# What else a transition does, in its transaction, given the job as it stood when locked.
Effect = Callable[[Connection, Job, datetime], None]


@dataclass(frozen=True)
class Transition:
    """A state a client may ask a job for: the states the job may be in to take it, the kinds
    of job that may ask it (any kind when empty), what else it does in the same transaction,
    and whether the job then waits for a runner."""

    start: tuple[str, ...]
    kinds: tuple[str, ...] = ()
    effect: Effect | None = None
    wakes_runner: bool = False


Transitions = Mapping[str, Transition]


def asked_transition(transitions: Transitions, wanted: object, kind: str) -> Transition | None:
    """The transition a client asks of a job of this kind, or None for a state it may not
    ask."""
    step = transitions.get(str(wanted))
    if step is None or (step.kinds and kind not in step.kinds):
        return None
    return step


def make_transition(
    scope: Scope,
    job: Job,
    wanted: str,
    step: Transition,
    refusal: Callable[[Job | None], Exception],
) -> Job:
    """Move the job to `wanted` as `step` says, and the job as it is then; refused with
    `refusal(current)` (current None when the job is gone) unless the job, locked, is in one of
    the step's start states."""
    now = scope.ctx.now
    with platform_transaction(scope.platform) as conn:
        current = bulk_jobs.lock_job(conn, job.seq)
        if (
            current is None
            or current.state not in step.start
            or not bulk_jobs.set_state(conn, current, wanted, now, expected=current.state)
        ):
            raise refusal(current)
        if step.effect is not None:
            step.effect(conn, current, now)
        changed = bulk_jobs.load_job(conn, job.seq)
    if step.wakes_runner:
        scope.wake()
    return changed


def upsert_key(sobject: SObjectDef, wanted: object) -> str | None:
    """The field an upsert job matches records on (an idLookup field: Id, an external id, or a
    standard one such as Contact.Email), or None when `wanted` names no such field of the
    object."""
    field = sobject.field(wanted) if isinstance(wanted, str) else None
    if field is None or not field.id_lookup:
        return None
    return field.name


def read_data(scope: Scope, job: Job, part: str) -> bytes | None:
    """One of a job's data parts (its upload, a result), None when it has none."""
    with scope.platform.connect() as conn:
        return bulk_jobs.get_data(conn, job.seq, part)
