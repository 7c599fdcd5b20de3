"""The agents a model is run as, CRMArena's two strategies, over a chat model behind an
OpenAI-compatible endpoint, until it answers or runs out of turns:

- function calling: the episode's tools (the MCP endpoint's, as the episode's token lists them)
  given as functions; the model answers by calling `submit_answer` (or CRMArena's `respond`),
  or by a message that calls no tool;
- ReAct: a text protocol, `<thought>...</thought>` then `<execute>SOQL or SOSL</execute>` (run
  by CRMArena's connector rules, the `issue_soql_query` tool) or `<respond>answer</respond>`.

Whatever the model sends, the loop goes on or ends with a reason: arguments that are not a
JSON object, or text in neither of ReAct's forms, are an error the model is told of; an
endpoint that fails after the client's retries ends the episode as failed."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai
from mcp import Client
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as McpTool

MAX_TURNS = 20  # CRMArena's limit of agent turns per episode
# The tools that answer, and the argument that holds the answer.
ANSWER_TOOLS = {"submit_answer": "response", "respond": "content"}

ANSWERING = """Give only what is asked (an Id, a name, a month, a state...), exactly as the
org spells it; if nothing in the org answers the request, answer None. You answer once."""

FUNCTION_CALLING_PROMPT = (
    """You are an expert Salesforce agent working in a Salesforce org
through its API. Answer the user's request using the tools, which read the org (SOQL and SOSL
queries, describes and records). When you know the answer, call submit_answer with it.
"""
    + ANSWERING
)

REACT_PROMPT = (
    """You are an expert Salesforce agent working in a Salesforce org through its
API. Each of your turns is <thought>your reasoning</thought> followed by exactly one of:
<execute>a SOQL query, or a SOSL search starting FIND</execute>, whose result you are shown;
<respond>your answer</respond>, which ends the task.
Examples: <execute>SELECT COUNT() FROM Opportunity</execute>;
<execute>FIND {Joe Smith} IN NAME FIELDS RETURNING Lead(Name, Phone)</execute>;
<execute>SELECT FirstName, LastName FROM Contact WHERE LastName = 'Smith'</execute>.
"""
    + ANSWERING
)

TASK_CONTEXT = """
{required}
{optional}
{schema}"""  # the schema's text starts "# Salesforce instance description", as CRMArena's

REACT_QUERY_TOOL = "issue_soql_query"  # CRMArena's connector: FIND is a search, else SOQL
RESPOND = re.compile(r"<respond>(.*?)</respond>", re.DOTALL)
EXECUTE = re.compile(r"<execute>(.*?)</execute>", re.DOTALL)
NOT_REACT = (
    "Your turn had neither <execute>...</execute> nor <respond>...</respond>: write "
    "<thought>...</thought> and then one of them."
)


@dataclass
class Outcome:
    """How an episode went on the agent's side: its answer (None: it gave none), why it
    failed, and what it cost."""

    answer: str | None = None  # the last answer it gave
    failure: str | None = None
    turns: int = 0
    user_turns: int = 0  # replies of the simulated user (interactive mode)
    tool_calls: int = 0
    tool_errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model_seconds: float = 0.0  # spent waiting for the model (the rest is localforce's and ours)
    user_tokens_in: int = 0  # the simulated user's
    user_tokens_out: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    # This turn's answer, and the tool call that gave it (its result is the user's reply).
    responded: str | None = None
    answer_call: str | None = None


@dataclass(frozen=True)
class ChatModel:
    """A model behind an OpenAI-compatible chat-completions endpoint."""

    client: openai.AsyncOpenAI
    name: str


def functions(tools: list[McpTool]) -> list[dict[str, Any]]:
    """The MCP tools as chat-completions functions."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


def result_text(result: CallToolResult) -> str:
    """A tool's result as the model reads it: its text, or its structured content as JSON,
    whole (as CRMArena gives it)."""
    text = "\n".join(item.text for item in result.content if isinstance(item, TextContent))
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return text


def _arguments(text: str | None) -> dict[str, Any] | str:
    """A call's arguments, or why they are not a JSON object (the model is told)."""
    try:
        parsed = json.loads(text or "{}")
    except json.JSONDecodeError as error:
        return f"the arguments are not JSON ({error.msg} at character {error.pos})"
    if not isinstance(parsed, dict):
        return "the arguments are not a JSON object"
    return parsed


class ModelFailed(Exception):
    """The endpoint gave no usable completion, after the client's retries."""


@dataclass(frozen=True)
class Reply:
    message: Any  # the completion's first choice's message
    tokens_in: int
    tokens_out: int


async def complete(
    model: ChatModel, messages: list[dict[str, Any]], who: str, **options: Any
) -> Reply:
    """The model's next message and what it cost; ModelFailed, its text starting with `who`,
    when the endpoint gives none after the client's retries."""
    try:
        completion = await model.client.chat.completions.create(
            model=model.name,
            messages=messages,  # type: ignore[arg-type]
            **options,
        )
    except openai.OpenAIError as error:
        raise ModelFailed(f"{who}: {type(error).__name__}: {str(error)[:300]}") from error
    if not completion.choices:
        raise ModelFailed(f"{who}: a completion without choices")
    usage = completion.usage
    return Reply(
        completion.choices[0].message,
        (usage.prompt_tokens or 0) if usage else 0,
        (usage.completion_tokens or 0) if usage else 0,
    )


async def _complete(model: ChatModel, outcome: Outcome, tools: list[dict[str, Any]] | None) -> Any:
    """The model's next message (counted as a turn, its tokens added), appended to the
    conversation."""
    outcome.turns += 1
    started = time.perf_counter()
    try:
        reply = await complete(
            model, outcome.messages, "model", **({"tools": tools} if tools else {})
        )
    finally:
        outcome.model_seconds += time.perf_counter() - started
    outcome.tokens_in += reply.tokens_in
    outcome.tokens_out += reply.tokens_out
    outcome.messages.append(reply.message.model_dump(exclude_none=True, exclude_unset=True))
    return reply.message


async def _function_calling_turn(
    model: ChatModel, mcp: Client, outcome: Outcome, tools: list[dict[str, Any]]
) -> None:
    """One turn: the model's message, and a result for each tool it calls (or its answer)."""
    message = await _complete(model, outcome, tools)
    calls = message.tool_calls or []
    if not calls:
        outcome.responded = message.content or ""
        return
    for call in calls:
        outcome.tool_calls += 1
        name = getattr(getattr(call, "function", None), "name", "") or ""
        arguments = _arguments(getattr(getattr(call, "function", None), "arguments", None))
        if outcome.responded is not None:  # a call after the answer: a result all the same
            text = "Not run: the answer ended the turn."
        elif isinstance(arguments, dict) and name in ANSWER_TOOLS:
            outcome.responded = str(arguments.get(ANSWER_TOOLS[name], ""))
            outcome.answer_call = call.id
            continue  # its result is the user's reply, if a user replies
        elif isinstance(arguments, str):
            outcome.tool_errors += 1
            text = f"Error: {arguments}; call {name} again with a JSON object"
        else:
            result = await mcp.call_tool(name, arguments)
            outcome.tool_errors += bool(result.is_error)
            text = result_text(result)
        outcome.messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


async def _react_turn(model: ChatModel, mcp: Client, outcome: Outcome) -> None:
    """One turn: the model's text, and what its <execute> gave (or its <respond>)."""
    text = (await _complete(model, outcome, None)).content or ""
    responded, executed = RESPOND.search(text), EXECUTE.search(text)
    if responded and (not executed or responded.start() < executed.start()):
        outcome.responded = responded.group(1).strip()
        return
    if executed is None:
        outcome.tool_errors += 1
        outcome.messages.append({"role": "user", "content": NOT_REACT})
        return
    outcome.tool_calls += 1
    result = await mcp.call_tool(REACT_QUERY_TOOL, {"query": executed.group(1).strip()})
    outcome.tool_errors += bool(result.is_error)
    observation = "Salesforce instance output: " + result_text(result)
    outcome.messages.append({"role": "user", "content": observation})


async def run_function_calling(
    model: ChatModel, mcp: Client, system: str, user: User, max_turns: int
) -> Outcome:
    tools = functions(list((await mcp.list_tools()).tools))
    return await _converse(
        system, user, max_turns, lambda outcome: _function_calling_turn(model, mcp, outcome, tools)
    )


async def run_react(
    model: ChatModel, mcp: Client, system: str, user: User, max_turns: int
) -> Outcome:
    return await _converse(
        system, user, max_turns, lambda outcome: _react_turn(model, mcp, outcome)
    )


class User(Protocol):
    """Who the agent answers: the task's query, once (single-turn), or a simulated user who
    replies to each answer until it is satisfied (interactive)."""

    async def opening(self, outcome: Outcome) -> str: ...

    async def reply(self, outcome: Outcome, answer: str) -> str | None:
        """What the user says to the answer; None: the conversation is over."""


@dataclass(frozen=True)
class SingleTurn:
    query: str

    async def opening(self, outcome: Outcome) -> str:
        return self.query

    async def reply(self, outcome: Outcome, answer: str) -> str | None:
        return None


async def _converse(
    system: str, user: User, max_turns: int, turn: Callable[[Outcome], Awaitable[None]]
) -> Outcome:
    """Turns until the model answers and the user has nothing to add, the model fails, or it
    runs out of turns (counted from the user's last message, as CRMArena counts them)."""
    outcome = Outcome(messages=[{"role": "system", "content": system}])
    try:
        outcome.messages.append({"role": "user", "content": await user.opening(outcome)})
        since_user = 0
        while since_user < max_turns:
            since_user += 1
            await turn(outcome)
            if outcome.responded is None:
                continue
            outcome.answer, outcome.responded = outcome.responded, None
            said = await user.reply(outcome, outcome.answer)
            if said is None:
                return outcome
            since_user = 0
            if outcome.answer_call is not None:
                reply = {"role": "tool", "tool_call_id": outcome.answer_call, "content": said}
            else:
                reply = {"role": "user", "content": said}
            outcome.messages.append(reply)
            outcome.answer_call = None
    except ModelFailed as error:
        outcome.failure = str(error)
        return outcome
    if outcome.answer is None:
        outcome.failure = f"no answer in {max_turns} turns"
    return outcome


@dataclass(frozen=True)
class Strategy:
    """An agent: its system prompt (before the task's context) and its loop."""

    prompt: str
    run: Callable[[ChatModel, Client, str, User, int], Awaitable[Outcome]]


STRATEGIES = {
    "function-calling": Strategy(FUNCTION_CALLING_PROMPT, run_function_calling),
    "react": Strategy(REACT_PROMPT, run_react),
}
