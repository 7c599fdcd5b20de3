"""The function-calling agent: a chat model behind an OpenAI-compatible endpoint, given the
episode's tools (the MCP endpoint's, as the episode's token lists them) as functions, until it
answers or runs out of turns.

The model answers by calling `submit_answer` (or CRMArena's `respond`), or by a message that
calls no tool. Whatever the model sends, the loop goes on or ends with a reason: arguments that
are not a JSON object are a tool error the model sees, an endpoint that fails after the
client's retries ends the episode as failed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import openai
from mcp import Client
from mcp.types import CallToolResult, TextContent
from mcp.types import Tool as McpTool

MAX_TURNS = 20  # CRMArena's limit of agent turns per episode
# The tools that answer, and the argument that holds the answer.
ANSWER_TOOLS = {"submit_answer": "response", "respond": "content"}

SYSTEM_PROMPT = """You are an expert Salesforce agent working in a Salesforce org through its API.
Answer the user's request using the tools, which read the org (SOQL and SOSL queries, describes
and records). When you know the answer, call submit_answer with it: give only what is asked
(an Id, a name, a month, a state...), exactly as the org spells it; if nothing in the org
answers the request, say None. You may call submit_answer once.

{required}
{optional}
The org's objects and fields:
{schema}"""


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


async def run_agent(
    model: ChatModel, mcp: Client, system: str, query: str, *, max_turns: int = MAX_TURNS
) -> Outcome:
    """One episode's conversation: the model's turns, each answered by the tools it calls."""
    tools = functions(list((await mcp.list_tools()).tools))
    outcome = Outcome(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": query}]
    )
    messages = outcome.messages
    while outcome.turns < max_turns:
        outcome.turns += 1
        try:
            completion = await model.client.chat.completions.create(
                model=model.name,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
            )
        except openai.OpenAIError as error:
            outcome.failure = f"model: {type(error).__name__}: {str(error)[:300]}"
            return outcome
        if completion.usage is not None:
            outcome.tokens_in += completion.usage.prompt_tokens or 0
            outcome.tokens_out += completion.usage.completion_tokens or 0
        if not completion.choices:
            outcome.failure = "model: a completion without choices"
            return outcome
        message = completion.choices[0].message
        calls = message.tool_calls or []
        messages.append(message.model_dump(exclude_none=True, exclude_unset=True))
        if not calls:
            outcome.answer = message.content or ""
            return outcome
        for call in calls:
            outcome.tool_calls += 1
            name = getattr(getattr(call, "function", None), "name", "") or ""
            arguments = _arguments(getattr(getattr(call, "function", None), "arguments", None))
            if isinstance(arguments, dict) and name in ANSWER_TOOLS:
                outcome.answer = str(arguments.get(ANSWER_TOOLS[name], ""))
                return outcome
            if isinstance(arguments, str):
                outcome.tool_errors += 1
                text = f"Error: {arguments}; call {name} again with a JSON object"
            else:
                result = await mcp.call_tool(name, arguments)
                outcome.tool_errors += bool(result.is_error)
                text = result_text(result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    outcome.failure = f"no answer in {max_turns} turns"
    return outcome
