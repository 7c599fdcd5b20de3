"""What a task is: CRMArena's row (crmarena.md section 4), the draft a task type draws before it
is numbered, the API a solver reads the org through, and the declaration of a task type (what
app.tasks.registry collects)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from random import Random
from typing import Any, Protocol, TypeVar, runtime_checkable

from sqlalchemy import Connection

from app.errors import SalesforceError
from app.seeding.generate import LatentTruth, generate
from app.seeding.pro import ProLatentTruth
from app.seeding.pro import generate as generate_pro
from app.storage.tables import TableSet
from app.tasks.metrics import EXTRACTORS, METRICS
from app.tasks.org_sql import product_names
from app.tasks.tools import READ_ONLY

_T = TypeVar("_T")

# A text answer (None: the task has none), a list of Ids, or a write task's expected changes:
# [{"type": sObject, "id": record Id, "fields": {field: value}}].
Answer = str | list[str] | list[str | None] | list[dict[str, Any]] | None

# CRMArena-Pro's answer key gives about one task in five of a type the answer None (crmarena.md
# 4): the share of the Pro orgs' drawn tasks whose answer is None, in the types that have one.
ABSTAIN_SHARE = 0.2

# The orgs a task type is drawn in: CRMArena's original org, CRMArena-Pro's two.
ORIGINAL: tuple[str, ...] = ("original",)
PRO: tuple[str, ...] = ("b2b", "b2c")
EVERY_ORG: tuple[str, ...] = (*ORIGINAL, *PRO)

# CRMArena-Pro's skills (crmarena.md 5.2), by which a report groups the types.
WORKFLOW = "Workflow execution"
POLICY = "Policy compliance"
TEXT = "Text reasoning"
DATABASE = "Database querying and numerical computation"
CONFIDENTIALITY = "Confidentiality"
SKILLS = (WORKFLOW, POLICY, TEXT, DATABASE, CONFIDENTIALITY)

# How `metadata.required` names the task's today (its first line, `required_text`).
TODAY = re.compile(r"Today's date: (\d{4}-\d{2}-\d{2})")


@functools.cache
def planted_truth(seed: int) -> LatentTruth:
    return generate(seed).truth


@functools.cache
def planted_pro_truth(org: str, seed: int) -> ProLatentTruth:
    return generate_pro(org, seed).truth


class TaskGenerationFailed(SalesforceError):
    error_code = "INVALID_INPUT"
    status_code = 400


class PlantedTruthDisagrees(TaskGenerationFailed):
    """The database does not hold what the generator planted: it is not the org of this seed."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"The org's data disagrees with what its generator planted: {detail}")


class NotPlanted(TaskGenerationFailed):
    """The org was imported, not generated: nothing was planted to draw a task of this type
    from or check its answer against."""

    def __init__(self) -> None:
        super().__init__("The org was imported: no generator planted what this task type asks")


class DrawRejected(Exception):
    """A drawn task that is not emitted: the generator draws another."""


class Ambiguous(DrawRejected):
    """The data ties where the task's policy breaks no tie: no single answer is right."""


class NoAnswer(DrawRejected):
    """The data holds nothing the task asks about (not emitted where a type has no abstention
    cases)."""


@dataclass(frozen=True)
class OrgData:
    """An open connection to an org's database and its tables: what task types draw and solve
    from."""

    conn: Connection
    tables: TableSet
    org: str
    seed: int
    planted: bool = True  # False for an imported org: the types that read the truth are left out
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def remembered(self, key: str, read: Callable[[Connection, TableSet], _T]) -> _T:
        """What `read` reads of the org, read once per OrgData (a type draws many times from
        the same reads; the data does not change while it draws)."""
        if key not in self.memo:
            self.memo[key] = read(self.conn, self.tables)
        value: _T = self.memo[key]
        return value

    def product_name(self, product_id: str) -> str:
        """The product's name; Ambiguous where another product has the same one (a question
        naming it would name both)."""
        names = self.remembered("product_names", product_names)  # name -> Id, one per name
        name = next((n for n, found in names.items() if found == product_id), None)
        if name is None:
            raise Ambiguous
        return name

    def truth(self) -> LatentTruth:
        """What the generator planted in the org of this seed (for the checks of the types
        whose answers it planted)."""
        if not self.planted:
            raise NotPlanted
        return planted_truth(self.seed)

    def pro_truth(self) -> ProLatentTruth:
        """What the Pro generator planted in this org (b2b or b2c) of this seed."""
        if not self.planted:
            raise NotPlanted
        return planted_pro_truth(self.org, self.seed)


@dataclass(frozen=True)
class Draft:
    """A task as a type draws it: its answer, computed from the data, and its words."""

    answer: Answer
    query: str
    today: date
    policy: str  # the rules the answer follows, given to the agent in metadata.required
    optional: str = ""
    # What was drawn (period, product, threshold, ...): not written to the task file, kept for
    # checks that solve the task another way.
    params: Mapping[str, object] = field(default_factory=dict)


class Api(Protocol):
    """The org as a solver reads it: through its REST API, never its database."""

    def query(self, soql: str) -> list[dict[str, Any]]: ...

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None: ...

    def fields(self, sobject: str) -> set[str]: ...

    def sobjects(self) -> set[str]: ...


@runtime_checkable
class MetadataApi(Api, Protocol):
    """The org's API with its Metadata API: what an administrator's solver changes the schema
    through, as an agent's tools do."""

    def read_metadata(self, metadata_type: str, full_names: list[str]) -> list[Any]: ...

    def change_metadata(
        self, operation: str, metadata_type: str, components: list[dict[str, Any]]
    ) -> list[Any]: ...


class NotScripted(Exception):
    """A task the reference agent does not solve."""


class ForAnotherFamily(NotScripted):
    """A task a solver leaves to another family's: where two families declare a type name (the
    original org's knowledge QA and the Pro orgs'), the reference agent tries their solvers in
    turn, each raising this for a task of the other's orgs."""


# A task type's reference solver: the task as the agent gets it (its row, without the answer)
# -> the response; raises NotScripted where its script does not reach.
Solver = Callable[[Api, dict[str, Any]], str]


@dataclass(frozen=True)
class TaskType:
    """A task type, declared once, in its family's module (app/tasks/original, app/tasks/pro):
    what the generator draws, the grader scores, the reference agent solves and an episode
    gives its agent. A name two families declare (one per org family) means one type: the
    registry checks that they agree on how it is graded and what its agent may call."""

    name: str  # the dataset key, e.g. "handle_time"
    persona: str
    reward_metric: str  # one of metrics.METRICS
    draw: Callable[[Random, OrgData], Draft]  # raises DrawRejected for a draw not to emit
    solve: Solver  # the reference agent's script
    orgs: tuple[str, ...]  # the orgs it is drawn in (ORIGINAL, PRO, EVERY_ORG)
    skill: str  # one of SKILLS
    answer_kind: str | None = None  # an exact-match answer's items (metrics.EXTRACTORS)
    tools: frozenset[str] = READ_ONLY  # what its agent may call (app.tasks.tools)
    # Asked as the company's customer-facing agent (CRMArena's EXTERNAL_FACING_TASKS).
    external_facing: bool = False
    # Draws the generator may spend on each task it emits before giving up: more for a type
    # whose draws seldom find a single answer in a sparse org.
    draws_per_task: int = 40

    def __post_init__(self) -> None:
        problem = declaration_problem(self)
        if problem:
            raise ValueError(f"Task type {self.name}: {problem}")

    @property
    def writes(self) -> bool:
        """A write task: done by changing the org, graded by the episode's diff."""
        return self.reward_metric == "diff_match"


def declaration_problem(kind: TaskType) -> str:
    """What is wrong with a declaration ("" when nothing is)."""
    if kind.reward_metric not in METRICS:
        return f"reward_metric {kind.reward_metric} is not one of {', '.join(METRICS)}"
    if (kind.reward_metric == "exact_match") != (kind.answer_kind is not None):
        return "an exact_match type, and only one, names its answer_kind"
    if kind.answer_kind is not None and kind.answer_kind not in EXTRACTORS:
        return f"answer_kind {kind.answer_kind} is not one of {', '.join(EXTRACTORS)}"
    if kind.writes != bool(kind.tools - READ_ONLY):
        return "a diff_match type, and only one, has a write tool"
    if not kind.orgs:
        return "it is drawn in no org"
    if kind.skill not in SKILLS:
        return f"skill {kind.skill} is not one of {', '.join(SKILLS)}"
    return ""


@dataclass(frozen=True)
class TaskRow:
    idx: int
    task: str
    persona: str
    answer: Answer
    required: str
    optional: str
    reward_metric: str
    query: str
    seed: int | None = None  # the seed of the org the task is on, where a file holds several

    def to_json(self) -> dict[str, Any]:
        """The row in CRMArena's key order, then the org's seed if it names one."""
        row = {
            "idx": self.idx,
            "answer": self.answer,
            "task": self.task,
            "persona": self.persona,
            "metadata": {"required": self.required, "optional": self.optional},
            "reward_metric": self.reward_metric,
            "query": self.query,
        }
        return row if self.seed is None else {**row, "seed": self.seed}


def pro_answer(answer: Answer) -> Answer:
    """An answer as CRMArena-Pro's rows hold it: always a list, [None] for None (crmarena.md
    4); a list (of Ids, of BANT factors, of a write task's changes) stays as it is."""
    if answer is None:
        nothing: list[str | None] = [None]
        return nothing
    return [answer] if isinstance(answer, str) else answer


def required_text(today: date, policy: str) -> str:
    """`metadata.required`: today's date first (an episode's clock is pinned to it), then the
    policy."""
    return f"Today's date: {today.isoformat()}\n{policy}".rstrip()


def single_extreme(values: dict[str, float], extreme: str, margin: float = 0.0) -> str:
    """The key whose value is the lowest ("min") or the highest ("max"); Ambiguous when the
    runner-up is within `margin` of it, NoAnswer when there is nothing to compare."""
    if not values:
        raise NoAnswer
    ordered = sorted(values.items(), key=lambda item: item[1], reverse=extreme == "max")
    if len(ordered) > 1 and abs(ordered[0][1] - ordered[1][1]) <= margin:
        raise Ambiguous
    return ordered[0][0]
