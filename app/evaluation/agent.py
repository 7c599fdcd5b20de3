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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

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

    answer: str | None = None
    failure: str | None = None
    turns: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)


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


async def _complete(model: ChatModel, outcome: Outcome, tools: list[dict[str, Any]] | None) -> Any:
    """The model's next message (counted as a turn, its tokens added), appended to the
    conversation."""
    outcome.turns += 1
    options: dict[str, Any] = {"tools": tools} if tools else {}
    try:
        completion = await model.client.chat.completions.create(
            model=model.name,
            messages=outcome.messages,  # type: ignore[arg-type]
            **options,
        )
    except openai.OpenAIError as error:
        raise ModelFailed(f"model: {type(error).__name__}: {str(error)[:300]}") from error
    if completion.usage is not None:
        outcome.tokens_in += completion.usage.prompt_tokens or 0
        outcome.tokens_out += completion.usage.completion_tokens or 0
    if not completion.choices:
        raise ModelFailed("model: a completion without choices")
    message = completion.choices[0].message
    outcome.messages.append(message.model_dump(exclude_none=True, exclude_unset=True))
    return message


async def _function_calling_turn(
    model: ChatModel, mcp: Client, outcome: Outcome, tools: list[dict[str, Any]]
) -> None:
    """One turn: the model's message, and a result for each tool it calls (or its answer)."""
    message = await _complete(model, outcome, tools)
    calls = message.tool_calls or []
    if not calls:
        outcome.answer = message.content or ""
        return
    for call in calls:
        outcome.tool_calls += 1
        name = getattr(getattr(call, "function", None), "name", "") or ""
        arguments = _arguments(getattr(getattr(call, "function", None), "arguments", None))
        if isinstance(arguments, dict) and name in ANSWER_TOOLS:
            outcome.answer = str(arguments.get(ANSWER_TOOLS[name], ""))
            return
        if isinstance(arguments, str):
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
        outcome.answer = responded.group(1).strip()
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
    model: ChatModel, mcp: Client, system: str, query: str, max_turns: int
) -> Outcome:
    tools = functions(list((await mcp.list_tools()).tools))
    return await _converse(
        system, query, max_turns, lambda outcome: _function_calling_turn(model, mcp, outcome, tools)
    )


async def run_react(
    model: ChatModel, mcp: Client, system: str, query: str, max_turns: int
) -> Outcome:
    return await _converse(
        system, query, max_turns, lambda outcome: _react_turn(model, mcp, outcome)
    )


async def _converse(
    system: str, query: str, max_turns: int, turn: Callable[[Outcome], Awaitable[None]]
) -> Outcome:
    """Turns until the model answers, fails or runs out of turns."""
    outcome = Outcome(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": query}]
    )
    while outcome.turns < max_turns:
        try:
            await turn(outcome)
        except ModelFailed as error:
            outcome.failure = str(error)
            return outcome
        if outcome.answer is not None:
            return outcome
    outcome.failure = f"no answer in {max_turns} turns"
    return outcome


@dataclass(frozen=True)
class Strategy:
    """An agent: its system prompt (before the task's context) and its loop."""

    prompt: str
    run: Callable[[ChatModel, Client, str, str, int], Awaitable[Outcome]]


STRATEGIES = {
    "function-calling": Strategy(FUNCTION_CALLING_PROMPT, run_function_calling),
    "react": Strategy(REACT_PROMPT, run_react),
}
