"""CRMArena-Pro's interactive mode: a simulated user, an LLM behind an OpenAI-compatible
endpoint (`localforce eval --user-model`), who knows the task, opens the conversation in its
own words, gives what the agent asks for, and ends it with ###STOP### once the agent has
answered, at most MAX_USER_TURNS replies in all. The agent's last answer is the one graded."""

from __future__ import annotations

from typing import Any

from app.evaluation.agent import ChatModel, Outcome, complete

MAX_USER_TURNS = 10  # CRMArena-Pro's limit of the user's turns
STOP = "###STOP###"

USER_PROMPT = """You play a person who needs something from a company's CRM and asks the
company's AI agent for it. Do not solve it yourself and do not make anything up.
What you need, which you know fully: {query}
{required}
Open the conversation with your request in your own words, briefly: you may leave out details
and give them when the agent asks. When the agent has given you an answer, or says it cannot
help, reply with only {stop}."""

OPEN = "(The agent is ready. Write your first message to it.)"


class SimulatedUser:
    def __init__(self, model: ChatModel, query: str, metadata: dict[str, Any]) -> None:
        self.model = model
        system = USER_PROMPT.format(query=query, required=metadata.get("required", ""), stop=STOP)
        # The user's side of the conversation: the agent's words are its "user" messages.
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]

    async def opening(self, outcome: Outcome) -> str:
        return await self._say(outcome, OPEN)

    async def reply(self, outcome: Outcome, answer: str) -> str | None:
        if outcome.user_turns >= MAX_USER_TURNS:
            return None
        outcome.user_turns += 1
        said = await self._say(outcome, answer)
        return None if STOP in said else said

    async def _say(self, outcome: Outcome, heard: str) -> str:
        self.messages.append({"role": "user", "content": heard})
        reply = await complete(self.model, self.messages, "user")
        outcome.user_tokens_in += reply.tokens_in
        outcome.user_tokens_out += reply.tokens_out
        said = str(reply.message.content or "")
        self.messages.append({"role": "assistant", "content": said})
        return said
