"""GRPO on localforce episodes with TRL's GRPOTrainer (trl >= 1.16, its `rollout_func` hook):

    from trl import GRPOConfig, GRPOTrainer
    from localforce.trl import LocalforceRollout, episode_reward, task_rows

    rows = task_rows(url, admin_key=key, split="crmarena-original@v1:train")
    trainer = GRPOTrainer(model, reward_funcs=episode_reward, args=GRPOConfig(...),
                          train_dataset=Dataset.from_list(rows),
                          rollout_func=LocalforceRollout(url, admin_key=key))

Each prompt the trainer hands the rollout carries a task idx; the rollout plays one localforce
episode per prompt (GRPO's group of a task is its `num_generations` copies, each its own episode
and sandbox): the policy (the trainer's model by default, or any callable, e.g. a scripted one
in tests) writes tool calls, the environment answers them, until `submit_answer` (graded by the
server) or the step or token budget runs out. It returns the token ids TRL trains on, the
env_mask that keeps tool results out of the loss, and the server's reward as an extra field
that `episode_reward` hands to the trainer. Needs `trl` and `transformers` (not dependencies of
the client: install them with the trainer).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from localforce.control import TIMEOUT, Control
from localforce.env import ANSWER_TOOL, Env, parse_tool_call

# The key of the prompt message that names the task: TRL passes rollout_func the prompts only,
# not the dataset's other columns, so the idx rides in the message (chat templates ignore it).
TASK_KEY = "localforce_task"

SYSTEM_PROMPT = """You are an expert Salesforce agent working in a Salesforce org through its
API. Answer the user's request using the tools, which read the org (SOQL and SOSL queries,
describes and records). When you know the answer, call submit_answer with it. Give only what
is asked (an Id, a name, a month...), exactly as the org spells it; you answer once."""


def task_rows(
    url: str,
    *,
    admin_key: str,
    split: str | None = None,
    types: Sequence[str] | None = None,
    timeout: float = TIMEOUT,
) -> list[dict[str, Any]]:
    """A GRPO dataset's rows, one per task of `split`'s part (None: the server's task file), of
    `types` if given: {"prompt": [a user message carrying the idx], "task_idx", "task_type"}.
    The message's text is the task's query, as the task list gives it; the rollout plays the
    prompt its episode's reset gives (the same)."""
    control = Control(url, admin_key, timeout=timeout)
    try:
        listed = control.split_tasks(split) if split else control.tasks()
    finally:
        control.http.close()
    return [
        {
            "prompt": [
                {
                    "role": "user",
                    "content": row["query"],
                    TASK_KEY: row["idx"],
                }
            ],
            "task_idx": row["idx"],
            "task_type": row["task"],
        }
        for row in listed
        if not types or row["task"] in types
    ]


def episode_reward(episode_reward: list[float], **_: Any) -> list[float]:
    """GRPOTrainer's reward function: the server's grade of each episode, as the rollout
    returned it (0.0 for an episode that gave no answer)."""
    return [float(reward) for reward in episode_reward]


@dataclass
class Context:
    """What a policy sees of one running episode: the conversation so far (system, user, then
    assistant and tool turns), the episode's tools (OpenAI function schemas), the tokens so far
    (prompt and completion: what a token-level policy continues), the completion tokens left,
    and the episode (its id; its task's idx, type and metadata, never the answer)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    ids: list[int]
    budget: int
    episode_id: str
    task: dict[str, Any]


@dataclass
class Turn:
    """A policy's turn: a tool call {"name", "arguments"} (None: it called none, and the
    episode ends unanswered), its text, and the tokens it generated with their logprobs (None:
    the rollout renders the message with the chat template, as a scripted policy's)."""

    tool_call: dict[str, Any] | None
    content: str = ""
    ids: list[int] | None = None
    logprobs: list[float] | None = None


# A policy plays a turn of every running episode at once, so a model generates in one batch.
Policy = Callable[[list[Context]], list[Turn]]


@dataclass
class _Episode:
    env: Env
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    prompt_ids: list[int]
    episode_id: str
    task: dict[str, Any]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)
    reward: float = 0.0
    answered: bool = False
    over: bool = False


class LocalforceRollout:
    """GRPOTrainer's `rollout_func`: `rollout(prompts, trainer)` plays one episode per prompt
    and returns {"prompt_ids", "completion_ids", "logprobs", "env_mask", "episode_reward",
    "episode_id", "answered"}, a list per prompt each (logprobs None unless the policy gives
    them all). Without a trainer (tests), pass `tokenizer` and `max_completion_length`.

    An episode ends at its answer (`submit_answer`, or, with `answer_with_text`, a turn that
    calls no tool: its text is submitted), at `max_steps` tool calls, or when the next turn
    would pass the completion budget; an unanswered episode's reward is 0.0. Tool results are
    cut to `max_observation_chars`. `run` and `agent` label the server's results."""

    def __init__(
        self,
        url: str,
        *,
        admin_key: str,
        split: str | None = None,
        policy: Policy | None = None,
        tokenizer: Any = None,
        max_steps: int = 20,
        max_completion_length: int | None = None,
        max_observation_chars: int = 8000,
        answer_with_text: bool = True,
        system_prompt: str = SYSTEM_PROMPT,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        run: str | None = None,
        agent: str | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        self.env_options: dict[str, Any] = {
            "split": split,
            "admin_key": admin_key,
            "run": run,
            "agent": agent,
            "timeout": timeout,
        }
        self.url = url
        self.policy = policy
        self.tokenizer = tokenizer
        self.max_steps = max_steps
        self.max_completion_length = max_completion_length
        self.max_observation_chars = max_observation_chars
        self.answer_with_text = answer_with_text
        self.system_prompt = system_prompt
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    def __call__(self, prompts: list[Any], trainer: Any = None) -> dict[str, list[Any] | None]:
        tokenizer = self.tokenizer or getattr(trainer, "processing_class", None)
        if tokenizer is None:
            raise ValueError("LocalforceRollout needs a tokenizer, or the trainer's")
        tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a VLM processor's own
        budget = self.max_completion_length or getattr(trainer, "max_completion_length", None)
        if budget is None:
            raise ValueError("LocalforceRollout needs max_completion_length, or the trainer's")
        kwargs = {**getattr(trainer, "chat_template_kwargs", {}), **self.chat_template_kwargs}
        chat = _Chat(tokenizer, kwargs)
        policy = self.policy or TrainerPolicy(trainer, chat)
        episodes: list[_Episode] = []
        try:
            for prompt in prompts:
                episodes.append(self._start(prompt, chat))
            # Lockstep: one policy call per turn for every running episode.
            while running := [episode for episode in episodes if not episode.over]:
                contexts = [
                    Context(
                        e.messages,
                        e.tools,
                        e.prompt_ids + e.completion_ids,
                        budget - len(e.completion_ids),
                        e.episode_id,
                        e.task,
                    )
                    for e in running
                ]
                for episode, turn in zip(running, policy(contexts), strict=True):
                    self._advance(episode, turn, chat, budget)
        finally:
            for episode in episodes:
                episode.env.close()  # its sandbox goes; its result stays on the server
        logprobs = [e.logprobs for e in episodes]
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": None if any(lp is None for lp in logprobs) else logprobs,
            "env_mask": [e.env_mask for e in episodes],  # 0: tool results, out of the loss
            "episode_reward": [e.reward for e in episodes],
            "episode_id": [e.episode_id for e in episodes],
            "answered": [e.answered for e in episodes],
        }

    def _start(self, prompt: Any, chat: _Chat) -> _Episode:
        task = _task_of(prompt)
        env = Env(self.url, max_steps=self.max_steps, **self.env_options)
        try:
            text, info = env.reset(task=task)
        except BaseException:
            env.close()
            raise
        # The task's context (today's date, the policy to apply) as the system prompt, as
        # localforce's own agents give it: the prompt alone is the user's question.
        metadata = info.get("metadata") or {}
        context = [self.system_prompt, metadata.get("required", ""), metadata.get("optional", "")]
        messages = [
            {"role": "system", "content": "\n\n".join(part for part in context if part)},
            {"role": "user", "content": text},
        ]
        tools = info["tools"]
        prompt_ids = chat.prompt(messages, tools)
        return _Episode(env, messages, tools, prompt_ids, info["episode_id"], info["task"])

    def _advance(self, episode: _Episode, turn: Turn, chat: _Chat, budget: int) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": turn.content}
        call, name = turn.tool_call, ""
        if call is not None:
            try:
                name, arguments = parse_tool_call(call)
            except ValueError:  # malformed: the environment says so, as it tells an agent
                name, arguments = str(call.get("name") or "tool"), {}
            message["tool_calls"] = [
                {"type": "function", "function": {"name": name, "arguments": arguments}}
            ]
        elif self.answer_with_text and turn.content.strip():
            # A turn that calls no tool answers with its text, as localforce's agents take it.
            call = {"name": ANSWER_TOOL, "arguments": {"response": turn.content.strip()}}
        ids = turn.ids if turn.ids is not None else chat.assistant(message)
        left = budget - len(episode.completion_ids)
        self._append(episode, ids[:left], 1, turn.logprobs)
        episode.messages.append(message)
        eos = chat.tokenizer.eos_token_id
        if call is None or len(ids) > left or (len(ids) == left and ids[-1:] != [eos]):
            episode.over = True  # no answer, or cut short by the budget: unanswered, reward 0
            return
        step = episode.env.step(call)
        if step.terminated:
            episode.over, episode.answered, episode.reward = True, True, step.reward
            return
        if step.truncated or turn.tool_call is None:
            episode.over = True  # out of steps (the last result would feed no turn)
            return
        observation = step.observation[: self.max_observation_chars]
        tool = {"role": "tool", "name": name, "content": observation}
        suffix = chat.tool(tool)
        if len(suffix) >= budget - len(episode.completion_ids):
            episode.over = True  # the result does not fit (as TRL's own tool loop does)
            return
        self._append(episode, suffix, 0, None)
        episode.messages.append(tool)

    @staticmethod
    def _append(episode: _Episode, ids: list[int], mask: int, logprobs: list[float] | None) -> None:
        episode.completion_ids += ids
        episode.env_mask += [mask] * len(ids)
        if episode.logprobs is None:
            return
        if mask == 0:
            episode.logprobs += [0.0] * len(ids)  # masked out of the loss: never read
        elif logprobs is None:
            episode.logprobs = None  # a turn without them: TRL computes its own
        else:
            episode.logprobs += list(logprobs[: len(ids)])


def _task_of(prompt: Any) -> int:
    """The task idx a prompt carries (see TASK_KEY)."""
    if isinstance(prompt, list):
        for message in prompt:
            if isinstance(message, Mapping) and message.get(TASK_KEY) is not None:
                return int(message[TASK_KEY])
    raise ValueError(
        f"a prompt carries its task as a message's {TASK_KEY!r} (see task_rows): {prompt!r}"
    )


def _training_template(tokenizer: Any) -> str | None:
    """TRL's prefix-preserving variant of the tokenizer's chat template where it needs one
    (Qwen3's drops past turns' thinking, so a turn would not extend the ones before), as
    GRPOTrainer swaps it in for its own tool loop; None: the tokenizer's own."""
    from trl.chat_template_utils import (  # type: ignore[import-not-found,unused-ignore]
        get_training_chat_template,
        is_chat_template_prefix_preserving,
    )

    if is_chat_template_prefix_preserving(tokenizer):
        return None
    template: str | None = get_training_chat_template(tokenizer)
    return template


class _Chat:
    """The tokens of each part of an episode, by the tokenizer's chat template. Turns are
    concatenated, not re-rendered: the model is trained on exactly the tokens it continued."""

    def __init__(self, tokenizer: Any, kwargs: Mapping[str, Any]) -> None:
        self.tokenizer = tokenizer
        self.kwargs = dict(kwargs)
        if "chat_template" not in self.kwargs:
            self.kwargs["chat_template"] = _training_template(tokenizer)

    def render(self, messages: list[dict[str, Any]], **options: Any) -> list[int]:
        ids = self.tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=False, **options, **self.kwargs
        )
        return list(ids)

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        return self.render(messages, tools=tools, add_generation_prompt=True)

    def _suffix(
        self, before: list[dict[str, Any]], after: list[dict[str, Any]], gen: bool
    ) -> list[int]:
        """What `after` adds to `before`, cut after the end of turn that closes `before` (as
        TRL's own tool loop cuts it: Qwen's templates put a newline after <|im_end|>)."""
        prefix = self.render(before, add_generation_prompt=not gen)
        full = self.render(before + after, add_generation_prompt=gen)
        eos = self.tokenizer.eos_token_id
        if gen and eos in prefix:
            prefix = prefix[: len(prefix) - prefix[::-1].index(eos)]
        if full[: len(prefix)] != prefix:
            raise ValueError(
                "the chat template does not render a turn as a suffix of the ones before"
            )
        return full[len(prefix) :]

    def assistant(self, message: dict[str, Any]) -> list[int]:
        """A scripted turn's tokens, as the model would write them after the generation prompt,
        up to its end-of-turn token."""
        ids = self._suffix([{"role": "user", "content": "dummy"}], [message], gen=False)
        eos = self.tokenizer.eos_token_id
        return ids[: len(ids) - ids[::-1].index(eos)] if eos in ids else ids

    def tool(self, tool: dict[str, Any]) -> list[int]:
        """A tool result's tokens and the next generation prompt, rendered after a dummy call."""
        call = {"type": "function", "function": {"name": tool["name"], "arguments": {}}}
        before: list[dict[str, Any]] = [
            {"role": "user", "content": "dummy"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
        return self._suffix(before, [tool], gen=True)


class TrainerPolicy:
    """The trainer's model as the policy: each turn of the running episodes generated in one
    left-padded batch with the trainer's generation config (as GRPOTrainer's own transformers
    path does), the tool call parsed by TRL's response parser. The tokenizer's chat template
    must be one TRL parses (Qwen, Llama 3.1, ...) or carry a `response_template`."""

    def __init__(self, trainer: Any, chat: _Chat) -> None:
        if trainer is None:
            raise ValueError("without a trainer, give LocalforceRollout a policy")
        # trl and torch come with the trainer, not the client: imported when used.
        from trl.chat_template_utils import (  # type: ignore[import-not-found,unused-ignore]
            add_response_schema,
        )

        self.trainer = trainer
        self.chat = chat
        tokenizer = chat.tokenizer
        if not (
            getattr(tokenizer, "response_template", None)
            or getattr(tokenizer, "response_schema", None)
        ):
            add_response_schema(tokenizer)  # ValueError: a template TRL cannot parse

    def __call__(self, contexts: list[Context]) -> list[Turn]:
        import torch  # type: ignore[import-not-found,unused-ignore]
        from trl.chat_template_utils import (  # type: ignore[import-not-found,unused-ignore]
            parse_response,
        )
        from trl.models.utils import (  # type: ignore[import-not-found,unused-ignore]
            unwrap_model_for_generation,
        )

        trainer, tokenizer = self.trainer, self.chat.tokenizer
        width = max(len(context.ids) for context in contexts)
        pad = tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(c.ids)) + c.ids for c in contexts])
        mask = torch.tensor([[0] * (width - len(c.ids)) + [1] * len(c.ids) for c in contexts])
        device = trainer.accelerator.device
        config = copy.deepcopy(trainer.generation_config)  # the budget, not the trainer's max
        config.max_new_tokens = max(context.budget for context in contexts)
        with (
            unwrap_model_for_generation(
                trainer.model_wrapped,
                trainer.accelerator,
                gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                generation_kwargs=trainer.generation_kwargs,
            ) as model,
            torch.no_grad(),
        ):
            out = model.generate(
                input_ids=ids.to(device),
                attention_mask=mask.to(device),
                generation_config=config,
            )
        eos = set(trainer.eos_token_ids)
        turns = []
        for context, row in zip(contexts, out[:, width:].tolist(), strict=True):
            end = next((i + 1 for i, token in enumerate(row) if token in eos), len(row))
            new = row[:end]
            parsed = parse_response(tokenizer, new, prefix=context.ids, tools=context.tools)
            calls = parsed.get("tool_calls") or []
            call = calls[0]["function"] if calls else None  # one call a turn: the first
            turns.append(Turn(call, parsed.get("content") or "", new, None))
        return turns
