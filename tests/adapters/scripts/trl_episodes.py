"""localforce.trl against the live server and the real trl 1.16 (CPU, scripted policies).

A: the rollout function alone, 2 prompts (task 18 answered right, task 6 wrong): structure as
   GRPOTrainer._generate consumes it, rewards 1.0 / 0.0, one server result per episode.
B: one GRPOTrainer step, tiny random Qwen3, scripted policy (group of 2: right + wrong).
C: one GRPOTrainer step, tiny random Qwen3, the trainer's own generation (TrainerPolicy).
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))  # trl_grpo

import torch

torch.set_num_threads(1)  # CI runs beside us: keep the CPU modest

import localforce  # noqa: E402
from datasets import Dataset  # noqa: E402
from localforce.trl import (  # noqa: E402
    TASK_KEY,
    Context,
    LocalforceRollout,
    Turn,
    episode_reward,
    task_rows,
)
from trl_grpo import tiny_model, tiny_tokenizer, trainer_for  # noqa: E402

URL, KEY = os.environ["LOCALFORCE_URL"], os.environ["LOCALFORCE_ADMIN_KEY"]
ANSWERS = {
    int(t["idx"]): t["answer"]
    for t in json.loads(Path(os.environ["LOCALFORCE_ANSWERS"]).read_text(encoding="utf-8"))
}
WRONG = "005000000000000AAA"
RUN = f"trl-test-{uuid.uuid4().hex[:8]}"
checks: list[tuple[str, bool]] = []


def check(name: str, ok: bool) -> None:
    checks.append((name, bool(ok)))
    print(("PASS " if ok else "FAIL ") + name)


def scripted(answer_for) -> callable:
    """One SOQL query, then submit_answer(answer_for(context))."""

    def policy(contexts: list[Context]) -> list[Turn]:
        turns = []
        for c in contexts:
            if not any(m["role"] == "tool" for m in c.messages):
                query = {"query": "SELECT Id, Name FROM User LIMIT 2"}
                turns.append(Turn({"name": "soql_query", "arguments": query}))
            else:
                response = {"response": answer_for(c)}
                turns.append(Turn({"name": "submit_answer", "arguments": json.dumps(response)}))
        return turns

    return policy


def rows_for(*idxs: int) -> list[dict]:
    rows = {row["task_idx"]: row for row in task_rows(URL, admin_key=KEY)}
    return [rows[i] for i in idxs]


def part_a(tokenizer) -> None:
    print("== A: rollout function, scripted policy, 2 prompts")
    dataset = Dataset.from_list(rows_for(18, 6))  # through datasets, as the trainer reads rows
    prompts = [dataset[i]["prompt"] for i in range(len(dataset))]
    check("the task idx survives the dataset", [p[0][TASK_KEY] for p in prompts] == [18, 6])
    right = {18: ANSWERS[18], 6: WRONG}
    rollout = LocalforceRollout(
        URL,
        admin_key=KEY,
        policy=scripted(lambda c: right[c.task["idx"]]),
        tokenizer=tokenizer,
        max_completion_length=4096,
        max_steps=5,
        run=RUN,
        agent="scripted",
    )
    started = time.monotonic()
    out = rollout(prompts, None)
    print(f"   rollout of 2 episodes: {time.monotonic() - started:.2f}s")
    required = {"prompt_ids", "completion_ids", "logprobs"}
    check("required keys (grpo_trainer.py:2211)", required <= out.keys())
    extra = {k: v for k, v in out.items() if k not in required}
    check("extra fields", set(extra) == {"env_mask", "episode_reward", "episode_id", "answered"})
    check("one entry per prompt", all(len(out[k]) == 2 for k in out if out[k] is not None))
    ints = all(
        isinstance(ids, list) and ids and all(isinstance(t, int) for t in ids)
        for k in ("prompt_ids", "completion_ids")
        for ids in out[k]
    )
    check("prompt/completion ids are non-empty lists of ints", ints)
    check("logprobs None (scripted: TRL computes its own)", out["logprobs"] is None)
    masks_ok = all(
        len(m) == len(c) and set(m) == {0, 1}
        for m, c in zip(out["env_mask"], out["completion_ids"], strict=False)
    )
    check("env_mask aligned with completion, tool tokens 0", masks_ok)
    eos = tokenizer.eos_token_id
    check(
        "completions end with EOS (not clipped)", all(c[-1] == eos for c in out["completion_ids"])
    )
    prompt0 = tokenizer.decode(out["prompt_ids"][0])
    check(
        "prompt has the query and the tools", "tracking link" in prompt0 and "soql_query" in prompt0
    )
    completion0 = tokenizer.decode(out["completion_ids"][0])
    check(
        "completion has the call, the result, the answer",
        "<tool_call>" in completion0
        and "<tool_response>" in completion0
        and ANSWERS[18] in completion0,
    )
    model_tokens = tokenizer.decode(
        [t for t, m in zip(out["completion_ids"][0], out["env_mask"][0], strict=False) if m]
    )
    check("masked-in tokens are the policy's only", "<tool_response>" not in model_tokens)
    print("   rewards", out["episode_reward"], "answered", out["answered"])
    check("rewards 1.0 (right) and 0.0 (wrong)", out["episode_reward"] == [1.0, 0.0])
    check("reward function reads them", episode_reward(**extra, prompts=prompts) == [1.0, 0.0])
    results = localforce.Control(URL, KEY).results(run=RUN)
    counts = Counter(r["episode"] for r in results)
    check(
        "server results record each episode once",
        all(counts[e] == 1 for e in out["episode_id"]) and len(results) == 2,
    )
    by_id = {r["episode"]: r for r in results}
    check("server rewards match", [by_id[e]["reward"] for e in out["episode_id"]] == [1.0, 0.0])
    check("server results: 2 steps each", [by_id[e]["steps"] for e in out["episode_id"]] == [2, 2])
    print(
        f"   prompt tokens {[len(p) for p in out['prompt_ids']]}, "
        f"completion tokens {[len(c) for c in out['completion_ids']]}"
    )


class Spy:
    """The rollout, recording what GRPOTrainer hands it and gets back."""

    def __init__(self, rollout: LocalforceRollout) -> None:
        self.rollout, self.calls = rollout, []

    def __call__(self, prompts, trainer):
        out = self.rollout(prompts, trainer)
        self.calls.append((len(prompts), out))
        return out


def train_step(name: str, tokenizer, policy, max_completion_length: int, task: int) -> None:
    run = f"{RUN}-{name}"
    spy = Spy(
        LocalforceRollout(URL, admin_key=KEY, policy=policy, max_steps=5, run=run, agent=name)
    )
    model = tiny_model(tokenizer)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer = trainer_for(
        URL,
        KEY,
        model=model,
        tokenizer=tokenizer,
        rows=rows_for(task),
        rollout=spy,
        steps=1,
        num_generations=2,
        max_completion_length=max_completion_length,
    )
    started = time.monotonic()
    trainer.train()
    seconds = time.monotonic() - started
    log = trainer.state.log_history[0]
    print(
        f"   1 GRPO step in {seconds:.1f}s; log: "
        + json.dumps(
            {
                k: log[k]
                for k in log
                if k
                in (
                    "loss",
                    "reward",
                    "reward_std",
                    "grad_norm",
                    "completions/mean_length",
                    "rewards/episode_reward/mean",
                    "num_tokens",
                )
            }
        )
    )
    n_prompts, out = spy.calls[0]
    print(
        f"   rollout_func got {n_prompts} prompts (num_generations=2, 1 task a step); "
        f"rewards {out['episode_reward']}, answered {out['answered']}, "
        f"completion tokens {[len(c) for c in out['completion_ids']]}"
    )
    check(f"{name}: the trainer stepped once", trainer.state.global_step == 1)
    check(
        f"{name}: rollout_func called once with the group's 2 copies",
        len(spy.calls) == 1 and n_prompts == 2,
    )
    changed = any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    results = localforce.Control(URL, KEY).results(run=run)
    counts = Counter(r["episode"] for r in results)
    check(
        f"{name}: server results record each episode once",
        len(results) == 2 and all(counts[e] == 1 for e in out["episode_id"]),
    )
    return trainer, out, changed, seconds


def part_b(tokenizer) -> None:
    print("== B: one GRPOTrainer step, scripted policy (right + wrong in one group)")
    seen: dict[str, int] = {}

    def answer(c: Context) -> str:
        seen.setdefault(c.episode_id, len(seen))
        return ANSWERS[c.task["idx"]] if seen[c.episode_id] % 2 == 0 else WRONG

    trainer, out, changed, _ = train_step("scripted", tokenizer, scripted(answer), 1024, 18)
    log = trainer.state.log_history[0]
    check("B: rewards 1.0 and 0.0 in the group", sorted(out["episode_reward"]) == [0.0, 1.0])
    check("B: trainer's reward mean 0.5", abs(log.get("reward", -1) - 0.5) < 1e-6)
    check("B: the weights moved (nonzero advantage)", changed)


def part_c(tokenizer) -> None:
    print("== C: one GRPOTrainer step, the trainer's own generation (random tiny model)")
    _trainer, out, _, _ = train_step("trainer-policy", tokenizer, None, 48, 18)
    check(
        "C: completions are the model's (mask all 1, no tool turn fits)",
        all(set(m) == {1} for m in out["env_mask"]),
    )


def main() -> None:
    for _ in range(60):  # the server may still be seeding
        try:
            localforce.Control(URL, KEY).tasks()
            break
        except Exception:
            time.sleep(2)
    tokenizer = tiny_tokenizer()
    part_a(tokenizer)
    if os.environ.get("SKIP_TRAIN") != "1":
        part_b(tokenizer)
        part_c(tokenizer)
    failed = [name for name, ok in checks if not ok]
    print(f"{len(checks) - len(failed)} passed, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
