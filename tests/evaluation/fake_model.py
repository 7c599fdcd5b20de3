"""An OpenAI-compatible chat-completions server for the runner's tests (no network): models
by name, each a behaviour a real endpoint shows.

- `reference`: the reference agent as a model. Each turn it runs the task's reference script
  again over the tool results the conversation holds; the first call the script makes that the
  conversation has no result for is the model's next tool call, and once the script finishes,
  its answer is submitted.
- `reference-react`: the same through ReAct's text protocol: each query the script makes is an
  `<execute>`, its observation read back as CRMArena's connector shows it (ReactReplayApi).
- `nonsense`: answers, without a tool, another task's answer of the same type (the baseline of
  guessing from the answer key).
- `verbose`: the right answer, in a sentence.
- `oracle`: lists the org's cases (one query), then submits the right answer as it is written.
- `judge-rules`, `judge-contrary`, `judge-garbage`: LLM judges. The first extracts what the
  rules extract and says a refusal is one when the rules do; the second extracts nothing and
  says YES to everything; the third answers neither JSON nor YES or NO.
- `user-sim`: CRMArena-Pro's simulated user. It opens vaguely, gives its task's query when the
  agent answers that, and ends with ###STOP### at the next answer. The `reference` model, not
  yet knowing the task, asks what is needed.
- `faulty`: a fault a conversation meets, by its task (FAULTS): a 429 or a 500 before the first
  answer, a call slower than the client's timeout, malformed tool arguments, an unknown tool,
  an endpoint that always fails, an output of megabytes, a model that never answers.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import re
from collections import Counter
from random import Random
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from app.evaluation.judging import KIND_WORDS
from app.tasks.judge import QUESTION
from app.tasks.metrics import EXTRACTORS, privacy_rejection
from app.tasks.reference_agent import solve
from app.tasks.tools import METADATA_TOOLS

SLOW_SECONDS = 3.0  # longer than the tests' client timeout
HUGE_CHARS = 2_000_000
FAULTS = (
    "429_once",
    "500_once",
    "slow_once",
    "malformed_arguments",
    "unknown_tool",
    "always_500",
    "huge_output",
    "never_answers",
)


USER_LINES = ("Hi, I need some help with our CRM.", "{query}", "###STOP###")


class NeedCall(Exception):
    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        super().__init__(name)
        self.name = name
        self.arguments = arguments


class ReplayApi:
    """The app.tasks.model.Api of a conversation: each call answered by the result the
    conversation holds for it, in order; the first call without one is raised (NeedCall)."""

    def __init__(self, done: list[tuple[str, dict[str, Any], str]]) -> None:
        self.done = done
        self.at = 0

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        if self.at == len(self.done):
            raise NeedCall(name, arguments)
        called, given, text = self.done[self.at]
        self.at += 1
        assert (called, given) == (name, arguments), (called, given, name, arguments)
        return json.loads(text)

    def query(self, soql: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self._call("soql_query", {"query": soql})["records"]
        return records

    def update(self, sobject: str, record_id: str, fields: dict[str, Any]) -> None:
        self._call("update_record", {"sobject": sobject, "record_id": record_id, "fields": fields})

    def fields(self, sobject: str) -> set[str]:
        return {field["name"] for field in self._call("describe", {"sobject": sobject})["fields"]}

    def sobjects(self) -> set[str]:
        return {sobject["name"] for sobject in self._call("describe_global", {})["sobjects"]}

    def read_metadata(self, metadata_type: str, full_names: list[str]) -> list[Any]:
        arguments = {"metadata_type": metadata_type, "full_names": full_names}
        records: list[Any] = self._call("read_metadata", arguments)["records"]
        return records

    def change_metadata(
        self, operation: str, metadata_type: str, components: list[dict[str, Any]]
    ) -> list[Any]:
        arguments = {"metadata_type": metadata_type, "components": components}
        results: list[Any] = self._call(METADATA_TOOLS[operation], arguments)["results"]
        return results


# The tools the reference script calls (ReplayApi); a conversation's other calls (a faulty
# model's) are not the script's.
REPLAYED = {
    "soql_query", "update_record", "describe", "describe_global", "read_metadata",
    *METADATA_TOOLS.values(),
}  # fmt: skip


class Record(dict[str, Any]):
    """A record as ReAct's observation shows it: a column null in every row is left out."""

    def __missing__(self, key: str) -> None:
        return None


class ReactReplayApi(ReplayApi):
    """The Api of a ReAct conversation, over the original org (its objects, which no query
    tells): each query an <execute>, answered by the observation that followed it."""

    def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name == "describe_global":
            return {"sobjects": [{"name": "Case"}]}  # the original org has no Pro objects
        return super()._call(name, arguments)

    def query(self, soql: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self._call("soql_query", {"query": soql})
        return [Record(record) for record in records]


def _react_done(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """The queries a ReAct conversation executed, each with its observation (Python's text of
    the records, as CRMArena's connector gives it), as JSON."""
    done = []
    for said, shown in zip(messages[2::2], messages[3::2], strict=False):
        executed = re.search(r"<execute>(.*?)</execute>", said.get("content") or "", re.DOTALL)
        observation = shown["content"].removeprefix("Salesforce instance output: ")
        if executed:
            records = ast.literal_eval(observation)
            done.append(("soql_query", {"query": executed.group(1)}, json.dumps(records)))
    return done


def _done_calls(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    done = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call["function"]
            try:
                arguments = json.loads(function["arguments"])
            except json.JSONDecodeError:
                continue
            if function["name"] in REPLAYED:
                done.append((function["name"], arguments, results[call["id"]]))
    return done


def _completion(
    model: str, content: str | None = None, call: tuple[str, Any] | None = None, turn: int = 0
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if call is not None:
        name, arguments = call
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        message["tool_calls"] = [
            {
                "id": f"call_{turn}",
                "type": "function",
                "function": {"name": name, "arguments": text},
            }
        ]
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if call else "stop",
            }
        ],
        "usage": {"prompt_tokens": 100 + turn, "completion_tokens": 10, "total_tokens": 110 + turn},
    }


class FakeModels:
    """The models' server, over the task rows the conversations are about."""

    def __init__(self, tasks: list[dict[str, Any]]) -> None:
        self.tasks = tasks
        self.attempts: Counter[tuple[str, int]] = Counter()
        self.requests = 0
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.complete)

    def task_of(self, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The task a conversation is about: its query said by the user (or, for the simulated
        user, written in its prompt)."""
        system = messages[0]["content"]
        said = {m["content"] for m in messages if m["role"] in ("user", "tool")}
        found = [
            task
            for task in self.tasks
            if task["metadata"]["required"] in system
            and (task["query"] in said or f"fully: {task['query']}" in system)
        ]
        assert len(found) <= 1
        return found[0] if found else None

    def fault_of(self, task: dict[str, Any]) -> str:
        return FAULTS[int(task["idx"]) % len(FAULTS)]

    async def complete(self, request: Request) -> Any:
        self.requests += 1
        body = await request.json()
        model, messages = body["model"], body["messages"]
        if model.startswith("judge-"):
            return _completion(model, content=judge_reply(model, messages[0]["content"]))
        task = self.task_of(messages)
        turn = sum(message["role"] == "assistant" for message in messages)
        if model == "user-sim":
            assert task is not None
            return _completion(model, content=USER_LINES[min(turn, 2)].format(**task), turn=turn)
        if task is None:  # an interactive user's vague opening
            return _completion(model, content="What do you need me to do?", turn=turn)
        if model == "reference":
            return self.reference(model, task, messages, turn)
        if model == "reference-react":
            return self.reference_react(model, task, messages, turn)
        if model == "oracle":
            if turn == 0:
                query = {"query": "SELECT Id, Subject FROM Case ORDER BY Id"}
                return _completion(model, call=("soql_query", query), turn=turn)
            submitted = {"response": str(task["answer"])}
            return _completion(model, call=("submit_answer", submitted), turn=turn)
        if model == "verbose":
            answer = f"Having read the org, the answer is {task['answer']}."
            return _completion(model, content=answer, turn=turn)
        if model == "nonsense":
            return _completion(model, content=nonsense_answer(self.tasks, task), turn=turn)
        return await self.faulty(model, task, messages, turn)

    def reference(
        self, model: str, task: dict[str, Any], messages: list[dict[str, Any]], turn: int
    ) -> dict[str, Any]:
        given = {key: value for key, value in task.items() if key != "answer"}
        try:
            answer = solve(ReplayApi(_done_calls(messages)), given)
        except NeedCall as needed:
            return _completion(model, call=(needed.name, needed.arguments), turn=turn)
        return _completion(model, call=("submit_answer", {"response": answer}), turn=turn)

    def reference_react(
        self, model: str, task: dict[str, Any], messages: list[dict[str, Any]], turn: int
    ) -> dict[str, Any]:
        given = {key: value for key, value in task.items() if key != "answer"}
        try:
            answer = solve(ReactReplayApi(_react_done(messages)), given)
        except NeedCall as needed:
            text = f"<thought>I need data.</thought><execute>{needed.arguments['query']}</execute>"
            return _completion(model, content=text, turn=turn)
        return _completion(model, content=f"<thought>Done.</thought><respond>{answer}</respond>")

    async def faulty(
        self, model: str, task: dict[str, Any], messages: list[dict[str, Any]], turn: int
    ) -> Any:
        fault = self.fault_of(task)
        key = hashlib.sha256(json.dumps(messages[:2]).encode()).hexdigest()
        self.attempts[(key, turn)] += 1
        first = self.attempts[(key, turn)] == 1
        if fault == "429_once" and first:
            return JSONResponse({"error": {"message": "slow down"}}, 429, {"retry-after": "0"})
        if fault == "500_once" and first:
            return JSONResponse({"error": {"message": "overloaded"}}, 500)
        if fault == "slow_once" and first:
            await asyncio.sleep(SLOW_SECONDS)
        if fault == "always_500":
            return JSONResponse({"error": {"message": "down"}}, 500)
        if fault == "malformed_arguments" and turn == 0:
            return _completion(model, call=("soql_query", '{"query": "SELECT Id'), turn=turn)
        if fault == "unknown_tool" and turn == 0:
            return _completion(model, call=("drop_database", {}), turn=turn)
        if fault == "huge_output":
            return _completion(model, content="x" * HUGE_CHARS, turn=turn)
        if fault == "never_answers":
            return _completion(
                model, call=("soql_query", {"query": "SELECT Id FROM User"}), turn=turn
            )
        return self.reference(model, task, messages, turn)


def nonsense_answer(tasks: list[dict[str, Any]], task: dict[str, Any]) -> str:
    """Another task's answer of the same type, chosen by the task: a guess from the key."""
    others = [str(other["answer"]) for other in tasks if other["task"] == task["task"]]
    return Random(int(task["idx"])).choice(others)


def judge_reply(model: str, prompt: str) -> str:
    response = prompt.split("The response: ", 1)[1]
    if model == "judge-garbage":
        return "Perhaps."
    refusal = prompt.startswith(QUESTION.split("{", 1)[0])
    if model == "judge-contrary":
        return "YES" if refusal else "[]"
    if refusal:
        return "YES" if privacy_rejection(response) else "NO"
    kind = next(kind for kind, words in KIND_WORDS.items() if words in prompt)
    return json.dumps(EXTRACTORS[kind](response))
