"""GRPO on localforce episodes with TRL's GRPOTrainer: each training step plays
`num_generations` episodes of a task (the trainer's model calling the episode's tools until it
answers), rewards each with the server's grade, and updates the model.

    pip install torch trl==1.16.0 ./clients/python      # CPU or GPU torch, then trl
    python examples/trl_grpo.py --url http://127.0.0.1:8000 --admin-key KEY --steps 1

--model names a causal LM saved with save_pretrained (a directory, or a hub id where the hub is
reachable) whose chat template TRL parses tool calls of (Qwen, Llama 3.1...). Without it, the
example builds a tiny randomly initialised Qwen3-shaped model and a byte-level tokenizer with
Qwen3's chat template, offline: it learns nothing useful, but runs every part of a step.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from typing import Any

from datasets import Dataset  # type: ignore[import-not-found,unused-ignore]
from localforce.trl import LocalforceRollout, episode_reward, task_rows
from tokenizers import (  # type: ignore[import-not-found,unused-ignore]
    Tokenizer,
    decoders,
    models,
    pre_tokenizers,
)
from transformers import (  # type: ignore[import-not-found,unused-ignore]
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedTokenizerFast,
    Qwen3Config,
    Qwen3ForCausalLM,
)
from trl import GRPOConfig, GRPOTrainer  # type: ignore[import-not-found,unused-ignore]
from trl.chat_template_utils import (  # type: ignore[import-not-found,unused-ignore]
    qwen3_chat_template,
)

# Qwen3's control tokens, whole: its chat template and TRL's tool-call parser expect them.
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]


def tiny_tokenizer() -> Any:
    """A byte-level tokenizer (one token a byte, no merges: nothing to download or train) with
    Qwen3's special tokens and chat template, which TRL knows how to parse tool calls of."""
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core)
    tokenizer.add_tokens(SPECIAL, special_tokens=True)
    tokenizer.add_tokens(MARKERS)
    tokenizer.eos_token, tokenizer.pad_token = "<|im_end|>", "<|endoftext|>"
    tokenizer.chat_template = qwen3_chat_template
    tokenizer.padding_side = "left"  # as GRPOTrainer wants it
    return tokenizer


def tiny_model(tokenizer: Any, seed: int = 0) -> Any:
    """A randomly initialised two-layer Qwen3 (about 0.1M parameters) for the tokenizer."""
    import torch  # type: ignore[import-not-found,unused-ignore]

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=65536,  # byte tokens: prompts with tool schemas run long
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return Qwen3ForCausalLM(config)


def grpo_args(
    *,
    steps: int = 1,
    num_generations: int = 2,
    max_completion_length: int = 256,
    output_dir: str | None = None,
) -> Any:
    """GRPOConfig of one prompt (task) a step, `num_generations` episodes of it."""
    return GRPOConfig(
        output_dir=output_dir or tempfile.mkdtemp(prefix="localforce-grpo-"),
        max_steps=steps,
        per_device_train_batch_size=num_generations,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=not _has_gpu(),
        bf16=False,
        beta=0.0,  # no reference model: half the forward passes
    )


def trainer_for(
    url: str,
    admin_key: str,
    *,
    model: Any,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    rollout: LocalforceRollout | None = None,
    steps: int = 1,
    num_generations: int = 2,
    max_completion_length: int = 256,
    output_dir: str | None = None,
) -> Any:
    """A GRPOTrainer of one prompt (task) a step, `num_generations` episodes of it."""
    args = grpo_args(
        steps=steps,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        output_dir=output_dir,
    )
    return GRPOTrainer(
        model=model,
        reward_funcs=episode_reward,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        rollout_func=rollout or LocalforceRollout(url, admin_key=admin_key, max_steps=10),
    )


def _has_gpu() -> bool:
    import torch  # type: ignore[import-not-found,unused-ignore]

    return bool(torch.cuda.is_available())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--admin-key", default=os.environ.get("LOCALFORCE_ADMIN_KEY"))
    parser.add_argument("--split", default=None, help="a split's part (default: the task file)")
    parser.add_argument("--types", nargs="*", default=None, help="task types to train on")
    parser.add_argument("--model", default=None, help="a causal LM (default: a tiny random one)")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--num-generations", type=int, default=2)
    parser.add_argument("--max-completion-length", type=int, default=256)
    parser.add_argument("--max-steps-per-episode", type=int, default=10)
    args = parser.parse_args()
    if not args.admin_key:
        parser.error("--admin-key (or LOCALFORCE_ADMIN_KEY) is needed to start episodes")
    if args.model:
        tokenizer = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model)
    else:
        tokenizer = tiny_tokenizer()
        model = tiny_model(tokenizer)
    rows = task_rows(args.url, admin_key=args.admin_key, split=args.split, types=args.types)
    rollout = LocalforceRollout(
        args.url,
        admin_key=args.admin_key,
        split=args.split,
        max_steps=args.max_steps_per_episode,
        run=f"grpo-{int(time.time())}",
        agent=args.model or "tiny-random-qwen3",
    )
    trainer = trainer_for(
        args.url,
        args.admin_key,
        model=model,
        tokenizer=tokenizer,
        rows=rows,
        rollout=rollout,
        steps=args.steps,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
    )
    started = time.monotonic()
    trainer.train()
    print(f"{args.steps} GRPO step(s) in {time.monotonic() - started:.1f}s")
    for record in trainer.state.log_history:
        if "loss" in record:
            print({key: record.get(key) for key in ("step", "loss", "reward", "reward_std")})


if __name__ == "__main__":
    main()
