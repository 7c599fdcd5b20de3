"""LiveChatTranscript and EmailMessage records: what was said on each case, and when.

Chats happen at case creation with the first owner; e-mails fill the rest of the case's life
up to ClosedDate, each sent by whoever owned the case at that moment. The resolution (possibly
a policy violation) appears in the chat if there was one, and in the agent's e-mails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from random import Random
from typing import Any

from app.seeding.common import Correspondent, transcript_record
from app.seeding.generate.cases import THREAD_ORIGINS, CasePlan
from app.seeding.generate.knowledge import Knowledge
from app.seeding.generate.people import People
from app.seeding.generate.records import Record, record_id, visitor_id
from app.seeding.generate.resolution import Resolution, resolve
from app.seeding.generate.sampling import spaced_times
from app.seeding.generate.text import fill, load_text, pick

FAREWELL_SHARE = 0.6  # chats where the agent asks "anything else?" before closing


@dataclass
class Conversations:
    transcripts: list[Record] = field(default_factory=list)
    emails: list[Record] = field(default_factory=list)
    violations: dict[str, str] = field(default_factory=dict)  # Case Id -> Knowledge__kav Id


def build_conversations(
    rng: Random,
    plans: list[CasePlan],
    people: People,
    issues: list[dict[str, Any]],
    knowledge: Knowledge,
) -> Conversations:
    text = load_text("conversation")
    result = Conversations()
    drafts: list[tuple[datetime, int, int, Record]] = []
    for plan in plans:
        issue = issues[plan.issue]
        resolution = resolve(rng, plan, issue, knowledge, text["chat"])
        if resolution.violated:
            result.violations[plan.id] = resolution.violated.article_id
        if plan.chat:
            result.transcripts.append(
                _transcript(
                    rng, plan, people, resolution, text["chat"], len(result.transcripts) + 1
                )
            )
        for seq, email in enumerate(_emails(rng, plan, people, resolution, text["email"])):
            drafts.append((email["MessageDate"], plan.index, seq, email))
    # E-mail ids follow the order in which the messages were sent, across all cases.
    drafts.sort(key=lambda draft: draft[:3])
    for n, (_, _, _, email) in enumerate(drafts):
        result.emails.append({"Id": record_id("EmailMessage", n + 1), **email})
    return result


def _transcript(
    rng: Random,
    plan: CasePlan,
    people: People,
    resolution: Resolution,
    chat: dict[str, Any],
    ordinal: int,
) -> Record:
    context = plan.context
    turns = [
        (True, pick(rng, chat["agent_greeting"], context)),
        (False, fill(plan.scenario["opening"], context)),
        (True, fill(plan.scenario["probe"], context)),
        (False, fill(plan.scenario["detail"], context)),
        (True, pick(rng, chat["agent_checking"], context)),
        (True, resolution.text),
        (False, pick(rng, chat["customer_ack"], context)),
    ]
    if rng.random() < FAREWELL_SHARE:
        turns.append((True, pick(rng, chat["agent_anything_else"], context)))
        turns.append((False, pick(rng, chat["customer_bye"], context)))
    turns.append((True, pick(rng, chat["agent_closing"], context)))
    times = spaced_times(rng, plan.created, plan.chat_end or plan.created, len(turns))
    return transcript_record(
        record_id("LiveChatTranscript", ordinal),
        visitor_id(ordinal),
        plan,
        [(at, by_agent, said) for at, (by_agent, said) in zip(times, turns, strict=True)],
        people.agents[plan.first_owner],
        people.contacts[plan.contact],
        account_id=people.customers[plan.customer].account_id,
        owner_id=people.agents[plan.owner].id,
    )


@dataclass(frozen=True)
class _Thread:
    """A case's e-mail thread being written."""

    plan: CasePlan
    mail: dict[str, Any]
    resolution: Resolution
    customer_first: bool  # the customer's message opened the case
    last_agent: int  # the number of the agent's last message


def _emails(
    rng: Random,
    plan: CasePlan,
    people: People,
    resolution: Resolution,
    mail: dict[str, Any],
) -> list[Record]:
    """The case's e-mail thread, alternating between customer and agent.

    A customer-opened thread runs: the customer's problem (the case description), the agent's
    questions, details or follow-ups, and the agent's resolution. After a chat or phone call,
    the agent opens with a recap that carries the resolution.
    """
    customer_first = plan.origin in THREAD_ORIGINS  # the customer's message opened the case
    if customer_first:
        start = plan.created
    else:
        after = (plan.chat_end or plan.assigned) + timedelta(seconds=rng.randint(120, 600))
        start = min(after, plan.end)
    times = spaced_times(rng, start, plan.end, plan.emails)
    senders = [(n % 2 == 0) != customer_first for n in range(plan.emails)]  # True = agent
    last_agent = max(n for n, by_agent in enumerate(senders) if by_agent)
    thread = _Thread(plan, mail, resolution, customer_first, last_agent)
    contact = people.contacts[plan.contact]
    emails: list[Record] = []
    for n, (at, by_agent) in enumerate(zip(times, senders, strict=True)):
        agent = people.agents[plan.owner_at(at)]
        context = plan.context | {"agent_first": agent.first, "agent_name": agent.name}
        subject = fill(mail["reply_subject"], context) if n else context["subject"]
        if by_agent and n == 0:
            recap = mail["recap"][plan.origin]
            subject = pick(rng, recap["subjects"], context)
            content = f"{pick(rng, recap['intros'], context)}\n\n{resolution.text}"
        elif by_agent:
            content = _agent_reply(rng, thread, n)
        else:
            content = _customer_message(rng, thread, context, n)
        if by_agent:
            body = (
                f"{pick(rng, mail['agent_greeting'], context)}\n\n{content}\n\n"
                f"{pick(rng, mail['agent_closing_line'], context)}\n\n"
                f"{pick(rng, mail['agent_signoff'], context)}\n"
                f"{fill(mail['agent_signature'], context)}"
            )
        else:
            body = _customer_body(rng, mail, context, content, n, agent.first, contact.name)
        emails.append(email_record(subject, body, at, by_agent, agent, contact, ParentId=plan.id))
    return emails


def _customer_message(rng: Random, thread: _Thread, context: dict[str, Any], n: int) -> str:
    """What the customer writes in message `n`: the problem, thanks once it is settled, the
    scenario's detail, or a follow-up."""
    plan, mail = thread.plan, thread.mail
    if n == 0:
        return str(context["description"])
    if n > thread.last_agent or (not thread.customer_first and plan.status == "Closed"):
        return pick(rng, mail["customer_thanks"], context)
    if n == 2:
        return fill(plan.scenario["detail"], context)
    return pick(rng, mail["customer_followup"], context)


def _customer_body(
    rng: Random,
    mail: dict[str, Any],
    context: dict[str, Any],
    content: str,
    n: int,
    agent_first: str,
    contact_name: str,
) -> str:
    greeting = pick(rng, mail["customer_greeting"], context) if n == 0 else f"Hi {agent_first},"
    signoff = pick(rng, mail["customer_signoff"], context)
    return f"{greeting}\n\n{content}\n\n{signoff}\n{contact_name}"


def _agent_reply(rng: Random, thread: _Thread, n: int) -> str:
    plan, mail, context = thread.plan, thread.mail, thread.plan.context
    if not thread.customer_first:
        # The recap already resolved it; later replies acknowledge or report progress.
        key = "agent_followup_reply" if plan.status == "Closed" else "agent_update"
        return pick(rng, mail[key], context)
    if n == thread.last_agent:
        return f"{pick(rng, mail['agent_resolution_intro'], context)} {thread.resolution.text}"
    if n == 1:
        return (
            f"{pick(rng, mail['agent_ack_intro'], context)} {fill(plan.scenario['probe'], context)}"
        )
    return pick(rng, mail["agent_update"], context)


def email_record(
    subject: str,
    body: str,
    at: datetime,
    by_agent: bool,
    agent: Correspondent,
    contact: Correspondent,
    **links: str | None,
) -> Record:
    """One EmailMessage between an agent and a contact, without an Id; `links` (ParentId,
    RelatedToId) tie it to its case or deal and come first."""
    sender = (agent.name, agent.email) if by_agent else (contact.name, contact.email)
    to = (contact.email, contact.id) if by_agent else (agent.email, agent.id)
    return {
        **links,
        "Subject": subject,
        "TextBody": body,
        "FromName": sender[0],
        "FromAddress": sender[1],
        "ToAddress": to[0],
        "ToIds": [to[1]],
        "MessageDate": at,
        "Incoming": not by_agent,
        "Status": "3" if by_agent else "0",
        "CreatedDate": at,
    }
