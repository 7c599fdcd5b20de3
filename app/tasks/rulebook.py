"""What a scripted reader knows of an org's texts (`seed/orgs/<org>/text`), where a task asks
for reading rather than querying: the lines the original org's policies count as violations,
which stage each kind of Pro sales activity belongs to, what a lead's answers say of each
BANT factor, which resolutions break a Pro issue's policy and what concern a deal's customer
raises on its calls.

The task generator and the reference agent both read through it: the generator over plain
SQL, the agent over the API, so each checks the other's reading."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from app.seeding.generate.text import load_text


def template_pattern(template: str) -> re.Pattern[str]:
    """A text template as a pattern: its placeholders ({product}, {account}) match any text."""
    parts = re.split(r"\{\w+\}", template)
    return re.compile(".+?".join(re.escape(part) for part in parts))


@functools.cache
def violation_lines() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """(the policy's article title, a line that violates it), for every violation line of the
    original org's policies and of its issues' stories."""
    policies = load_text("knowledge")["policies"]
    titles = {policy["key"]: policy["title"] for policy in policies}
    lines = [(policy["key"], line) for policy in policies for line in policy.get("violation", [])]
    for issue in load_text("issues")["issues"]:
        for scenario in issue.get("scenarios", []):
            for key, extra in scenario.get("violations", {}).items():
                lines += [(key, line) for line in extra]
    return tuple((titles[key], template_pattern(line)) for key, line in lines)


@functools.cache
def _task_subjects(org: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    stages = load_text("sales", org)["tasks"]
    return tuple(
        (stage, template_pattern(spec["subject"]))
        for stage, specs in stages.items()
        for spec in specs
    )


def stages_of_subject(org: str, subject: str) -> set[str]:
    """The stages of a Pro org whose kind of task a subject is (one, unless the texts are
    ambiguous)."""
    return {stage for stage, pattern in _task_subjects(org) if pattern.fullmatch(subject)}


# --- Pro sales: the stage an opportunity's activity shows -------------------------------------


@functools.cache
def stage_order(org: str) -> tuple[str, ...]:
    """A Pro org's sales stages, first to last."""
    return tuple(load_text("sales", org)["tasks"])


@functools.cache
def _activity_lines(org: str) -> dict[str, tuple[tuple[str, re.Pattern[str]], ...]]:
    """Per kind of activity, (stage, the pattern of a text of that stage): the subjects of tasks,
    events and e-mails, and what the agent says in a call."""
    text = load_text("sales", org)
    stages = stage_order(org)

    def lines(kind: str, key: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
        return tuple((s, template_pattern(spec[key])) for s in stages for spec in text[kind][s])

    return {
        "task": lines("tasks", "subject"),
        "event": lines("events", "subject"),
        "email": lines("emails", "subject"),
        "call": lines("calls", "agent"),
    }


def said_lines(transcript: str) -> list[str]:
    """What each speaker says in a transcript of '[time] Name (Role): words' lines."""
    return [line.split("): ", 1)[1] for line in transcript.splitlines() if "): " in line]


@dataclass(frozen=True)
class DealActivity:
    """What an opportunity's records say of its progress: the subjects of its tasks (those not
    started aside: they are plans, not progress), events and e-mails, its call transcripts, and
    whether it has a quote."""

    task_subjects: list[str]
    event_subjects: list[str]
    email_subjects: list[str]
    call_transcripts: list[str]
    has_quote: bool


def stage_shown(org: str, activity: DealActivity) -> str | None:
    """The latest stage the activity shows (an opportunity with a quote is at least in the
    Quote stage), or None when nothing in it tells a stage."""
    patterns = _activity_lines(org)
    texts = {
        "task": activity.task_subjects,
        "event": activity.event_subjects,
        "email": [subject.removeprefix("RE: ") for subject in activity.email_subjects],
        "call": [said for body in activity.call_transcripts for said in said_lines(body)],
    }
    shown = {
        stage
        for kind, lines in texts.items()
        for line in lines
        for stage, pattern in patterns[kind]
        if pattern.fullmatch(line)
    }
    if activity.has_quote:
        shown.add(QUOTE_STAGE)
    order = stage_order(org)
    return max(shown, key=order.index) if shown else None


QUOTE_STAGE = "Quote"


# --- Pro leads: the BANT factors a lead's calls show it fails ---------------------------------


@functools.cache
def _bant_answers(org: str) -> dict[str, tuple[tuple[bool, re.Pattern[str]], ...]]:
    factors = load_text("sales", org)["lead_calls"]["factors"]
    return {
        factor: tuple(
            (met, template_pattern(line))
            for met, key in ((True, "met"), (False, "not_met"))
            for line in spec[key]
        )
        for factor, spec in factors.items()
    }


def bant_factors(org: str) -> tuple[str, ...]:
    return tuple(load_text("sales", org)["lead_calls"]["factors"])


def factors_failed(org: str, transcripts: list[str]) -> dict[str, bool] | None:
    """Factor -> whether the lead's answers in its calls show it fails it, for the factors the
    calls cover; None when an answer is both met and not met, or a factor is not covered."""
    heard: dict[str, set[bool]] = {}
    for said in (line for body in transcripts for line in said_lines(body)):
        for factor, answers in _bant_answers(org).items():
            for met, pattern in answers:
                if pattern.fullmatch(said):
                    heard.setdefault(factor, set()).add(not met)
    if set(heard) != set(bant_factors(org)) or any(len(v) != 1 for v in heard.values()):
        return None
    return {factor: heard[factor].pop() for factor in bant_factors(org)}


# --- Pro deals: the concern a deal's customer raises on its calls ----------------------------


@functools.cache
def _insight_lines(org: str, key: str) -> tuple[re.Pattern[str], ...]:
    """The lines (said on a call: `lead_ins`, written in an e-mail: `email_lead_ins`) that
    state an insight, as patterns whose group `insight` is it."""
    patterns = []
    for template in load_text("sales", org)["insights"][key]:
        before, after = template.split("{insight}")
        patterns.append(re.compile(f"{re.escape(before)}(?P<insight>.+){re.escape(after)}"))
    return tuple(patterns)


def insights_stated(org: str, transcripts: list[str], emails: list[str]) -> set[str]:
    """The concerns the customer states in the deal's call transcripts and e-mail bodies, in
    their words."""
    lines = [
        *((line, "lead_ins") for body in transcripts for line in said_lines(body)),
        *((line, "email_lead_ins") for body in emails for line in body.splitlines()),
    ]
    return {
        found["insight"]
        for line, key in lines
        for pattern in _insight_lines(org, key)
        if (found := pattern.fullmatch(line))
    }


# --- Pro service: the resolution a case's conversation shows to break its policy -------------


@functools.cache
def _pro_resolutions(org: str) -> tuple[tuple[str, bool, re.Pattern[str]], ...]:
    issues = load_text("service", org)["issues"]
    return tuple(
        (issue["name"], breaks, template_pattern(issue[key]))
        for issue in issues
        for breaks, key in ((False, "resolution"), (True, "violation"))
    )


def resolutions_stated(org: str, texts: list[str]) -> set[tuple[str, bool]]:
    """(issue, whether it breaks the issue's resolution policy) for each resolution a line of
    the texts (chat, e-mails) states."""
    return {
        (name, breaks)
        for name, breaks, line in _pro_resolutions(org)
        for text in texts
        if line.search(text)
    }


def resolution_policy_title(org: str, issue: str) -> str:
    """The title of an issue's resolution policy article in a Pro org's knowledge base."""
    title: str = load_text("knowledge", org)["per_issue"][0]["title"]
    return title.format(issue=issue)


@dataclass(frozen=True)
class CaseStory:
    """How a customer opens a case about an issue: the subjects and the description of one of
    its stories (the original org's seed/orgs/original/text/issues.yaml, a Pro org's
    service.yaml)."""

    issue: str
    subjects: tuple[str, ...]
    description: str


def _reading_pattern(template: str) -> re.Pattern[str]:
    """A template as a pattern that captures the product it names ({product}, first named,
    then the same words again); its other placeholders match any text."""
    parts = re.split(r"(\{\w+\})", template)
    pattern, named = "", False
    for part in parts:
        if part == "{product}":
            pattern += "(?P=product)" if named else "(?P<product>.+?)"
            named = True
        elif re.fullmatch(r"\{\w+\}", part):
            pattern += ".+?"
        else:
            pattern += re.escape(part)
    return re.compile(pattern)


@functools.cache
def case_stories(org: str) -> tuple[CaseStory, ...]:
    """The org's stories whose description names the product: the ones a new case can be
    routed by (the routing policy weighs the agents' cases about the product)."""
    if org == "original":
        stories = [
            CaseStory(issue["name"], tuple(scenario["subjects"]), scenario["description"])
            for issue in load_text("issues")["issues"]
            for scenario in issue["scenarios"]
        ]
    else:
        stories = [
            CaseStory(issue["name"], tuple(issue["subjects"]), description)
            for issue in load_text("service", org)["issues"]
            for description in issue["descriptions"]
        ]
    return tuple(story for story in stories if "{product}" in story.description)


@functools.cache
def _story_patterns(
    org: str,
) -> tuple[tuple[str, tuple[re.Pattern[str], ...], re.Pattern[str]], ...]:
    return tuple(
        (
            story.issue,
            tuple(template_pattern(subject) for subject in story.subjects),
            _reading_pattern(story.description),
        )
        for story in case_stories(org)
    )


def story_readings(org: str, subject: str, description: str) -> set[tuple[str, str]]:
    """(issue, product name) for every story of the org whose words a new case's subject and
    description are: one reading when the words tell both apart."""
    readings: set[tuple[str, str]] = set()
    for issue, subjects, words in _story_patterns(org):
        told = words.fullmatch(description.strip())
        if told is not None and any(s.fullmatch(subject.strip()) for s in subjects):
            readings.add((issue, told["product"]))
    return readings


@functools.cache
def spec_questions(org: str) -> dict[str, str]:
    """A Pro org's specification sheet columns -> the question that asks one of a product
    ({product}: its name)."""
    columns = load_text("knowledge", org)["spec_sheet"]["columns"]
    return {str(column["name"]): str(column["question"]) for column in columns}
