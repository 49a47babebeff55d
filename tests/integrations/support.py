"""A tiny model that has memorised the reference replies of a few dataset rows, built offline.

An untrained tiny model writes noise, which every verifier scores 0: a test comparing TRL's
rewards with our verdicts would then compare zeros with zeros. A model overfitted on the
reference replies of the very rows it is trained on writes them back often, and noise or near
misses otherwise, so a GRPO batch holds correct and incorrect completions alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rlvr.integrations.columns import decode_task


def reference_replies(env_id: str, rows: Sequence[Mapping[str, Any]], **env_kwargs: Any) -> list:
    env = gym.make(env_id, **env_kwargs).unwrapped
    try:
        return [env.judge.reference_reply(decode_task(row)) for row in rows]
    finally:
        env.close()


def overfit_tiny(
    env_id: str, rows: Sequence[Mapping[str, Any]], folder: Path, *, steps: int = 200, **env_kwargs
) -> Path:
    """A tiny Qwen2 (tokenizer trained on the rows' text) after `steps` supervised steps on
    the rows' prompts and reference replies; saved to `folder`."""
    import torch

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.tiny import TinyModelConfig, _supervised_loss, build_model, train_tokenizer

    replies = reference_replies(env_id, rows, **env_kwargs)
    prompts = [list(row["prompt"]) for row in rows]
    corpus = [m["content"] for prompt in prompts for m in prompt] + replies
    config = TinyModelConfig(hidden_size=64, intermediate_size=128, layers=2, max_positions=1024)
    tokenizer = train_tokenizer(corpus, config.vocab_size)
    policy = HFPolicy(build_model(tokenizer, config, seed=0), tokenizer, seed=0)
    eos = tokenizer.eos_token_id
    examples = [
        (policy.encode_prompt(prompt), [*policy._encode(reply), eos])
        for prompt, reply in zip(prompts, replies)
    ]
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    policy.model.train()
    with torch.random.fork_rng():
        torch.manual_seed(0)
        for _ in range(steps):
            batch = [examples[i] for i in rng.permutation(len(examples))]
            loss = _supervised_loss(policy, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return policy.save(folder)
