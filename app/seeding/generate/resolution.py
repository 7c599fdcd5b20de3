"""What the agent finally tells the customer, and whether it breaks a knowledge policy.

A share of closed cases get a resolution that contradicts one of the policies governing the
case's issue (the latent "policy violation" the benchmark's policy_violation_identification
task asks to find). Violations are only injected where they make sense: a return-window
violation needs a purchase older than the window, a final-sale one a clearance order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from random import Random
from typing import Any

from app.seeding.generate.cases import CasePlan
from app.seeding.generate.knowledge import Knowledge, Policy
from app.seeding.generate.text import pick

VIOLATION_RATE = 0.16


@dataclass(frozen=True)
class Resolution:
    text: str
    violated: Policy | None


def _outside(policy: Policy, context: dict[str, Any]) -> bool:
    return policy.window is not None and context["days_since"] > context[policy.window]


def _violable(policy: Policy, context: dict[str, Any]) -> bool:
    if policy.violation_when == "outside":
        return _outside(policy, context)
    if policy.violation_when == "clearance":
        return bool(context["clearance"])
    return True


def resolve(
    rng: Random, plan: CasePlan, issue: dict[str, Any], knowledge: Knowledge, chat: dict[str, Any]
) -> Resolution:
    context = plan.context
    if plan.status != "Closed":
        waiting = chat["agent_escalated"] if plan.status == "Escalated" else chat["agent_pending"]
        return Resolution(pick(rng, waiting, context), None)
    policies = [knowledge.policies[key] for key in issue["policies"]]
    if rng.random() < VIOLATION_RATE:
        candidates = [p for p in policies if _violable(p, context)]
        if candidates:
            broken = rng.choice(candidates)
            lines = plan.scenario.get("violations", {}).get(broken.key) or broken.violation
            return Resolution(pick(rng, lines, context), broken)
    return Resolution(pick(rng, _compliant(plan, policies), context), None)


def _compliant(plan: CasePlan, policies: list[Policy]) -> Sequence[str]:
    """The compliant answers: those of the first policy that applies to this purchase, and
    within its window or outside it."""
    context = plan.context
    governing = next(
        p
        for p in policies
        if p.applies_when == "any" or (p.applies_when == "clearance" and context["clearance"])
    )
    if governing.window is None:
        return plan.scenario.get("compliant") or governing.compliant
    if _outside(governing, context):
        return governing.compliant_outside
    return governing.compliant_within
